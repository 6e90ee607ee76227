// Kueue conformance: each tests/conformance/kueue/*.yaml file is one
// scenario taken from an upstream Kueue test and written in Kueue's own
// vocabulary, run against the embedded admission engine. The format is in
// docs/development.md#kueue-conformance-scenarios; every file is one test.
//
// A file is a multi-document YAML: the first document is the scenario
// (kind: Scenario), the others are Kueue objects as `tau admin apply`
// takes them (ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
// WorkloadPriorityClass, Configuration).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/quantity.h"
#include "render/kueue_config.h"
#include "sched/admission_engine.h"
#include "spec/yaml_tree.h"

namespace tau {
namespace {

namespace fs = std::filesystem;
using spec::Node;

struct WorkloadSpec {
  sched::Workload workload;
  std::string line;  // where it is written, for messages
  // A pending workload requeued after an eviction whose backoff ends this
  // many seconds after the pass (Kueue's requeueState.requeueAt); 0: none.
  int64_t backoff_seconds = 0;
};

struct Scenario {
  std::string upstream;
  std::vector<WorkloadSpec> admitted, pending;
  std::vector<std::string> expect_admitted;
  std::map<std::string, std::string> expect_preempted;             // victim -> reason
  std::map<std::string, std::map<std::string, std::string>> expect_flavors;  // workload -> resource -> flavor
  std::map<std::string, std::string> expect_pending;               // workload -> reason
  std::vector<std::string> expect_refused;  // pending workloads refused at submission (can never fit)
  // Where the engine knowingly differs from Kueue: the expectations are
  // Kueue's, and the scenario passes only while the engine does NOT meet
  // them (so the marker is dropped once it does).
  std::string expect_deviation;
  sched::KueueConfig config;
};

fs::path ScenarioDir() { return fs::path(TAU_SOURCE_DIR) / "tests" / "conformance" / "kueue"; }

std::vector<std::string> ScenarioNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ScenarioDir(), ec)) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string Where(const Node& n) { return std::to_string(n.location.line) + ":" + std::to_string(n.location.column); }

