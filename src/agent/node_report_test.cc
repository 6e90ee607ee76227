#include "agent/node_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tau::agent {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const char kNow[] = "2026-12-07T10:00:00.000Z";
const char kLater[] = "2026-12-07T10:05:00.000Z";

NodeGpuHealth Polled() {
  NodeGpuHealth h({{0, "GPU-aaaa", "NVIDIA H100 80GB HBM3", "0000:01:00.0", 81559, "h100-80gb", {}, {}},
                   {1, "GPU-bbbb", "NVIDIA H100 80GB HBM3", "0000:02:00.0", 81559, "h100-80gb", {}, {}}},
                  {}, gpu::XidCatalog::Defaults());
  gpu::GpuSample good;
  good.readable = true;
  h.OnSample(0, good);
  h.OnSample(1, good);
  return h;
}

json Node() {
  return json::parse(R"({"metadata": {"name": "gpu-0", "resourceVersion": "41", "annotations": {"other": "x"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]}})");
}

// The Node after the patches (merge patch as the API server merges it; the
// status patch's condition replaces ours, keeping the others).
json Applied(json node, const NodeUpdate& u) {
  if (!u.node_patch.is_null()) {
    json p = u.node_patch;
    p["metadata"].erase("resourceVersion");
    node.merge_patch(p);
  }
  if (!u.status_patch.is_null()) {
    json kept = json::array();
    const json& ours = u.status_patch["status"]["conditions"][0];
    for (const json& c : node["status"]["conditions"]) {
      if (c["type"] != ours["type"]) kept.push_back(c);
    }
    kept.push_back(ours);
    node["status"]["conditions"] = kept;
  }
  return node;
}

json Condition(const json& node) {
  for (const json& c : node["status"]["conditions"]) {
    if (c["type"] == kConditionType) return c;
  }
  return nullptr;
}

TEST(NodeReportTest, AHealthyNodeGetsATrueConditionAndItsGpusAnnotatedAndNoTaint) {
  NodeGpuHealth h = Polled();
  NodeUpdate u = PlanNodeUpdate(Node(), h, UnhealthyAction::kTaint, kNow, false, false);
  ASSERT_FALSE(u.status_patch.is_null());
  json node = Applied(Node(), u);
  EXPECT_EQ(Condition(node)["status"], "True");
  EXPECT_EQ(Condition(node)["reason"], "GpusHealthy");
  EXPECT_EQ(Condition(node)["lastTransitionTime"], kNow);
  EXPECT_EQ(node["spec"]["taints"].size(), 1u) << "the device plugin's taint is left alone";
  json gpus = json::parse(node["metadata"]["annotations"][std::string(kHealthAnnotation)].get<std::string>());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1]["uuid"], "GPU-bbbb");
  EXPECT_EQ(gpus[1]["health"], "Healthy");
  EXPECT_EQ(u.node_patch["metadata"]["resourceVersion"], "41") << "a concurrent change is a conflict, not lost";
  EXPECT_EQ(u.status_patch["metadata"]["resourceVersion"], "41") << "a condition from an older view is a conflict";
  EXPECT_EQ(node["metadata"]["annotations"]["other"], "x");
  // Nothing changed: nothing to write, unless a heartbeat is due.
  NodeUpdate again = PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, false, false);
  EXPECT_TRUE(again.status_patch.is_null());
  EXPECT_TRUE(again.node_patch.is_null());
  NodeUpdate beat = PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, true, false);
  ASSERT_FALSE(beat.status_patch.is_null());
  EXPECT_EQ(beat.status_patch["status"]["conditions"][0]["lastHeartbeatTime"], kLater);
  EXPECT_EQ(beat.status_patch["status"]["conditions"][0]["lastTransitionTime"], kNow);
}

