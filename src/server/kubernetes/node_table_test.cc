#include "server/kubernetes/node_table.h"

#include <gtest/gtest.h>

namespace tau::server::kubernetes {
namespace {

using nlohmann::json;
using Type = kube::ReflectorEventType;

json Node(const std::string& name, const char* healthy) {
  json n = {{"metadata", {{"name", name}, {"labels", {{"taugrid.io/gpu-class", "h100-80gb"}}}}},
            {"spec", json::object()},
            {"status", {{"capacity", {{"nvidia.com/gpu", "8"}}}, {"allocatable", {{"nvidia.com/gpu", "8"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  if (healthy) {
    n["status"]["conditions"].push_back({{"type", "TauGridGPUHealthy"},
                                         {"status", healthy},
                                         {"reason", std::string(healthy) == "True" ? "GpusHealthy" : "XidFatal"},
                                         {"message", "GPU 1 GPU-b Unhealthy: XID 95"}});
  }
  return n;
}

TEST(NodeTableTest, ANodeReportedUnhealthyIsReturnedOnEveryEventUntilHealthy) {
  NodeTable t;
  EXPECT_FALSE(t.OnNode(Type::kAdded, Node("a", "True")).has_value());
  EXPECT_EQ(t.Unhealthy("a"), nullptr);
  auto bad = t.OnNode(Type::kModified, Node("a", "False"));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->name, "a");
  EXPECT_EQ(bad->reason, "XidFatal");
  ASSERT_NE(t.Unhealthy("a"), nullptr);
  EXPECT_TRUE(t.OnNode(Type::kModified, Node("a", "False")).has_value()) << "a heartbeat finds work placed since";
  EXPECT_EQ(t.UnhealthyNodes().size(), 1u);
  EXPECT_FALSE(t.OnNode(Type::kModified, Node("a", "True")).has_value());
  EXPECT_EQ(t.Unhealthy("a"), nullptr);
  t.OnNode(Type::kModified, Node("a", "False"));
  t.OnNode(Type::kDeleted, Node("a", "False"));
  EXPECT_EQ(t.Unhealthy("a"), nullptr);
}

TEST(NodeTableTest, ItsJsonListsNodesWithTheirGpusAndWhetherAnAgentReports) {
  NodeTable t;
  json b = Node("b", "False");
  b["metadata"]["annotations"]["taugrid.io/gpu-health"] = R"([{"index": 1, "uuid": "GPU-b", "health": "Unhealthy"}])";
  b["spec"]["taints"] = json::array({{{"key", "taugrid.io/gpu-unhealthy"}, {"effect", "NoSchedule"}}});
  t.OnNode(Type::kAdded, b);
  t.OnNode(Type::kAdded, Node("c", nullptr));
  json j = t.Json();
  EXPECT_TRUE(j["cluster"].get<bool>());
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["name"], "b");
  EXPECT_EQ(j["nodes"][0]["health"], "Unhealthy");
  EXPECT_EQ(j["nodes"][0]["gpu_capacity"], 8);
  EXPECT_EQ(j["nodes"][0]["gpu_class"], "h100-80gb");
  EXPECT_TRUE(j["nodes"][0]["tainted"].get<bool>());
  EXPECT_EQ(j["nodes"][0]["gpus"][0]["uuid"], "GPU-b");
  EXPECT_EQ(j["nodes"][1]["health"], "Unknown");
  EXPECT_FALSE(j["nodes"][1]["agent"].get<bool>());
}

}  // namespace
}  // namespace tau::server::kubernetes