// Reads `text` into `out`; returns "" or the first problem, positioned.
std::string Parse(const std::string& text, const std::string& file, Scenario* out) {
  // The scenario is everything before the first "---" line; the objects
  // follow, read by the same decoder as tau admin apply, with the
  // scenario's lines blanked so positions stay those of the file.
  size_t split = 0;
  int scenario_lines = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (text.compare(pos, end - pos, "---") == 0 && pos > 0) {
      split = pos;
      break;
    }
    ++scenario_lines;
    pos = end + 1;
  }
  if (split == 0) return file + ": expected the scenario, a line \"---\", then the Kueue objects";
  spec::Diagnostics diags;
  Node root;
  if (!spec::ReadYaml(text.substr(0, split), file, {}, &root, &diags)) return diags.Format();
  render::DecodedKueueConfig decoded;
  if (!render::DecodeKueueManifests(std::string(static_cast<size_t>(scenario_lines), '\n') + text.substr(split), file,
                                    &decoded, &diags)) {
    return diags.Format();
  }
  out->config = decoded.config;
  if (!root.IsMapping() || !root.Find("kind") || root.Find("kind")->scalar != "Scenario") {
    return file + ":1:1: the first document must be kind: Scenario";
  }
  for (const auto& e : root.entries) {
    static const std::vector<std::string> kKeys = {"kind",    "upstream", "description",     "admitted",
                                                   "pending", "expect",   "expect_deviation"};
    if (std::find(kKeys.begin(), kKeys.end(), e.key.scalar) == kKeys.end()) {
      return file + ":" + Where(e.key) + ": unknown field \"" + e.key.scalar + "\"";
    }
  }
  const Node* upstream = root.Find("upstream");
  if (!upstream || !upstream->IsScalar() || upstream->scalar.empty()) {
    return file + ": \"upstream\" must name the Kueue test the scenario comes from";
  }
  out->upstream = upstream->scalar;
  if (const Node* deviation = root.Find("expect_deviation")) {
    if (!deviation->IsScalar() || deviation->scalar.empty()) {
      return file + ":" + Where(*deviation) + ": expect_deviation must say how the engine differs from Kueue";
    }
    out->expect_deviation = deviation->scalar;
  }
  int64_t seq = 0;
  auto workloads = [&](const char* key, std::vector<WorkloadSpec>* list) -> std::string {
    const Node* n = root.Find(key);
    if (!n) return "";
    if (!n->IsSequence()) return file + ":" + Where(*n) + ": " + key + ": expected a list";
    for (const Node& item : n->items) {
      const Node* name = item.Find("name");
      const Node* queue = item.Find("queue");
      const Node* requests = item.Find("requests");
      if (!item.IsMapping() || !name || !queue || !requests || !requests->IsMapping()) {
        return file + ":" + Where(item) + ": a workload needs name, queue and requests";
      }
      for (const auto& e : item.entries) {
        static const std::vector<std::string> kKeys = {"name",        "queue",        "namespace",      "priority",
                                                       "count",       "requests",     "tolerations",    "nodeSelector",
                                                       "backoffSeconds", "created"};
        if (std::find(kKeys.begin(), kKeys.end(), e.key.scalar) == kKeys.end()) {
          return file + ":" + Where(e.key) + ": unknown workload field \"" + e.key.scalar + "\"";
        }
      }
      WorkloadSpec w;
      w.line = file + ":" + Where(item);
      w.workload.id = name->scalar;
      w.workload.local_queue = queue->scalar;
      w.workload.namespace_ = item.Find("namespace") ? item.Find("namespace")->scalar : "default";
      w.workload.priority = item.Find("priority") ? std::atoll(item.Find("priority")->scalar.c_str()) : 0;
      w.workload.count = item.Find("count") ? std::atoll(item.Find("count")->scalar.c_str()) : 1;
      // Creation order: the order written, unless `created` places the
      // workload (a smaller number is older; Kueue's creationTimestamp).
      ++seq;
      w.workload.seq = item.Find("created") ? std::atoll(item.Find("created")->scalar.c_str()) : seq;
      for (const auto& r : requests->entries) {
        auto q = Quantity::Parse(r.value.scalar);
        if (!q.ok()) return file + ":" + Where(r.value) + ": " + q.status().message();
        w.workload.per_pod[r.key.scalar] = q->milli();
      }
      // The pods' tolerations and node selector, as in a pod template.
      if (const Node* tols = item.Find("tolerations")) {
        if (!tols->IsSequence()) return file + ":" + Where(*tols) + ": tolerations: expected a list";
        for (const Node& t : tols->items) {
          auto field = [&](const char* key) { return t.Find(key) ? t.Find(key)->scalar : std::string(); };
          sched::Toleration tol{field("key"), field("operator"), field("value"), field("effect")};
          if (tol.op.empty()) {
            tol.op = "Equal";
          }
          w.workload.tolerations.push_back(std::move(tol));
        }
      }
      if (const Node* sel = item.Find("nodeSelector")) {
        if (!sel->IsMapping()) return file + ":" + Where(*sel) + ": nodeSelector: expected a mapping";
        for (const auto& e : sel->entries) w.workload.node_selector[e.key.scalar] = e.value.scalar;
      }
      if (const Node* b = item.Find("backoffSeconds")) {
        w.backoff_seconds = std::atoll(b->scalar.c_str());
      }
      list->push_back(std::move(w));
    }
    return "";
  };
  if (auto e = workloads("admitted", &out->admitted); !e.empty()) return e;
  if (auto e = workloads("pending", &out->pending); !e.empty()) return e;
  const Node* expect = root.Find("expect");
  if (!expect || !expect->IsMapping()) return file + ": \"expect\" is required";
  for (const auto& e : expect->entries) {
    const std::string& key = e.key.scalar;
    if (key == "admitted" && e.value.IsSequence()) {
      for (const Node& n : e.value.items) out->expect_admitted.push_back(n.scalar);
    } else if (key == "refused" && e.value.IsSequence()) {
      for (const Node& n : e.value.items) out->expect_refused.push_back(n.scalar);
    } else if (key == "admitted" && e.value.IsNull()) {
    } else if ((key == "preempted" || key == "pending") && (e.value.IsMapping() || e.value.IsNull())) {
      for (const auto& m : e.value.entries) (key == "preempted" ? out->expect_preempted : out->expect_pending)[m.key.scalar] = m.value.scalar;
    } else if (key == "flavors" && e.value.IsMapping()) {
      for (const auto& m : e.value.entries) {
        for (const auto& r : m.value.entries) out->expect_flavors[m.key.scalar][r.key.scalar] = r.value.scalar;
      }
    } else {
      return file + ":" + Where(e.key) + ": expect." + key + " is not admitted, preempted, flavors, pending or refused of the "
             "right shape";
    }
  }
  return "";
}

