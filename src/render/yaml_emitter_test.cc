#include "render/yaml_emitter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "spec/yaml_tree.h"

namespace tau::render {
namespace {

using nlohmann::json;

// Reads YAML back with the project's reader and types plain scalars the
// way YAML 1.2's core schema does, enough for the values emitted here.
json ToJson(const spec::Node& n) {
  switch (n.kind) {
    case spec::Node::Kind::kNull: return nullptr;
    case spec::Node::Kind::kSequence: {
      json a = json::array();
      for (const auto& item : n.items) a.push_back(ToJson(item));
      return a;
    }
    case spec::Node::Kind::kMapping: {
      json o = json::object();
      for (const auto& [k, v] : n.entries) o[k.scalar] = ToJson(v);
      return o;
    }
    case spec::Node::Kind::kScalar: break;
  }
  if (n.quoted) return n.scalar;
  if (n.scalar == "true") return true;
  if (n.scalar == "false") return false;
  if (!n.scalar.empty() && n.scalar.find_first_not_of("-0123456789") == std::string::npos) {
    return std::stoll(n.scalar);
  }
  return n.scalar;
}

json RoundTrip(const json& value) {
  std::string yaml = EmitYaml(value);
  spec::Node root;
  spec::Diagnostics diags;
  EXPECT_TRUE(spec::ReadYaml(yaml, "emitted", {}, &root, &diags)) << diags.Format() << yaml;
  EXPECT_EQ(diags.Format(), "") << yaml;
  return ToJson(root);
}

TEST(YamlEmitterTest, QuotesOnlyWhatYamlWouldRetype) {
  for (const char* s : {"0", "16", "1.5", "1e3", "0x10", "true", "yes", "on", "No", "null", "~",
                        "", "-", "- x", "a: b", "a #b", "[x]", "{x}", "*x", "&x", "!x", "%x",
                        "@x", "`x", "'x", "\"x", ">", "|", "x:", " x", "x ", "\t", "1:30",
                        // YAML 1.1 timestamps: PyYAML and go-yaml read them as dates.
                        "2024-01-01", "2024-1-1 10:00:00", "2001-12-14t21:59:43.10-05:00",
                        "2001-12-14 21:59:43.10 Z"}) {
    EXPECT_TRUE(NeedsQuotes(s)) << s;
  }
  for (const char* s : {"RayJob", "batch/v1", "64Gi", "500m", "torch>=2.4.0", "kueue.x-k8s.io/queue-name",
                        "python3", "$(NODE_RANK)", "a:b", "0.0.0.0-host", "h200-141gb", "http://x",
                        "2024-01-01x", "2024-01", "v2024-01-01"}) {
    EXPECT_FALSE(NeedsQuotes(s)) << s;
  }
}

TEST(YamlEmitterTest, KubectlLayout) {
  json v = {{"kind", "Job"},
            {"spec", {{"containers", json::array({{{"name", "main"}, {"command", {"python3", "t.py"}}}})},
                      {"empty", json::object()},
                      {"none", json::array()},
                      {"cpu", "16"},
                      {"suspend", true},
                      {"replicas", 2}}}};
  EXPECT_EQ(EmitYaml(v),
            "kind: Job\n"
            "spec:\n"
            "  containers:\n"
            "  - command:\n"
            "    - python3\n"
            "    - t.py\n"
            "    name: main\n"
            "  cpu: \"16\"\n"
            "  empty: {}\n"
            "  none: []\n"
            "  replicas: 2\n"
            "  suspend: true\n");
}

TEST(YamlEmitterTest, MultiLineStringsAreLiteralBlocks) {
  json v = {{"runtimeEnvYAML", "pip:\n- torch\n"}, {"x", "a\nb"}};
  EXPECT_EQ(EmitYaml(v), "runtimeEnvYAML: |\n  pip:\n  - torch\nx: |-\n  a\n  b\n");
}

TEST(YamlEmitterTest, RoundTripsAwkwardValues) {
  json v = {{"strings", {"0", "true", "", " lead", "trail ", "a: b", "tab\there", "quote\"s",
                         "back\\slash", "line\nbreak\n", "  indented\nblock", "\x01", "ünïcode"}},
            {"nested", json::array({json::array({1, 2}), json::object(), {{"a", {{"b", "c"}}}}})},
            {"123", "numeric key"},
            {"n", -5}};
  EXPECT_EQ(RoundTrip(v), v);
}

}  // namespace
}  // namespace tau::render
