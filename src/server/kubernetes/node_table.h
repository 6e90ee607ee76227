#pragma once

// The cluster's nodes as the Kubernetes backend sees them (docs/kubernetes.md,
// "GPU health"): each node's GPUs (capacity and allocatable nvidia.com/gpu),
// its GPU class label, and the health its node agent reports
// (docs/gpu-health.md): the TauGridGPUHealthy condition and the per-GPU
// annotation. Fed by the node reflector on the control loop; no I/O.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/reflector.h"

namespace tau::server::kubernetes {

struct NodeHealthReport {
  std::string name;
  int64_t gpu_capacity = 0;
  int64_t gpu_allocatable = 0;
  std::string gpu_class;  // the taugrid.io/gpu-class label
  // The agent's condition: nullopt when no agent reports on this node.
  std::optional<bool> gpus_healthy;
  std::string reason, message;
  bool tainted = false;       // the agent's NoSchedule taint is on
  bool unschedulable = false;  // cordoned (by anyone)
  nlohmann::json gpus = nlohmann::json::array();  // the agent's per-GPU annotation
};

class NodeTable {
 public:
  // A node event. Returns the node's report when it is now reported
  // Unhealthy (every such event, so that work placed on it since is found).
  std::optional<NodeHealthReport> OnNode(kube::ReflectorEventType type, const nlohmann::json& node);
  // The node's report when its agent says a GPU is Unhealthy.
  const NodeHealthReport* Unhealthy(const std::string& node) const;
  // Every node whose agent says a GPU is Unhealthy.
  std::vector<NodeHealthReport> UnhealthyNodes() const;
  // GET /api/v1/gpus on a cluster (tau nodes).
  nlohmann::json Json() const;

  static NodeHealthReport Parse(const nlohmann::json& node);

 private:
  std::map<std::string, NodeHealthReport> nodes_;
};

}  // namespace tau::server::kubernetes
