#include "cli/capsule_diff.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace tau::cli {
using nlohmann::json;

void FlattenJson(const json& value, const std::string& prefix, std::vector<std::pair<std::string, std::string>>* out) {
  if (value.is_object()) {
    if (value.empty()) out->emplace_back(prefix, "{}");
    for (auto it = value.begin(); it != value.end(); ++it) {
      FlattenJson(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else if (value.is_array()) {
    if (value.empty()) out->emplace_back(prefix, "[]");
    for (size_t i = 0; i < value.size(); ++i) FlattenJson(value[i], fmt::format("{}[{}]", prefix, i), out);
  } else {
    out->emplace_back(prefix, value.is_string() ? value.get<std::string>() : value.dump());
  }
}

namespace {

std::map<std::string, std::string> Flat(const json& value, const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!value.is_null()) FlattenJson(value, prefix, &pairs);
  return {pairs.begin(), pairs.end()};
}

// One line: a multi-line value (a git diff) shows as its line count.
std::string Short(const std::string& s) {
  if (s.find('\n') != std::string::npos) {
    return fmt::format("<{} lines>", std::count(s.begin(), s.end(), '\n') + (s.back() == '\n' ? 0 : 1));
  }
  return ShortenUtf8(s, 60);
}

// "  KEY: A -> B" lines for keys whose values differ.
void DiffMaps(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b,
              std::vector<std::string>* lines) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  for (const std::string& k : keys) {
    auto ia = a.find(k);
    auto ib = b.find(k);
    if (ia == a.end()) lines->push_back(fmt::format("  + {}: {}", k, Short(ib->second)));
    else if (ib == b.end()) lines->push_back(fmt::format("  - {}: {}", k, Short(ia->second)));
    else if (ia->second != ib->second) lines->push_back(fmt::format("  ~ {}: {} -> {}", k, Short(ia->second), Short(ib->second)));
  }
}

void Section(const std::string& title, const std::vector<std::string>& body, std::vector<std::string>* out) {
  if (body.empty()) return;
  out->push_back(title + ":");
  out->insert(out->end(), body.begin(), body.end());
}

json At(const json& j, const std::string& key) { return j.is_object() && j.contains(key) ? j[key] : json(nullptr); }

}  // namespace

std::vector<std::string> DiffCapsules(const json& a, const json& b) {
  std::vector<std::string> out;
  std::vector<std::string> spec;
  json spec_a = At(a, "spec"), spec_b = At(b, "spec");
  DiffMaps(Flat(spec_a, ""), Flat(spec_b, ""), &spec);
  Section("spec", spec, &out);

  std::vector<std::string> code;
  if (At(At(a, "code"), "snapshot") != At(At(b, "code"), "snapshot")) {
    std::map<std::string, std::string> fa, fb;
    for (const json& f : At(At(a, "code"), "files")) fa[f.value("path", "")] = f.value("sha256", "");
    for (const json& f : At(At(b, "code"), "files")) fb[f.value("path", "")] = f.value("sha256", "");
    for (const auto& [path, digest] : fb) {
      auto it = fa.find(path);
      if (it == fa.end()) code.push_back("  + " + path);
      else if (it->second != digest) code.push_back("  ~ " + path);
    }
    for (const auto& [path, digest] : fa) {
      if (!fb.count(path)) code.push_back("  - " + path);
    }
    if (code.empty()) code.push_back("  the snapshots differ only in file modes or folders");
  }
  Section("code", code, &out);

  std::vector<std::string> git;
  DiffMaps(Flat(At(a, "git"), ""), Flat(At(b, "git"), ""), &git);
  Section("git", git, &out);

  std::vector<std::string> env;
  DiffMaps(Flat(At(a, "environment"), ""), Flat(At(b, "environment"), ""), &env);
  Section("environment", env, &out);

  std::vector<std::string> python;
  if (At(At(a, "host"), "python3") != At(At(b, "host"), "python3")) {
    python.push_back(fmt::format("  ~ python3: {} -> {}", At(At(a, "host"), "python3").dump(),
                                 At(At(b, "host"), "python3").dump()));
  }
  if (At(At(a, "ray"), "version") != At(At(b, "ray"), "version")) {
    python.push_back(fmt::format("  ~ ray: {} -> {}", At(At(a, "ray"), "version").dump(),
                                 At(At(b, "ray"), "version").dump()));
  }
  std::set<std::string> pa, pb;
  for (const json& p : At(a, "pip_freeze")) pa.insert(p.get<std::string>());
  for (const json& p : At(b, "pip_freeze")) pb.insert(p.get<std::string>());
  for (const auto& p : pa) {
    if (!pb.count(p)) python.push_back("  - " + p);
  }
  for (const auto& p : pb) {
    if (!pa.count(p)) python.push_back("  + " + p);
  }
  Section("python", python, &out);

  std::vector<std::string> host;
  json ha = At(a, "host"), hb = At(b, "host");
  if (ha.is_object()) ha.erase("python3");
  if (hb.is_object()) hb.erase("python3");
  DiffMaps(Flat(ha, ""), Flat(hb, ""), &host);
  Section("host", host, &out);
  return out;
}

}  // namespace tau::cli