TEST(NodeReportTest, AnUnhealthyGpuTaintsTheNodeAndHealthyAgainRemovesOnlyThatTaint) {
  NodeGpuHealth h = Polled();
  json node = Applied(Node(), PlanNodeUpdate(Node(), h, UnhealthyAction::kTaint, kNow, false, false));
  h.OnXid({1, 95});
  node = Applied(node, PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, false, false));
  EXPECT_EQ(Condition(node)["status"], "False");
  EXPECT_EQ(Condition(node)["reason"], "XidFatal");
  EXPECT_THAT(Condition(node)["message"].get<std::string>(), HasSubstr("GPU 1 GPU-bbbb Unhealthy: XID 95"));
  EXPECT_EQ(Condition(node)["lastTransitionTime"], kLater);
  ASSERT_EQ(node["spec"]["taints"].size(), 2u);
  EXPECT_EQ(node["spec"]["taints"][1]["key"], kTaintKey);
  EXPECT_EQ(node["spec"]["taints"][1]["effect"], "NoSchedule");
  // Planned again from the result: nothing more to do.
  EXPECT_TRUE(PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, false, false).node_patch.is_null());

  // The operator clears it (the annotation), the agent removes the request.
  node["metadata"]["annotations"][std::string(kClearAnnotation)] = "GPU-bbbb";
  ASSERT_EQ(ClearRequest(node).value_or(""), "GPU-bbbb");
  ASSERT_TRUE(h.Clear(*ClearRequest(node)).ok());
  node = Applied(node, PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, false, true));
  EXPECT_EQ(Condition(node)["status"], "True");
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(node["spec"]["taints"][0]["key"], "nvidia.com/gpu");
  EXPECT_FALSE(node["metadata"]["annotations"].contains(std::string(kClearAnnotation)));
  EXPECT_FALSE(ClearRequest(node).has_value());
}

TEST(NodeReportTest, OnlyAStatusChangeIsATransitionAndItsEventSaysWhy) {
  NodeGpuHealth h = Polled();
  json node = Node();
  node["metadata"]["uid"] = "u-1";
  NodeUpdate first = PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kNow, false, false);
  EXPECT_TRUE(first.transition) << "a new condition";
  node = Applied(node, first);
  EXPECT_FALSE(PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, true, false).transition) << "a heartbeat";

  h.OnXid({1, 95});
  NodeUpdate bad = PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, false, false);
  ASSERT_TRUE(bad.transition);
  json event = TransitionEvent(node, h, kLater);
  EXPECT_EQ(event["metadata"]["namespace"], "default");
  EXPECT_EQ(event["involvedObject"]["kind"], "Node");
  EXPECT_EQ(event["involvedObject"]["name"], "gpu-0");
  EXPECT_EQ(event["involvedObject"]["uid"], "u-1");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "XidFatal");
  EXPECT_THAT(event["message"].get<std::string>(), HasSubstr("XID 95"));
  EXPECT_EQ(event["metadata"]["name"], "gpu-0.taugrid-unhealthy-20261207100500000");

  node = Applied(node, bad);
  ASSERT_TRUE(h.Clear("all").ok());
  EXPECT_TRUE(PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kLater, false, true).transition);
  EXPECT_EQ(TransitionEvent(node, h, kLater)["type"], "Normal");
}

TEST(NodeReportTest, ARestartedAgentKeepsTheFaultsTheNodeRecords) {
  NodeGpuHealth before = Polled();
  json node = Applied(Node(), PlanNodeUpdate(Node(), before, UnhealthyAction::kTaint, kNow, false, false));
  before.OnXid({1, 95});
  node = Applied(node, PlanNodeUpdate(node, before, UnhealthyAction::kTaint, kNow, false, false));

  // A new agent: its GPUs know nothing of the XID, which NVML does not replay.
  NodeGpuHealth after = Polled();
  ASSERT_TRUE(after.Healthy());
  std::string problem;
  EXPECT_EQ(RestoreFromNode(node, after, &problem), std::vector<std::string>{"GPU-bbbb"});
  EXPECT_EQ(problem, "");
  EXPECT_FALSE(after.Healthy());
  EXPECT_EQ(after.Reason(), "XidFatal");
  EXPECT_THAT(after.Message(), HasSubstr("XID 95"));
  // Good polls do not end it; the plan keeps the taint.
  gpu::GpuSample good;
  good.readable = true;
  after.OnSample(1, good);
  NodeUpdate u = PlanNodeUpdate(node, after, UnhealthyAction::kTaint, kLater, false, false);
  EXPECT_TRUE(u.node_patch.is_null()) << u.node_patch.dump();
  EXPECT_FALSE(u.transition);

  // Garbage in the annotation restores nothing, throws nothing, and says
  // why (the agent logs it).
  json broken = node;
  broken["metadata"]["annotations"][std::string(kHealthAnnotation)] = "[{\"uuid\": 1, \"health\": \"Unhealthy\"}, {";
  NodeGpuHealth fresh = Polled();
  EXPECT_TRUE(RestoreFromNode(broken, fresh, &problem).empty());
  EXPECT_EQ(problem, "it is not JSON");
  broken["metadata"]["annotations"][std::string(kHealthAnnotation)] = "{}";
  problem.clear();
  EXPECT_TRUE(RestoreFromNode(broken, fresh, &problem).empty());
  EXPECT_EQ(problem, "it is not a JSON array");
  broken["metadata"]["annotations"][std::string(kHealthAnnotation)] = 5;
  problem.clear();
  EXPECT_TRUE(RestoreFromNode(broken, fresh, &problem).empty());
  EXPECT_EQ(problem, "it is not a string");
  problem.clear();
  broken["metadata"]["annotations"][std::string(kHealthAnnotation)] = "[{\"uuid\": 1, \"health\": \"Unhealthy\"}, 7]";
  EXPECT_TRUE(RestoreFromNode(broken, fresh, &problem).empty());
  for (const char* typed : {"[{\"health\": 5}]", "[{\"index\": \"x\", \"health\": 5, \"uuid\": \"GPU-bbbb\"}]"}) {
    broken["metadata"]["annotations"][std::string(kHealthAnnotation)] = typed;
    EXPECT_TRUE(RestoreFromNode(broken, fresh, &problem).empty()) << typed;
  }
  EXPECT_EQ(problem, "") << "entries of the wrong type are skipped, not a broken record";
  EXPECT_TRUE(fresh.Healthy());
}

