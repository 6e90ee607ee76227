#include "render/render.h"

#include <nlohmann/json.hpp>

#include "render/pod_parts.h"
#include "render/yaml_emitter.h"

namespace tau::render {

std::vector<nlohmann::json> RenderObjects(const spec::JobSpec& spec, const RenderOptions& options) {
  const std::string name = options.object_name.empty() ? spec.name : options.object_name;
  if (spec.run.workload_kind == spec::WorkloadKind::kRayJob) {
    return {internal::RenderRayJob(spec, options, name)};
  }
  std::vector<nlohmann::json> objects;
  if (spec.compute.workers > 1) objects.push_back(internal::RenderHeadlessService(spec, options, name));
  objects.push_back(internal::RenderBatchJob(spec, options, name));
  return objects;
}

std::string RenderYaml(const spec::JobSpec& spec, const RenderOptions& options) {
  std::string out;
  for (const nlohmann::json& object : RenderObjects(spec, options)) {
    if (!out.empty()) out += "---\n";
    out += EmitYaml(object);
  }
  return out;
}

}  // namespace tau::render
