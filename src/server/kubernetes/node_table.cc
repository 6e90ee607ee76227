#include "server/kubernetes/node_table.h"

#include <cstdlib>

namespace tau::server::kubernetes {
using nlohmann::json;

namespace {

int64_t Gpus(const json& list) {
  if (!list.is_object() || !list.contains("nvidia.com/gpu")) return 0;
  const json& v = list["nvidia.com/gpu"];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) return std::strtoll(v.get<std::string>().c_str(), nullptr, 10);
  return 0;
}

}  // namespace

NodeHealthReport NodeTable::Parse(const json& node) {
  NodeHealthReport r;
  const json metadata = node.value("metadata", json::object());
  r.name = metadata.value("name", "");
  const json labels = metadata.value("labels", json::object());
  r.gpu_class = labels.value("taugrid.io/gpu-class", "");
  const json status = node.value("status", json::object());
  r.gpu_capacity = Gpus(status.value("capacity", json::object()));
  r.gpu_allocatable = Gpus(status.value("allocatable", json::object()));
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") != "TauGridGPUHealthy") continue;
    r.gpus_healthy = c.value("status", "") != "False";
    r.reason = c.value("reason", "");
    r.message = c.value("message", "");
  }
  const json spec = node.value("spec", json::object());
  r.unschedulable = spec.value("unschedulable", false);
  for (const json& t : spec.value("taints", json::array())) {
    if (t.value("key", "") == "taugrid.io/gpu-unhealthy") r.tainted = true;
  }
  const json annotations = metadata.value("annotations", json::object());
  if (annotations.contains("taugrid.io/gpu-health") && annotations["taugrid.io/gpu-health"].is_string()) {
    // Anyone who may annotate the node writes here: only well-typed
    // entries are kept, so that readers (tau nodes) may trust their types.
    json gpus = json::parse(annotations["taugrid.io/gpu-health"].get<std::string>(), nullptr, false);
    if (gpus.is_array()) {
      r.gpus = json::array();
      for (const json& g : gpus) {
        if (!g.is_object() || !g.contains("index") || !g["index"].is_number_integer()) continue;
        json kept = {{"index", g["index"]}};
        for (const char* key : {"uuid", "model", "gpu_class", "health", "reason", "message"}) {
          kept[key] = g.contains(key) && g[key].is_string() ? g[key] : json("");
        }
        r.gpus.push_back(std::move(kept));
      }
    }
  }
  return r;
}

std::optional<NodeHealthReport> NodeTable::OnNode(kube::ReflectorEventType type, const json& node) {
  if (type == kube::ReflectorEventType::kSynced) return std::nullopt;
  NodeHealthReport r = Parse(node);
  if (type == kube::ReflectorEventType::kDeleted) {
    nodes_.erase(r.name);
    return std::nullopt;
  }
  const bool unhealthy = r.gpus_healthy == false;
  nodes_[r.name] = r;
  if (unhealthy) return r;
  return std::nullopt;
}

const NodeHealthReport* NodeTable::Unhealthy(const std::string& node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.gpus_healthy != false) return nullptr;
  return &it->second;
}

std::vector<NodeHealthReport> NodeTable::UnhealthyNodes() const {
  std::vector<NodeHealthReport> out;
  for (const auto& [name, r] : nodes_) {
    if (r.gpus_healthy == false) out.push_back(r);
  }
  return out;
}

json NodeTable::Json() const {
  json nodes = json::array();
  for (const auto& [name, r] : nodes_) {
    nodes.push_back({{"name", r.name},
                     {"gpu_class", r.gpu_class},
                     {"gpu_capacity", r.gpu_capacity},
                     {"gpu_allocatable", r.gpu_allocatable},
                     {"health", !r.gpus_healthy ? "Unknown" : *r.gpus_healthy ? "Healthy" : "Unhealthy"},
                     {"agent", r.gpus_healthy.has_value()},
                     {"reason", r.reason},
                     {"message", r.message},
                     {"tainted", r.tainted},
                     {"unschedulable", r.unschedulable},
                     {"gpus", r.gpus}});
  }
  return {{"cluster", true}, {"nodes", nodes}, {"gpus", json::array()}};
}

}  // namespace tau::server::kubernetes
