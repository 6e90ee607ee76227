#include "generator_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace tau::bench {
namespace {

// Where a node is, for error messages: "SOURCE:LINE: PATH".
struct Where {
  std::string_view source;
  std::string path;
  Status Error(const YAML::Node& node, const std::string& what) const {
    std::string line = node.Mark().is_null() ? "" : ":" + std::to_string(node.Mark().line + 1);
    return InvalidArgumentError(std::string(source) + line + ": " + path + ": " + what);
  }
  Where At(const std::string& key) const { return {source, path.empty() ? key : path + "." + key}; }
  Where At(size_t index) const { return {source, path + "[" + std::to_string(index) + "]"}; }
};

// Fields of a mapping, each read by one function; an unknown key is an
// error (the TAS ones get their own message).
using FieldReaders = std::map<std::string, std::function<Status(const YAML::Node&, const Where&)>>;

Status ReadMap(const YAML::Node& node, const Where& where, const FieldReaders& readers) {
  if (!node.IsMap()) return where.Error(node, "expected a mapping");
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    auto it = readers.find(key);
    if (it == readers.end()) {
      static const std::set<std::string> kTas = {"podCount", "tasConstraint", "tasLevel", "sliceSize",
                                                 "topology", "resourceFlavor"};
      if (kTas.count(key)) {
        return where.At(key).Error(kv.first, "topology-aware scheduling is not replayed; remove this field");
      }
      return where.At(key).Error(kv.first, "unknown field");
    }
    TAU_RETURN_IF_ERROR(it->second(kv.second, where.At(key)));
  }
  return Status::Ok();
}

Status ReadInt(const YAML::Node& node, const Where& where, int64_t min, int64_t* out) {
  if (!node.IsScalar()) return where.Error(node, "expected a whole number");
  const std::string& s = node.Scalar();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return where.Error(node, "\"" + s + "\" is not a whole number");
  }
  if (v < min) return where.Error(node, std::to_string(v) + " is below the minimum " + std::to_string(min));
  *out = v;
  return Status::Ok();
}

Status ReadString(const YAML::Node& node, const Where& where, std::string* out) {
  if (!node.IsScalar()) return where.Error(node, "expected a string");
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadQuantity(const YAML::Node& node, const Where& where, Quantity* out) {
  if (!node.IsScalar()) return where.Error(node, "expected a quantity such as 20 or 500m");
  auto q = Quantity::Parse(node.Scalar());
  if (!q.ok()) return where.Error(node, q.error().message());
  if (q->milli() < 0) return where.Error(node, "must not be negative");
  *out = *q;
  return Status::Ok();
}

Status ReadPolicy(const YAML::Node& node, const Where& where, const std::set<std::string>& allowed,
                  std::string* out) {
  TAU_RETURN_IF_ERROR(ReadString(node, where, out));
  if (!allowed.count(*out)) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return where.Error(node, "\"" + *out + "\" is not one of " + list);
  }
  return Status::Ok();
}