TEST(NodeReportTest, TheStateFileRecordsKeepTheFaultsAcrossARestart) {
  NodeGpuHealth before = Polled();
  EXPECT_EQ(FaultRecords(before), json::array());
  before.OnXid({1, 95});
  const json faults = FaultRecords(before);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["uuid"], "GPU-bbbb");
  NodeGpuHealth after = Polled();
  std::string problem;
  EXPECT_EQ(RestoreFromHealthJson(faults.dump(), after, &problem), std::vector<std::string>{"GPU-bbbb"});
  EXPECT_EQ(after.Reason(), "XidFatal");
  EXPECT_TRUE(RestoreFromHealthJson("", after, &problem).empty());
  EXPECT_EQ(problem, "it is not JSON");
}

TEST(NodeReportTest, TheTaintsValueFollowsTheReason) {
  NodeGpuHealth h = Polled();
  h.OnXid({1, 95});
  json node = Node();
  node["spec"]["taints"].push_back({{"key", kTaintKey}, {"value", "EccUncorrectable"}, {"effect", "NoSchedule"}});
  node = Applied(node, PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kNow, false, false));
  ASSERT_EQ(node["spec"]["taints"].size(), 2u);
  EXPECT_EQ(node["spec"]["taints"][1]["value"], "XidFatal");
  EXPECT_TRUE(PlanNodeUpdate(node, h, UnhealthyAction::kTaint, kNow, false, false).node_patch.is_null());
}

TEST(NodeReportTest, CordonUndoesOnlyTheAgentsOwnCordon) {
  NodeGpuHealth h = Polled();
  h.OnXid({0, 95});
  json node = Applied(Node(), PlanNodeUpdate(Node(), h, UnhealthyAction::kCordon, kNow, false, false));
  EXPECT_EQ(node["spec"]["unschedulable"], true);
  EXPECT_EQ(node["metadata"]["annotations"][std::string(kCordonedAnnotation)], "true");
  EXPECT_EQ(node["spec"]["taints"].size(), 1u) << "cordon, not taint";
  ASSERT_TRUE(h.Clear("all").ok());
  node = Applied(node, PlanNodeUpdate(node, h, UnhealthyAction::kCordon, kLater, false, false));
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
  EXPECT_FALSE(node["metadata"]["annotations"].contains(std::string(kCordonedAnnotation)));

  // Cordoned by an administrator: the agent never uncordons it.
  json admin = Node();
  admin["spec"]["unschedulable"] = true;
  NodeUpdate u = PlanNodeUpdate(admin, h, UnhealthyAction::kCordon, kNow, false, false);
  EXPECT_EQ(Applied(admin, u)["spec"]["unschedulable"], true);
}

TEST(NodeReportTest, ConditionOnlyNeitherTaintsNorCordons) {
  NodeGpuHealth h = Polled();
  h.OnXid({0, 95});
  json node = Applied(Node(), PlanNodeUpdate(Node(), h, UnhealthyAction::kCondition, kNow, false, false));
  EXPECT_EQ(Condition(node)["status"], "False");
  EXPECT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
}

TEST(NodeReportTest, UnhealthyActionsParse) {
  EXPECT_EQ(ParseUnhealthyAction("taint"), UnhealthyAction::kTaint);
  EXPECT_EQ(ParseUnhealthyAction("cordon"), UnhealthyAction::kCordon);
  EXPECT_EQ(ParseUnhealthyAction("condition"), UnhealthyAction::kCondition);
  EXPECT_FALSE(ParseUnhealthyAction("drain").has_value());
}

}  // namespace
}  // namespace tau::agent