// Runs a scenario: the admitted workloads one at a time, then the pending
// ones together in one pass. Returns every way the outcome differs from
// Kueue's, in words; `setup` gets a problem with the admitted list itself.
std::vector<std::string> RunScenario(const Scenario& s, std::string* setup) {
  sched::AdmissionEngine e;
  // The admitted workloads were admitted before any queue was stopped:
  // the setup runs with every stopPolicy None, the pass with the objects
  // as written.
  sched::KueueConfig before_stop = s.config;
  for (auto& cq : before_stop.cluster_queues) cq.stop_policy = "None";
  for (auto& lq : before_stop.local_queues) lq.stop_policy = "None";
  e.Configure(before_stop);
  // The admitted workloads, one at a time in the order written (which is
  // their admission order).
  for (const WorkloadSpec& w : s.admitted) {
    if (Status st = e.Submit(w.workload); !st.ok()) {
      *setup = w.line + ": " + st.message();
      return {};
    }
    auto admitted = e.Schedule();
    auto why = e.Why(w.workload.id);
    if (!(admitted.size() == 1 && admitted[0].workload_id == w.workload.id)) {
      *setup = w.line + ": setup workload " + w.workload.id + " was not admitted" +
               (why ? ": " + why->reason + ": " + why->message : "");
      return {};
    }
    if (!e.TakeEvictions().empty()) {
      *setup = w.line + ": setting up " + w.workload.id + " preempted something";
      return {};
    }
  }
  e.Configure(s.config);
  // Then the pending ones arrive together, and one pass runs.
  std::vector<std::string> refused;
  for (const WorkloadSpec& w : s.pending) {
    if (!e.Submit(w.workload).ok()) {
      refused.push_back(w.workload.id);
    } else if (w.backoff_seconds > 0) {
      e.SetBackoff(w.workload.id, w.backoff_seconds * 1000);  // the engine's clock is at 0
    }
  }
  std::vector<std::string> admitted;
  std::map<std::string, std::map<std::string, std::string>> flavors;
  for (const sched::Admission& a : e.Schedule()) {
    admitted.push_back(a.workload_id);
    flavors[a.workload_id] = a.flavors;
  }
  std::map<std::string, std::string> preempted;
  for (const sched::Eviction& v : e.TakeEvictions()) preempted[v.victim_id] = v.reason;

  // Every way the outcome differs from Kueue's, in words.
  std::vector<std::string> mismatches;
  auto list = [](const auto& items) {
    std::string out;
    for (const auto& i : items) {
      if constexpr (std::is_convertible_v<decltype(i), std::string>) {
        out += (out.empty() ? "" : ", ") + i;
      } else {
        out += (out.empty() ? "" : ", ") + i.first + ": " + i.second;
      }
    }
    return "[" + out + "]";
  };
  if (refused != s.expect_refused) {
    mismatches.push_back("refused at submission " + list(refused) + ", Kueue " + list(s.expect_refused));
  }
  if (admitted != s.expect_admitted) {
    mismatches.push_back("admitted " + list(admitted) + ", Kueue " + list(s.expect_admitted));
  }
  if (preempted != s.expect_preempted) {
    mismatches.push_back("preempted " + list(preempted) + ", Kueue " + list(s.expect_preempted));
  }
  for (const auto& [id, want] : s.expect_flavors) {
    auto got = flavors.find(id);
    if (got == flavors.end()) {
      mismatches.push_back(id + " was expected admitted with flavors");
      continue;
    }
    for (const auto& [resource, flavor] : want) {
      if (got->second[resource] != flavor) {
        mismatches.push_back(id + " " + resource + " on flavor \"" + got->second[resource] + "\", Kueue \"" + flavor + "\"");
      }
    }
  }
  for (const auto& [id, reason] : s.expect_pending) {
    auto why = e.Why(id);
    if (!why) {
      mismatches.push_back(id + " was expected pending");
    } else if (why->reason != reason) {
      mismatches.push_back(id + " pending with " + why->reason + " (" + why->message + "), Kueue " + reason);
    }
  }
  return mismatches;
}

// The failures a scenario's outcome means: its mismatches, or, for one
// marked expect_deviation, the absence of any (the marker is stale).
std::vector<std::string> Verdict(const Scenario& s, const std::vector<std::string>& mismatches) {
  if (s.expect_deviation.empty()) {
    return mismatches;
  }
  if (!mismatches.empty()) {
    return {};
  }
  return {"marked expect_deviation (" + s.expect_deviation + ") but the engine now does what Kueue does: remove the marker"};
}

class KueueConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KueueConformanceTest, Scenario) {
  const std::string file = (ScenarioDir() / (GetParam() + ".yaml")).string();
  std::ifstream in(file);
  ASSERT_TRUE(in) << "cannot read " << file;
  std::stringstream text;
  text << in.rdbuf();
  Scenario s;
  const std::string problem = Parse(text.str(), file, &s);
  ASSERT_EQ(problem, "");
  RecordProperty("upstream", s.upstream);
  SCOPED_TRACE("upstream: " + s.upstream);
  std::string setup;
  const auto mismatches = RunScenario(s, &setup);
  ASSERT_EQ(setup, "");
  for (const std::string& f : Verdict(s, mismatches)) ADD_FAILURE() << f;
  if (!s.expect_deviation.empty()) {
    RecordProperty("deviation", s.expect_deviation);
    for (const std::string& m : mismatches) std::cout << "[ deviation ] " << GetParam() << ": " << m << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Kueue, KueueConformanceTest, ::testing::ValuesIn(ScenarioNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(KueueConformanceSuiteTest, EveryScenarioNamesItsUpstreamTestAndReads) {
  const auto names = ScenarioNames();
  ASSERT_GE(names.size(), 8u) << "scenarios in " << ScenarioDir();
  for (const auto& name : names) {
    std::ifstream in(ScenarioDir() / (name + ".yaml"));
    std::stringstream text;
    text << in.rdbuf();
    Scenario s;
    EXPECT_EQ(Parse(text.str(), name + ".yaml", &s), "");
    EXPECT_THAT(s.upstream, ::testing::HasSubstr("kueue")) << name;
  }
}

// A small scenario the engine gets right, with or without the marker.
std::string MarkedScenario(const std::string& marker) {
  return "kind: Scenario\n"
         "upstream: kubernetes-sigs/kueue (marker self-test)\n" +
         marker +
         "pending:\n"
         "- {name: w, queue: main, requests: {cpu: \"1\"}}\n"
         "expect:\n"
         "  admitted: [w]\n"
         "---\n"
         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n---\n"
         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
         "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
         "    - name: default\n      resources:\n      - {name: cpu, nominalQuota: \"2\"}\n---\n"
         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: default, name: main}\n"
         "spec: {clusterQueue: cq}\n";
}

TEST(KueueConformanceSuiteTest, DeviationMarkerFailsOnceTheEngineMatchesKueue) {
  Scenario s;
  ASSERT_EQ(Parse(MarkedScenario("expect_deviation: not admitted here\n"), "marked.yaml", &s), "");
  EXPECT_EQ(s.expect_deviation, "not admitted here");
  std::string setup;
  const auto mismatches = RunScenario(s, &setup);
  ASSERT_EQ(setup, "");
  EXPECT_TRUE(mismatches.empty());
  const auto failures = Verdict(s, mismatches);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_THAT(failures[0], ::testing::HasSubstr("remove the marker"));
}

TEST(KueueConformanceSuiteTest, DeviationMarkerPassesOnlyWhileTheOutcomeDiffers) {
  Scenario s;
  ASSERT_EQ(Parse(MarkedScenario("expect_deviation: not admitted here\n"), "marked.yaml", &s), "");
  s.expect_admitted.clear();  // Kueue's outcome, as the marked file would state it, now differs
  std::string setup;
  const auto mismatches = RunScenario(s, &setup);
  ASSERT_EQ(setup, "");
  EXPECT_EQ(mismatches, std::vector<std::string>{"admitted [w], Kueue []"});
  EXPECT_TRUE(Verdict(s, mismatches).empty());
  s.expect_deviation.clear();  // unmarked, the same mismatch is a failure
  EXPECT_EQ(Verdict(s, mismatches), mismatches);
}

TEST(KueueConformanceSuiteTest, EmptyDeviationMarkerIsRefusedWithItsPosition) {
  Scenario s;
  EXPECT_EQ(Parse(MarkedScenario("expect_deviation: \"\"\n"), "marked.yaml", &s),
            "marked.yaml:3:19: expect_deviation must say how the engine differs from Kueue");
}

TEST(KueueConformanceSuiteTest, CreatedAndNodeSelectorAreRead) {
  Scenario s;
  std::string text = MarkedScenario("");
  text.replace(text.find("queue: main,"), 12, "queue: main, created: -5, nodeSelector: {zone: a},");
  ASSERT_EQ(Parse(text, "fields.yaml", &s), "");
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].workload.seq, -5);
  EXPECT_EQ(s.pending[0].workload.node_selector, (std::map<std::string, std::string>{{"zone", "a"}}));
}

}  // namespace
}  // namespace tau