template <typename T>
Status ReadList(const YAML::Node& node, const Where& where, std::vector<T>* out,
                const std::function<Status(const YAML::Node&, const Where&, T*)>& read_one) {
  if (!node.IsSequence()) return where.Error(node, "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    T item;
    TAU_RETURN_IF_ERROR(read_one(node[i], where.At(i), &item));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

Status RequireName(const YAML::Node& node, const Where& where, const std::string& name) {
  if (name.empty()) return where.At("className").Error(node, "missing; every set needs a className");
  return Status::Ok();
}

Status ReadTemplate(const YAML::Node& node, const Where& where, WorkloadTemplate* t) {
  bool has_request = false;
  TAU_RETURN_IF_ERROR(ReadMap(
      node, where,
      {{"className", [&](const YAML::Node& n, const Where& w) { return ReadString(n, w, &t->class_name); }},
       {"runtimeMs", [&](const YAML::Node& n, const Where& w) { return ReadInt(n, w, 0, &t->runtime_ms); }},
       {"priority", [&](const YAML::Node& n, const Where& w) { return ReadInt(n, w, INT32_MIN, &t->priority); }},
       {"request", [&](const YAML::Node& n, const Where& w) {
          has_request = true;
          return ReadQuantity(n, w, &t->request);
        }}}));
  TAU_RETURN_IF_ERROR(RequireName(node, where, t->class_name));
  if (!has_request) return where.At("request").Error(node, "missing; the CPU a workload requests");
  return Status::Ok();
}

Status ReadWorkloadsSet(const YAML::Node& node, const Where& where, WorkloadsSet* s) {
  return ReadMap(
      node, where,
      {{"count", [&](const YAML::Node& n, const Where& w) { return ReadInt(n, w, 0, &s->count); }},
       {"creationIntervalMs",
        [&](const YAML::Node& n, const Where& w) { return ReadInt(n, w, 0, &s->creation_interval_ms); }},
       {"workloads", [&](const YAML::Node& n, const Where& w) {
          return ReadList<WorkloadTemplate>(n, w, &s->workloads, ReadTemplate);
        }}});
}

Status ReadQueuesSet(const YAML::Node& node, const Where& where, QueuesSet* q) {
  static const std::set<std::string> kReclaim = {"Never", "LowerPriority", "Any"};
  static const std::set<std::string> kWithin = {"Never", "LowerPriority", "LowerOrNewerEqualPriority"};
  bool has_nominal = false;
  TAU_RETURN_IF_ERROR(ReadMap(
      node, where,
      {{"className", [&](const YAML::Node& n, const Where& w) { return ReadString(n, w, &q->class_name); }},
       {"count", [&](const YAML::Node& n, const Where& w) { return ReadInt(n, w, 0, &q->count); }},
       {"nominalQuota",
        [&](const YAML::Node& n, const Where& w) {
          has_nominal = true;
          return ReadQuantity(n, w, &q->nominal_quota);
        }},
       {"borrowingLimit",
        [&](const YAML::Node& n, const Where& w) {
          if (n.IsScalar() && n.Scalar().empty()) return Status::Ok();  // as Kueue's generator: no limit
          Quantity limit;
          TAU_RETURN_IF_ERROR(ReadQuantity(n, w, &limit));
          q->borrowing_limit = limit;
          return Status::Ok();
        }},
       {"reclaimWithinCohort",
        [&](const YAML::Node& n, const Where& w) { return ReadPolicy(n, w, kReclaim, &q->reclaim_within_cohort); }},
       {"withinClusterQueue",
        [&](const YAML::Node& n, const Where& w) { return ReadPolicy(n, w, kWithin, &q->within_cluster_queue); }},
       {"workloadsSets", [&](const YAML::Node& n, const Where& w) {
          return ReadList<WorkloadsSet>(n, w, &q->workloads_sets, ReadWorkloadsSet);
        }}}));
  TAU_RETURN_IF_ERROR(RequireName(node, where, q->class_name));
  if (!has_nominal) return where.At("nominalQuota").Error(node, "missing; the CPU quota of each ClusterQueue");
  return Status::Ok();
}

Status ReadCohortSet(const YAML::Node& node, const Where& where, CohortSet* c) {
  TAU_RETURN_IF_ERROR(ReadMap(
      node, where,
      {{"className", [&](const YAML::Node& n, const Where& w) { return ReadString(n, w, &c->class_name); }},
       {"count", [&](const YAML::Node& n, const Where& w) { return ReadInt(n, w, 0, &c->count); }},
       {"queuesSets", [&](const YAML::Node& n, const Where& w) {
          return ReadList<QueuesSet>(n, w, &c->queues_sets, ReadQueuesSet);
        }}}));
  return RequireName(node, where, c->class_name);
}

}  // namespace

Result<GeneratorConfig> ParseGeneratorConfig(std::string_view text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string(source) + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  GeneratorConfig config;
  Where where{source, ""};
  try {  // yaml-cpp throws on odd shapes (a mapping as a key); none escapes
    TAU_RETURN_IF_ERROR(ReadMap(root, where,
                                {{"cohorts", [&](const YAML::Node& n, const Where& w) {
                                    return ReadList<CohortSet>(n, w, &config.cohorts, ReadCohortSet);
                                  }}}));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string(source) + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (config.cohorts.empty()) {
    return InvalidArgumentError(std::string(source) + ": cohorts: the config must contain at least one cohort");
  }
  return config;
}

Result<GeneratorConfig> LoadGeneratorConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return ParseGeneratorConfig(text.str(), path);
}

}  // namespace tau::bench
