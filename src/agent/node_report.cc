#include "agent/node_report.h"

#include <cctype>

namespace tau::agent {
using nlohmann::json;

std::optional<UnhealthyAction> ParseUnhealthyAction(std::string_view name) {
  if (name == "taint") return UnhealthyAction::kTaint;
  if (name == "cordon") return UnhealthyAction::kCordon;
  if (name == "condition") return UnhealthyAction::kCondition;
  return std::nullopt;
}

json GpuHealthJson(const NodeGpuHealth& health) {
  json gpus = json::array();
  for (size_t i = 0; i < health.gpus().size(); ++i) {
    const NodeGpuHealth::Gpu& g = health.gpus()[i];
    gpus.push_back({{"index", i},
                    {"uuid", g.info.uuid},
                    {"model", g.info.model},
                    {"gpu_class", g.info.gpu_class},
                    {"health", gpu::HealthStateName(g.health.state())},
                    {"reason", g.health.reason()},
                    {"message", g.health.message()}});
  }
  return gpus;
}

std::vector<std::string> RestoreFromHealthJson(const std::string& text, NodeGpuHealth& health, std::string* problem) {
  std::vector<std::string> restored;
  const json gpus = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!gpus.is_array()) {
    *problem = gpus.is_discarded() ? "it is not JSON" : "it is not a JSON array";
    return restored;
  }
  for (const json& g : gpus) {
    // Typed by hand: anyone who may annotate the node writes here.
    if (!g.is_object() || !g.contains("health") || g["health"] != "Unhealthy" || !g.contains("uuid") ||
        !g["uuid"].is_string()) {
      continue;
    }
    const std::string uuid = g["uuid"].get<std::string>();
    const std::string reason = g.contains("reason") && g["reason"].is_string() ? g["reason"].get<std::string>() : "";
    const std::string message = g.contains("message") && g["message"].is_string() ? g["message"].get<std::string>() : "";
    if (health.RestoreUnhealthy(uuid, reason, message)) restored.push_back(uuid);
  }
  return restored;
}

std::vector<std::string> RestoreFromNode(const json& node, NodeGpuHealth& health, std::string* problem) {
  const json annotations = node.value("metadata", json::object()).value("annotations", json::object());
  auto it = annotations.find(std::string(kHealthAnnotation));
  if (it == annotations.end()) return {};
  if (!it->is_string()) {
    *problem = "it is not a string";
    return {};
  }
  return RestoreFromHealthJson(it->get<std::string>(), health, problem);
}

json FaultRecords(const NodeGpuHealth& health) {
  json faults = json::array();
  for (const json& g : GpuHealthJson(health)) {
    if (g["health"] == "Unhealthy") faults.push_back(g);
  }
  return faults;
}

