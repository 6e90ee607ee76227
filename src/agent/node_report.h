#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/node_gpu_health.h"
#include "common/result.h"

namespace tau::agent {

// How the node agent reports its GPUs on its Node (docs/gpu-health.md,
// "On Kubernetes: the node agent").
inline constexpr std::string_view kConditionType = "TauGridGPUHealthy";
// NoSchedule, while a GPU is Unhealthy and the action is `taint`.
inline constexpr std::string_view kTaintKey = "taugrid.io/gpu-unhealthy";
// Per-GPU health, a JSON array, always kept current.
inline constexpr std::string_view kHealthAnnotation = "taugrid.io/gpu-health";
// Set by an operator (`kubectl annotate node N taugrid.io/gpu-clear=all`,
// or `=GPU` by index or UUID) after a repair; the agent clears those GPUs
// and removes the annotation.
inline constexpr std::string_view kClearAnnotation = "taugrid.io/gpu-clear";
// Marks a cordon the agent made, so that it uncordons only its own.
inline constexpr std::string_view kCordonedAnnotation = "taugrid.io/cordoned-by-agent";

enum class UnhealthyAction { kTaint, kCordon, kCondition };
std::optional<UnhealthyAction> ParseUnhealthyAction(std::string_view name);

// What to write to the Node so that it says what `health` says.
struct NodeUpdate {
  // Strategic merge patch of nodes/status (the condition only, merged by
  // type with the kubelet's); null when the condition is current and no
  // heartbeat is due.
  nlohmann::json status_patch;
  // JSON merge patch of the Node (annotations, taints, unschedulable),
  // carrying the resourceVersion it was planned from so that a concurrent
  // change is a conflict to plan again, not lost; null when nothing changes.
  nlohmann::json node_patch;
  // The condition's status changes (or the condition is new): worth an
  // Event on the Node (TransitionEvent).
  bool transition = false;
};

// `node`: the Node as last read. `now`: RFC 3339. `heartbeat`: rewrite the
// condition's lastHeartbeatTime even when nothing else changed.
// `clear_done`: remove kClearAnnotation (it was acted on).
NodeUpdate PlanNodeUpdate(const nlohmann::json& node, const NodeGpuHealth& health, UnhealthyAction action,
                          const std::string& now, bool heartbeat, bool clear_done);

// A core/v1 Event on `node` that its GPUs turned healthy (Normal,
// TauGridGPUHealthy) or unhealthy (Warning, the condition's reason), for
// `kubectl describe node` and `kubectl get events`. Node events live in the
// `default` namespace, as the kubelet's do. `now`: RFC 3339.
nlohmann::json TransitionEvent(const nlohmann::json& node, const NodeGpuHealth& health, const std::string& now);

// Restores into `health` the Unhealthy GPUs that `node`'s health
// annotation records (an agent that restarted, or an upgraded one);
// returns their UUIDs. An annotation that does not parse restores nothing
// and says why in `problem` (left alone otherwise); entries that are not
// well typed are skipped.
std::vector<std::string> RestoreFromNode(const nlohmann::json& node, NodeGpuHealth& health, std::string* problem);
// The same from the annotation's text (or the agent's state file, which
// holds FaultRecords).
std::vector<std::string> RestoreFromHealthJson(const std::string& text, NodeGpuHealth& health, std::string* problem);

// The Unhealthy GPUs of `health` as the annotation writes them: what the
// agent keeps in its state file on the node, so that a fault it could not
// yet write to the API server survives its restart.
nlohmann::json FaultRecords(const NodeGpuHealth& health);

// The value of kClearAnnotation, when set.
std::optional<std::string> ClearRequest(const nlohmann::json& node);

// The per-GPU health the annotation holds.
nlohmann::json GpuHealthJson(const NodeGpuHealth& health);

}  // namespace tau::agent
