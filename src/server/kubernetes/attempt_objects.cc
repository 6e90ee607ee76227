#include "server/kubernetes/attempt_objects.h"

#include <fmt/format.h>

#include <set>

#include "render/render.h"

namespace tau::server::kubernetes {

using nlohmann::json;

namespace {

constexpr size_t kMaxNameLength = 52;
constexpr char kSnapshotKey[] = "code.tar";

// The pod templates of a Job or RayJob.
std::vector<json*> PodTemplates(json& main) {
  std::vector<json*> out;
  if (main["kind"] == "Job") {
    out.push_back(&main["spec"]["template"]);
  } else {
    json& cluster = main["spec"]["rayClusterSpec"];
    out.push_back(&cluster["headGroupSpec"]["template"]);
    for (json& group : cluster["workerGroupSpecs"]) out.push_back(&group["template"]);
  }
  return out;
}

std::string Base64(const std::string& data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(data[i]) << 16) | (static_cast<uint8_t>(data[i + 1]) << 8) |
                       static_cast<uint8_t>(data[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < data.size()) {
    uint32_t n = static_cast<uint8_t>(data[i]) << 16;
    if (i + 1 < data.size()) n |= static_cast<uint8_t>(data[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < data.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The container's command, run after the snapshot is unpacked into the
// work folder (the image needs /bin/sh and tar).
json Unpacking(const json& command) {
  json wrapped = json::array(
      {"/bin/sh", "-c",
       fmt::format("set -e; mkdir -p {work} \"$TAU_CHECKPOINT_DIR\" \"$TAU_OUTPUT_DIR\"; "
                   "tar -xf {code}/{key} -C {work}; cd {work}; exec \"$@\"",
                   fmt::arg("work", kWorkDir), fmt::arg("code", kCodeMount), fmt::arg("key", kSnapshotKey)),
       "tau"});
  for (const json& arg : command) wrapped.push_back(arg);
  return wrapped;
}

// A Ray pod's first container: it unpacks the snapshot into the work
// folder its Ray container shares, before `ray start` (which KubeRay
// writes into the Ray container's command, so that one is left alone).
// It also makes the job's checkpoint folder on the volume.
json UnpackingInit(const json& ray_container, const std::string& checkpoint_dir) {
  return {{"name", "tau-code"},
          {"image", ray_container.value("image", "")},
          {"command", json::array({"/bin/sh", "-c",
                                   fmt::format("set -e; mkdir -p {work} {checkpoints}; tar -xf {code}/{key} -C {work}",
                                               fmt::arg("work", kWorkDir), fmt::arg("checkpoints", checkpoint_dir),
                                               fmt::arg("code", kCodeMount), fmt::arg("key", kSnapshotKey))})},
          {"volumeMounts", json::array({{{"name", "code"}, {"mountPath", kCodeMount}, {"readOnly", true}},
                                        {{"name", "work"}, {"mountPath", kWorkDir}},
                                        {{"name", "checkpoints"}, {"mountPath", kCheckpointMount}}})}};
}

bool HasEnv(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array())) {
    if (e.value("name", "") == name) return true;
  }
  return false;
}

json Metadata(const std::string& name, const std::string& namespace_, const json& labels) {
  return {{"name", name}, {"namespace", namespace_}, {"labels", labels}};
}

}  // namespace

std::string AttemptObjectName(const std::string& job_name, const std::string& job_id, int64_t attempt) {
  std::string id = job_id.starts_with("j_") ? job_id.substr(2) : job_id;
  std::string suffix = fmt::format("-{}-{}", id, attempt);
  std::string base = job_name.substr(0, kMaxNameLength > suffix.size() ? kMaxNameLength - suffix.size() : 0);
  while (!base.empty() && base.back() == '-') base.pop_back();
  std::string name = base + suffix;
  // Lower case letters, digits and '-' only (ids are base32 lower case).
  for (char& c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) c = '-';
  }
  return name;
}

std::optional<AttemptOfName> ParseAttemptObjectName(const std::string& name) {
  const size_t last = name.rfind('-');
  if (last == std::string::npos || last == 0) return std::nullopt;
  const size_t before = name.rfind('-', last - 1);
  if (before == std::string::npos) return std::nullopt;
  const std::string id = name.substr(before + 1, last - before - 1);
  const std::string number = name.substr(last + 1);
  if (id.size() != 10 || number.empty() || number.size() > 9) return std::nullopt;
  for (char c : number) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return AttemptOfName{"j_" + id, std::stoll(number)};
}

Status CheckSnapshotSize(int64_t bytes) {
  if (bytes <= kMaxSnapshotBytes) return Status::Ok();
  return InvalidArgumentError(fmt::format(
      "the code snapshot is {} bytes; the Kubernetes backend delivers it in a ConfigMap, which holds at most {} bytes "
      "of it: leave large files out (.gitignore) or put them in the image",
      bytes, kMaxSnapshotBytes));
}

Result<AttemptObjects> BuildAttemptObjects(const AttemptPlan& plan, const std::string& snapshot,
                                           const BackendSettings& settings) {
  TAU_RETURN_IF_ERROR(CheckSnapshotSize(static_cast<int64_t>(snapshot.size())));
  const spec::JobSpec& spec = plan.spec;
  const bool ray = spec.run.workload_kind == spec::WorkloadKind::kRayJob;
  AttemptObjects out;
  out.name = AttemptObjectName(spec.name, plan.job_id, plan.attempt);
  const std::string checkpoint_dir = fmt::format("{}/{}", kCheckpointMount, plan.job_id);

  render::RenderOptions options;
  options.object_name = out.name;
  options.job_id = plan.job_id;
  options.attempt = plan.attempt;
  // BaseEnv sets these four; the plan's other variables follow them.
  static const std::set<std::string> kRendered = {"TAU_JOB_ID", "TAU_JOB_NAME", "TAU_WORKSPACE", "TAU_ATTEMPT"};
  for (const std::string& kv : plan.env) {
    const size_t eq = kv.find('=');
    std::string key = kv.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (kRendered.count(key)) continue;
    if (key == "TAU_RESUME_FROM") {
      // The daemon's path of the checkpoint, as the pod sees the volume.
      const std::string name = value.substr(value.find_last_of('/') + 1);
      value = fmt::format("{}/{}", checkpoint_dir, name);
    }
    options.env.emplace_back(key, value);
  }
  options.env.emplace_back("TAU_CHECKPOINT_DIR", checkpoint_dir);
  options.env.emplace_back("TAU_OUTPUT_DIR", kOutputDir);

  std::vector<json> rendered = render::RenderObjects(spec, options);
  const json labels = {{kManagedByLabel, kManagedByValue},
                       {kJobIdLabel, plan.job_id},
                       {kAttemptLabel, std::to_string(plan.attempt)},
                       {"taugrid.io/job-name", spec.name},
                       {"taugrid.io/workspace", spec.workspace}};
  for (json& object : rendered) {
    object["metadata"]["labels"][kAttemptLabel] = std::to_string(plan.attempt);
    if (object["kind"] == "Service") {
      out.dependents.push_back(std::move(object));
    } else {
      out.main = std::move(object);
    }
  }
  const std::string code_name = out.name + "-code";
  const std::string env_name = out.name + "-env";
  for (json* pod_template : PodTemplates(out.main)) {
    for (const auto& [k, v] : labels.items()) (*pod_template)["metadata"]["labels"][k] = v;
    for (const auto& [k, v] : settings.pod_annotations) (*pod_template)["metadata"]["annotations"][k] = v;
    json& pod = (*pod_template)["spec"];
    for (json& container : pod["containers"]) {
      if (!plan.secret_env.empty()) {
        container["envFrom"] = json::array({{{"secretRef", {{"name", env_name}}}}});
      }
      container["volumeMounts"] = json::array({{{"name", "checkpoints"}, {"mountPath", kCheckpointMount}},
                                               {{"name", "outputs"}, {"mountPath", kOutputDir}}});
      container["volumeMounts"].push_back({{"name", "work"}, {"mountPath", kWorkDir}});
      if (!ray) {
        container["volumeMounts"].push_back({{"name", "code"}, {"mountPath", kCodeMount}, {"readOnly", true}});
        container["workingDir"] = kWorkDir;
        container["command"] = Unpacking(container["command"]);
      } else {
        // The driver runs in the work folder (the entrypoint changes to
        // it); tasks on any node import the job's modules from it.
        container["workingDir"] = kWorkDir;
        if (!HasEnv(container, "PYTHONPATH")) container["env"].push_back({{"name", "PYTHONPATH"}, {"value", kWorkDir}});
      }
    }
    if (ray && !pod["containers"].empty()) pod["initContainers"] = json::array({UnpackingInit(pod["containers"][0], checkpoint_dir)});
    const std::string& claim = settings.CheckpointClaimOf(spec.workspace);
    pod["volumes"] = json::array(
        {claim.empty() ? json{{"name", "checkpoints"}, {"emptyDir", json::object()}}
                       : json{{"name", "checkpoints"}, {"persistentVolumeClaim", {{"claimName", claim}}}},
         {{"name", "outputs"}, {"emptyDir", json::object()}}});
    pod["volumes"].push_back({{"name", "code"}, {"configMap", {{"name", code_name}}}});
    pod["volumes"].push_back({{"name", "work"}, {"emptyDir", json::object()}});
  }
  if (ray) {
    // Ray runs the entrypoint on the head through `ray job submit`, from
    // the job supervisor's folder: it starts in the unpacked code.
    json& entrypoint = out.main["spec"]["entrypoint"];
    entrypoint = fmt::format("cd {} && {}", kWorkDir, entrypoint.get<std::string>());
  }
  {
    out.dependents.push_back({{"apiVersion", "v1"},
                              {"kind", "ConfigMap"},
                              {"metadata", Metadata(code_name, spec.workspace, labels)},
                              {"immutable", true},
                              {"binaryData", {{kSnapshotKey, Base64(snapshot)}}}});
  }
  if (!plan.secret_env.empty()) {
    json data = json::object();
    for (const std::string& kv : plan.secret_env) {
      const size_t eq = kv.find('=');
      data[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    out.dependents.push_back({{"apiVersion", "v1"},
                              {"kind", "Secret"},
                              {"metadata", Metadata(env_name, spec.workspace, labels)},
                              {"type", "Opaque"},
                              {"stringData", data}});
  }
  return out;
}

Result<kube::ResourceRef> RefOf(const json& object) {
  const std::string api = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  const std::string ns = object["metadata"].value("namespace", "");
  const std::string name = object["metadata"].value("name", "");
  if (api == "batch/v1" && kind == "Job") return kube::ResourceRef{"batch", "v1", "jobs", ns, name, ""};
  if (api == "ray.io/v1" && kind == "RayJob") return kube::ResourceRef{"ray.io", "v1", "rayjobs", ns, name, ""};
  if (api == "v1" && kind == "Service") return kube::ResourceRef{"", "v1", "services", ns, name, ""};
  if (api == "v1" && kind == "ConfigMap") return kube::ResourceRef{"", "v1", "configmaps", ns, name, ""};
  if (api == "v1" && kind == "Secret") return kube::ResourceRef{"", "v1", "secrets", ns, name, ""};
  return InvalidArgumentError(fmt::format("no resource known for {} {}", api, kind));
}

}  // namespace tau::server::kubernetes