std::optional<std::string> ClearRequest(const json& node) {
  const json* annotations = node.contains("metadata") ? &node["metadata"] : nullptr;
  if (!annotations || !annotations->contains("annotations")) return std::nullopt;
  const json& a = (*annotations)["annotations"];
  auto it = a.find(std::string(kClearAnnotation));
  if (it == a.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

namespace {

const json* FindCondition(const json& node) {
  if (!node.contains("status") || !node["status"].contains("conditions")) return nullptr;
  for (const json& c : node["status"]["conditions"]) {
    if (c.value("type", "") == kConditionType) return &c;
  }
  return nullptr;
}

bool IsOurTaint(const json& t) { return t.value("key", "") == kTaintKey && t.value("effect", "") == "NoSchedule"; }

}  // namespace

NodeUpdate PlanNodeUpdate(const json& node, const NodeGpuHealth& health, UnhealthyAction action,
                          const std::string& now, bool heartbeat, bool clear_done) {
  NodeUpdate out;
  const bool healthy = health.Healthy();
  const std::string status = healthy ? "True" : "False";
  const std::string reason = health.Reason();
  const std::string message = health.Message();

  // The condition.
  const json* current = FindCondition(node);
  const bool same = current && current->value("status", "") == status && current->value("reason", "") == reason &&
                    current->value("message", "") == message;
  if (!same || heartbeat) {
    const bool transition = !current || current->value("status", "") != status;
    out.transition = transition;
    out.status_patch = {{"status",
                         {{"conditions",
                           json::array({{{"type", kConditionType},
                                         {"status", status},
                                         {"reason", reason},
                                         {"message", message},
                                         {"lastHeartbeatTime", now},
                                         {"lastTransitionTime",
                                          transition ? now : current->value("lastTransitionTime", now)}}})}}}};
    // Planned from this version of the Node: a write made from an older
    // view (by an agent whose lease has just gone) is a conflict, not a
    // condition put back.
    const std::string version = node.value("metadata", json::object()).value("resourceVersion", "");
    if (!version.empty()) out.status_patch["metadata"]["resourceVersion"] = version;
  }

  // Annotations, taints, cordon.
  const json metadata = node.value("metadata", json::object());
  const json annotations = metadata.value("annotations", json::object());
  const json spec = node.value("spec", json::object());
  json patch = json::object();
  json new_annotations = json::object();
  const std::string gpus = GpuHealthJson(health).dump();
  if (annotations.value(std::string(kHealthAnnotation), "") != gpus) new_annotations[std::string(kHealthAnnotation)] = gpus;
  if (clear_done && annotations.contains(std::string(kClearAnnotation))) {
    new_annotations[std::string(kClearAnnotation)] = nullptr;
  }

  const json taints = spec.value("taints", json::array());
  json wanted = json::array();
  bool had_ours = false;
  for (const json& t : taints) {
    if (IsOurTaint(t)) {
      had_ours = true;
    } else {
      wanted.push_back(t);
    }
  }
  const bool want_ours = !healthy && action == UnhealthyAction::kTaint;
  if (want_ours) {
    wanted.push_back({{"key", kTaintKey}, {"value", reason}, {"effect", "NoSchedule"}});
  }
  // The taint's value is the reason: rewritten when the reason changes.
  bool same_value = true;
  for (const json& t : taints) {
    if (IsOurTaint(t) && t.value("value", "") != reason) same_value = false;
  }
  if (want_ours != had_ours || (want_ours && !same_value)) patch["spec"]["taints"] = wanted;

  const bool cordoned_by_us = annotations.contains(std::string(kCordonedAnnotation));
  const bool unschedulable = spec.value("unschedulable", false);
  if (!healthy && action == UnhealthyAction::kCordon) {
    if (!unschedulable) {
      patch["spec"]["unschedulable"] = true;
      new_annotations[std::string(kCordonedAnnotation)] = "true";
    }
  } else if (cordoned_by_us) {
    // Healthy again, or no longer cordoning: undo only our own cordon.
    if (unschedulable) patch["spec"]["unschedulable"] = nullptr;
    new_annotations[std::string(kCordonedAnnotation)] = nullptr;
  }

  if (!new_annotations.empty()) patch["metadata"]["annotations"] = new_annotations;
  if (!patch.empty()) {
    patch["metadata"]["resourceVersion"] = metadata.value("resourceVersion", "");
    out.node_patch = patch;
  }
  return out;
}

json TransitionEvent(const json& node, const NodeGpuHealth& health, const std::string& now) {
  const json metadata = node.value("metadata", json::object());
  const std::string name = metadata.value("name", "");
  const bool healthy = health.Healthy();
  const std::string reason = healthy ? std::string(kConditionType) : health.Reason();
  // Unique per transition: the node, the state and the time (to the second).
  std::string stamp;
  for (char c : now) {
    if (std::isdigit(static_cast<unsigned char>(c))) stamp += c;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name + ".taugrid-" + (healthy ? "healthy-" : "unhealthy-") + stamp}, {"namespace", "default"}}},
          {"involvedObject", {{"kind", "Node"}, {"apiVersion", "v1"}, {"name", name}, {"uid", metadata.value("uid", "")}}},
          {"type", healthy ? "Normal" : "Warning"},
          {"reason", reason},
          {"message", healthy ? std::string("every GPU of the node is healthy") : health.Message()},
          {"source", {{"component", "taugrid-agent"}, {"host", name}}},
          {"reportingComponent", "taugrid-agent"},
          {"reportingInstance", name},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", 1}};
}

}  // namespace tau::agent
