#include "spec/json_codec.h"

#include <nlohmann/json.hpp>

#include "common/digest.h"
#include "spec/fields.h"

namespace tau::spec {

using nlohmann::json;

namespace {

json Pairs(const StringPairs& pairs) {
  json out = json::object();
  for (const auto& [k, v] : pairs) out[k] = v;
  return out;
}

}  // namespace

json JobSpecToJsonValue(const JobSpec& s) {
  json retry_on = json::array();
  for (const RetryCondition& c : s.retry.on) retry_on.push_back(c.ToString());
  json j = {
      {"schema_version", s.schema_version},
      {"name", s.name},
      {"workspace", s.workspace},
      {"queue", s.queue},
      {"run",
       {{"workload_kind", WorkloadKindName(s.run.workload_kind)},
        {"entrypoint", s.run.entrypoint},
        {"args", s.run.args},
        {"launcher", LauncherName(s.run.launcher)},
        {"working_dir", s.run.working_dir},
        {"exclude", s.run.exclude}}},
      {"compute",
       {{"gpus", s.compute.gpus},
        {"workers", s.compute.workers},
        {"cpus", s.compute.cpus.ToString()},
        {"memory", s.compute.memory.ToString()},
        {"gpu_class", s.compute.gpu_class}}},
      {"runtime", {{"pip", s.runtime.pip}, {"env", Pairs(s.runtime.env)}}},
      {"checkpoint",
       {{"keep", s.checkpoint.keep},
        {"grace_period", FormatDuration(s.checkpoint.grace_period)},
        {"layout", CheckpointLayoutName(s.checkpoint.layout)},
        {"include", s.checkpoint.include}}},
      {"retry",
       {{"max_restarts", s.retry.max_restarts},
        {"on", retry_on},
        {"backoff", FormatDuration(s.retry.backoff)},
        {"max_backoff", FormatDuration(s.retry.max_backoff)}}},
      {"limits", json::object()},
      {"experiment", {{"tags", Pairs(s.experiment.tags)}}},
      {"depends_on", s.depends_on},
  };
  if (!s.priority.empty()) j["priority"] = s.priority;
  if (s.run.launcher == Launcher::kTorchrun) {
    j["compute"]["processes_per_worker"] = s.compute.processes_per_worker;
  }
  if (!s.runtime.image.empty()) j["runtime"]["image"] = s.runtime.image;
  if (!s.runtime.env_from_file.empty()) j["runtime"]["env_from_file"] = s.runtime.env_from_file;
  if (s.limits.max_runtime) j["limits"]["max_runtime"] = FormatDuration(*s.limits.max_runtime);
  if (!s.experiment.project.empty()) j["experiment"]["project"] = s.experiment.project;
  return j;
}

std::string JobSpecToJson(const JobSpec& spec, int indent) {
  return JobSpecToJsonValue(spec).dump(indent);
}

std::string JobSpecSha256(const JobSpec& spec) { return Sha256Hex(JobSpecToJson(spec)); }

namespace {

// No NUL: a process's arguments, environment and names end at the first.
constexpr char kNoNulPattern[] = "^[^\\u0000]*$";

// A Kubernetes quantity greater than zero, as a string: the mantissa holds
// a non-zero digit.
constexpr char kPositiveQuantityPattern[] =
    "^[+]?(?=[0-9.]*[1-9])([0-9]+(\\.[0-9]*)?|\\.[0-9]+)"
    "(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$";
// A memory size greater than zero that is a whole number of bytes, as a
// string: an integer with an optional unit or non-negative exponent, a
// multiple of 1000 in milli-units, or a fraction with a unit of k/Ki or
// more (the decoder also checks such a fraction comes out whole).
constexpr char kMemoryPattern[] =
    "^[+]?(?=[0-9.]*[1-9])([0-9]+(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+]?[0-9]+)?"
    "|[0-9]*000m"
    "|([0-9]+\\.[0-9]*|\\.[0-9]+)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei))$";
// What ParseDuration reads: "0", or numbers each with a unit.
constexpr char kDurationPattern[] = "^[+]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ms|s|m|h|d))+)$";
constexpr char kPositiveDurationPattern[] = "^[+]?(?=.*[1-9])(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ms|s|m|h|d))+$";

// The schema of one field, as strict as the decoder wherever JSON Schema can
// say it. What it cannot (rules between fields, a memory size that is not a
// whole number of bytes) is left to `tau validate`.
json FieldSchema(const FieldDoc& f) {
  json s;
  const std::string path(f.path);
  switch (f.type) {
    case FieldType::kObject: s = {{"type", "object"}, {"additionalProperties", false}}; break;
    case FieldType::kInteger:
      s = {{"type", "integer"}, {"minimum", f.minimum}, {"maximum", f.maximum}};
      break;
    case FieldType::kString:
      s = {{"type", "string"}, {"minLength", 1}, {"pattern", f.pattern.empty() ? kNoNulPattern : f.pattern}};
      // DNS-1123 subdomains are at most 253 characters.
      if (path == "queue" || path == "priority") s["maxLength"] = 253;
      break;
    case FieldType::kQuantity: {
      // A plain number is a quantity of CPUs, but never of memory: the
      // decoder refuses `memory: 64` (it would mean bytes).
      s = path == "compute.memory"
              ? json{{"type", "string"}, {"pattern", kMemoryPattern}}
              : json{{"anyOf", json::array({json{{"type", "number"}, {"exclusiveMinimum", 0}},
                                            json{{"type", "string"}, {"pattern", kPositiveQuantityPattern}}})}};
      break;
    }
    case FieldType::kDuration:
      // limits.max_runtime must be longer than zero: a digit other than 0.
      s = path == "limits.max_runtime"
              ? json{{"type", "string"}, {"pattern", kPositiveDurationPattern}}
              : json{{"anyOf", json::array({json{{"type", "string"}, {"pattern", kDurationPattern}},
                                            json{{"const", 0}}})}};
      break;
    case FieldType::kEnum: s = {{"type", "string"}, {"enum", f.values}}; break;
    case FieldType::kStringList: {
      json item = {{"type", {"string", "number", "boolean"}}, {"pattern", kNoNulPattern}};
      if (!f.pattern.empty()) item = {{"type", "string"}, {"pattern", f.pattern}};
      if (path == "run.exclude") item["minLength"] = 1;
      if (path == "runtime.pip") item["pattern"] = "^[^-]";  // not empty, not a pip option
      s = {{"type", "array"}, {"items", item}};
      break;
    }
    case FieldType::kStringMap:
      s = {{"type", "object"},
           {"additionalProperties", {{"type", {"string", "number", "boolean", "null"}}, {"pattern", kNoNulPattern}}}};
      if (path == "runtime.env") {
        json reserved = json::array();
        for (std::string_view name : ReservedEnvNames()) reserved.push_back(name);
        s["propertyNames"] = {{"pattern", "^[A-Za-z_][A-Za-z0-9_]*$"},
                              {"maxLength", 255},
                              {"not", {{"anyOf", json::array({json{{"pattern", "^TAU_"}},
                                                              json{{"enum", reserved}}})}}}};
      } else if (path == "experiment.tags") {
        s["propertyNames"] = {{"minLength", 1}, {"maxLength", 63}, {"pattern", "^[^\\u0000-\\u001f\\u007f]*$"}};
      }
      break;
  }
  std::string desc(f.description);
  if (!f.default_text.empty()) desc += " Default: " + std::string(f.default_text) + ".";
  s["description"] = desc;
  return s;
}

}  // namespace

std::string JobSpecJsonSchema() {
  auto leaf_schema = [](const FieldDoc& f) { return FieldSchema(f); };

  json root = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
               {"$id", "https://taugrid.io/schemas/job-spec-v1.json"},
               {"title", "TauGrid job spec (schema_version 1)"},
               {"type", "object"},
               {"additionalProperties", false},
               {"properties", json::object()},
               {"required", json::array()}};
  for (const FieldDoc& f : AllFields()) {
    std::string path(f.path);
    json* parent = &root;
    size_t start = 0;
    size_t dot;
    while ((dot = path.find('.', start)) != std::string::npos) {
      parent = &(*parent)["properties"][path.substr(start, dot - start)];
      start = dot + 1;
    }
    std::string leaf = path.substr(start);
    (*parent)["properties"][leaf] = leaf_schema(f);
    if (f.type == FieldType::kObject) (*parent)["properties"][leaf]["properties"] = json::object();
    if (f.required) (*parent)["required"].push_back(leaf);
  }
  root["properties"]["schema_version"]["const"] = 1;
  return root.dump(2);
}

}  // namespace tau::spec
