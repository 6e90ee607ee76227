#include "render/kueue_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tau::render {
namespace {

using ::testing::HasSubstr;

struct Decoded {
  bool ok = false;
  DecodedKueueConfig out;
  std::string diagnostics;
};

Decoded Decode(const std::string& text) {
  Decoded d;
  spec::Diagnostics diags;
  d.ok = DecodeKueueManifests(text, "kueue.yaml", &d.out, &diags);
  d.diagnostics = diags.Format();
  return d;
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(TAU_SOURCE_DIR) + "/tests/kueue/" + name);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

TEST(KueueConfigTest, KueuesSingleClusterQueueSetupApplies) {
  Decoded d = Decode(ReadExample("single-clusterqueue-setup.yaml"));
  ASSERT_TRUE(d.ok) << d.diagnostics;
  EXPECT_EQ(d.diagnostics, "");
  ASSERT_EQ(d.out.config.resource_flavors.size(), 1u);
  ASSERT_EQ(d.out.config.cluster_queues.size(), 1u);
  const auto& cq = d.out.config.cluster_queues[0];
  EXPECT_EQ(cq.name, "cluster-queue");
  ASSERT_TRUE(cq.namespace_selector.has_value());
  EXPECT_TRUE(cq.namespace_selector->Matches(sched::WorkspaceLabels("any-workspace")));
  EXPECT_EQ(cq.queueing_strategy, "BestEffortFIFO");
  ASSERT_EQ(cq.resource_groups.size(), 1u);
  EXPECT_EQ(cq.resource_groups[0].covered_resources, (std::vector<std::string>{"cpu", "memory", "pods"}));
  EXPECT_EQ(cq.resource_groups[0].flavors[0].resources[1].nominal_quota.ToString(), "36Gi");
  ASSERT_EQ(d.out.config.local_queues.size(), 1u);
  EXPECT_EQ(d.out.config.local_queues[0].namespace_, "default");
  EXPECT_EQ(d.out.config.local_queues[0].cluster_queue, "cluster-queue");
  EXPECT_EQ(d.out.objects.size(), 3u);
}

TEST(KueueConfigTest, AV1ListAsGetPrintsItStandsForItsItems) {
  Decoded d = Decode(R"({"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
  {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
   "metadata": {"name": "user-queue", "namespace": "default"}, "spec": {"clusterQueue": "cluster-queue"}}]})");
  ASSERT_TRUE(d.ok) << d.diagnostics;
  EXPECT_EQ(d.out.config.resource_flavors.size(), 1u);
  EXPECT_EQ(d.out.config.local_queues.size(), 1u);
  EXPECT_EQ(d.out.objects.size(), 2u);
  EXPECT_TRUE(Decode(R"({"apiVersion": "v1", "kind": "List", "items": []})").ok);
  EXPECT_THAT(Decode(R"({"apiVersion": "v1", "kind": "List", "items": 3})").diagnostics,
              HasSubstr("a v1 List needs \"items\", a list of objects"));
  EXPECT_THAT(Decode(R"({"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod"}]})")
                  .diagnostics,
              HasSubstr("apiVersion \"v1\" is not a Kueue API"));
}

TEST(KueueConfigTest, APriorityClassValueIsAnInt32WrittenInDigits) {
  auto err = [](const std::string& value) {
    return Decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: hi}\nvalue: " +
                  value + "\n")
        .diagnostics;
  };
  EXPECT_EQ(err("1000"), "");
  EXPECT_EQ(err("-5"), "");
  for (const char* bad : {"1e2", "0x10", "1.0", "12abc"}) {
    EXPECT_THAT(err(bad), HasSubstr("kueue.yaml:4:8: error: WorkloadPriorityClass: \"value\" must be an integer"))
        << bad;
  }
  EXPECT_THAT(err("99999999999"), HasSubstr("\"value\" 99999999999 is outside Kueue's range, -2147483648 to "
                                            "2147483647"));
}

TEST(KueueConfigTest, EveryFieldOfAFullerSetupIsRead) {
  Decoded d = Decode(ReadExample("cohort-gpu-setup.yaml"));
  ASSERT_TRUE(d.ok) << d.diagnostics;
  EXPECT_THAT(d.diagnostics, HasSubstr("v1beta1 is deprecated"));
  const auto& c = d.out.config;
  ASSERT_EQ(c.cluster_queues.size(), 2u);
  const auto& a = c.cluster_queues[0];
  EXPECT_EQ(a.cohort_name, "research");
  EXPECT_EQ(a.queueing_strategy, "StrictFIFO");
  EXPECT_EQ(a.preemption.within_cluster_queue, "LowerPriority");
  EXPECT_EQ(a.preemption.reclaim_within_cohort, "Any");
  EXPECT_EQ(a.preemption.borrow_within_cohort, "LowerPriority");
  EXPECT_EQ(a.preemption.max_priority_threshold, 100);
  EXPECT_EQ(a.flavor_fungibility.when_can_borrow, "TryNextFlavor");
  const auto& gpu = a.resource_groups[1].flavors[0].resources[0];
  EXPECT_EQ(gpu.borrowing_limit->ToString(), "2");
  EXPECT_EQ(gpu.lending_limit->ToString(), "2");
  EXPECT_EQ(c.cluster_queues[1].cohort_name, "research");  // v1beta1 "cohort"
  EXPECT_EQ(c.resource_flavors[0].node_labels.at("taugrid.io/gpu-class"), "h200-141gb");
  EXPECT_EQ(c.resource_flavors[0].node_taints[0].effect, "NoSchedule");
  EXPECT_EQ(c.resource_flavors[0].tolerations[0].op, "Exists");
  EXPECT_EQ(c.local_queues[0].namespace_, "vision");
  EXPECT_EQ(c.priority_classes[0].value, 1000);
  EXPECT_EQ(c.cohorts[0].name, "research");
  // Printed back as v1beta2.
  nlohmann::json b = nlohmann::json::parse(d.out.objects[4].json);
  EXPECT_EQ(b["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(b["spec"]["cohortName"], "research");
  EXPECT_FALSE(b["spec"].contains("cohort"));
}

TEST(KueueConfigTest, MistakesArePositionedErrors) {
  Decoded d = Decode(
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: ClusterQueu\n"
      "metadata: {name: x}\n"
      "---\n"
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: ClusterQueue\n"
      "metadata:\n"
      "  name: cq\n"
      "spec:\n"
      "  queueingStrategy: FIFO\n"
      "  cohortNme: x\n"
      "  admissionChecks: [prov]\n"
      "  resourceGroups:\n"
      "  - coveredResources: [cpu, memory]\n"
      "    flavors:\n"
      "    - name: default\n"
      "      resources:\n"
      "      - name: memory\n"
      "        nominalQuota: 4GB\n"
      "      - name: cpu\n"
      "        nominalQuota: 2\n"
      "        borrowingLimit: 1\n"
      "---\n"
      "apiVersion: v1\n"
      "kind: Namespace\n"
      "metadata: {name: n}\n");
  EXPECT_FALSE(d.ok);
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:2:7: error: kind \"ClusterQueu\" is not supported; expected one of "
                                       "\"ResourceFlavor\", \"ClusterQueue\", \"Cohort\", \"LocalQueue\", "
                                       "\"WorkloadPriorityClass\", \"Configuration\" (did you mean \"ClusterQueue\"?)"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:10:21: error: queueingStrategy: \"FIFO\" is not valid"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:11:3: error: unknown field \"cohortNme\" in ClusterQueue.spec; did you "
                                       "mean \"cohortName\"?"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:12:3: warning: ClusterQueue.spec.admissionChecks is stored but not acted on"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:19:23: error: resourceGroups[0].flavors[0].resources[0].nominalQuota: "
                                       "\"4GB\": unknown suffix"));
  EXPECT_THAT(d.diagnostics, HasSubstr("resources must list the covered resources in the same order (cpu, memory); it "
                                       "lists memory, cpu"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:22:25: error: borrowingLimit needs cohortName"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:24:13: error: apiVersion \"v1\" is not a Kueue API"));
}

TEST(KueueConfigTest, TheKueueConfigurationTurnsOnFairSharing) {
  Decoded d = Decode(
      "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
      "kind: Configuration\n"
      "fairSharing:\n"
      "  enable: true\n"
      "  preemptionStrategies: [LessThanInitialShare]\n"
      "waitForPodsReady: {enable: true, timeout: 10m}\n"
      "admissionFairSharing:\n"
      "  usageHalfLifeTime: 24h\n"
      "  usageSamplingInterval: 1m\n"
      "  resourceWeights: {cpu: 1, nvidia.com/gpu: 8}\n");
  ASSERT_TRUE(d.ok) << d.diagnostics;
  EXPECT_TRUE(d.out.config.fair_sharing.enable);
  EXPECT_EQ(d.out.config.fair_sharing.preemption_strategies, std::vector<std::string>{"LessThanInitialShare"});
  EXPECT_EQ(d.out.config.admission_fair_sharing.usage_half_life_ms, 24 * 3600 * 1000);
  EXPECT_EQ(d.out.config.admission_fair_sharing.usage_sampling_interval_ms, 60'000);
  EXPECT_EQ(d.out.config.admission_fair_sharing.resource_weights.at("nvidia.com/gpu"), 8);
  ASSERT_EQ(d.out.objects.size(), 1u);
  EXPECT_EQ(d.out.objects[0].kind, "Configuration");
  EXPECT_EQ(d.out.objects[0].name, "config");
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:6:34: warning: waitForPodsReady.timeout is stored but not acted on"));

  Decoded bad = Decode(
      "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
      "kind: Configuration\n"
      "fairSharing:\n"
      "  enable: yes please\n"
      "  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]\n");
  EXPECT_FALSE(bad.ok);
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:4:11: error: fairSharing.enable: expected true or false"));
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:5:25: error: fairSharing.preemptionStrategies: Kueue allows"));
  Decoded wrong_api = Decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Configuration\n");
  EXPECT_THAT(wrong_api.diagnostics, HasSubstr("a Configuration is config.kueue.x-k8s.io/v1beta1"));
}

TEST(KueueConfigTest, BorrowWithinCohortIsRefusedWithFairSharingAsKueueRefusesIt) {
  const std::string config =
      "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
      "kind: Configuration\n"
      "fairSharing: {enable: true}\n";
  const std::string queue =
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: ClusterQueue\n"
      "metadata: {name: team-a}\n"
      "spec:\n"
      "  cohortName: all\n"
      "  preemption:\n"
      "    reclaimWithinCohort: Any\n"
      "    borrowWithinCohort: {policy: LowerPriority}\n";
  // In either order of the documents.
  Decoded after = Decode(config + "---\n" + queue);
  EXPECT_FALSE(after.ok);
  EXPECT_THAT(after.diagnostics, HasSubstr("kueue.yaml:12:34: error: ClusterQueue \"team-a\": "
                                           "preemption.borrowWithinCohort cannot be used with fair sharing"));
  Decoded before = Decode(queue + "---\n" + config);
  EXPECT_FALSE(before.ok);
  EXPECT_THAT(before.diagnostics, HasSubstr("kueue.yaml:8:34: error: ClusterQueue \"team-a\""));
  // A configuration stored by an earlier version still loads, with a warning.
  spec::Diagnostics diags;
  DecodedKueueConfig stored;
  EXPECT_TRUE(DecodeKueueManifests(config + "---\n" + queue, "stored", &stored, &diags, KueueDecodeMode::kStored));
  EXPECT_THAT(diags.Format(), HasSubstr("stored:12:34: warning: ClusterQueue \"team-a\""));
  // Policy Never, or fair sharing off, is fine.
  EXPECT_TRUE(Decode(queue).ok);
  std::string never = queue;
  never.replace(never.find("LowerPriority"), 13, "Never");
  EXPECT_TRUE(Decode(config + "---\n" + never).ok);
}

TEST(KueueConfigTest, AdmissionScopeAndLocalQueueWeightsAreRead) {
  Decoded d = Decode(
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: ClusterQueue\n"
      "metadata: {name: shared}\n"
      "spec:\n"
      "  namespaceSelector: {}\n"
      "  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n"
      "---\n"
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: LocalQueue\n"
      "metadata: {name: team, namespace: default}\n"
      "spec: {clusterQueue: shared, fairSharing: {weight: \"2\"}}\n");
  ASSERT_TRUE(d.ok) << d.diagnostics;
  EXPECT_EQ(d.diagnostics, "");
  EXPECT_EQ(d.out.config.cluster_queues[0].admission_mode, "UsageBasedAdmissionFairSharing");
  EXPECT_EQ(d.out.config.local_queues[0].fair_sharing_weight->milli(), 2000);
}

TEST(KueueConfigTest, ResourceFlavorTolerationsAreReadAndCheckedAsKubernetesChecksThem) {
  Decoded good = Decode(
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: ResourceFlavor\n"
      "metadata: {name: spot}\n"
      "spec:\n"
      "  nodeTaints:\n"
      "  - {key: pool, value: spot, effect: PreferNoSchedule}\n"
      "  tolerations:\n"
      "  - {key: pool, operator: Equal, value: spot, effect: NoSchedule}\n"
      "  - {operator: Exists}\n"
      "  - {key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 30}\n");
  ASSERT_TRUE(good.ok) << good.diagnostics;
  EXPECT_EQ(good.diagnostics, "");
  const auto& tols = good.out.config.resource_flavors.at(0).tolerations;
  ASSERT_EQ(tols.size(), 3u);
  EXPECT_EQ(tols[0].value, "spot");
  EXPECT_EQ(tols[0].effect, "NoSchedule");
  EXPECT_EQ(tols[1].key, "");
  EXPECT_EQ(tols[1].op, "Exists");
  EXPECT_EQ(tols[1].effect, "") << "no effect: matches every effect";
  EXPECT_EQ(good.out.config.resource_flavors.at(0).node_taints.at(0).effect, "PreferNoSchedule");

  Decoded bad = Decode(
      "apiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: ResourceFlavor\n"
      "metadata: {name: spot}\n"
      "spec:\n"
      "  tolerations:\n"
      "  - {key: '', operator: Equal, value: x}\n"
      "  - {key: a, operator: Exists, value: x}\n"
      "  - {key: b, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}\n"
      "  - {key: c, operator: Exists, effect: Sometimes}\n"
      "  - {key: d, operator: Lt, value: '3'}\n");
  EXPECT_FALSE(bad.ok);
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:6:5: error: ResourceFlavor \"spot\": tolerations[]: an empty key "
                                         "needs operator Exists"));
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:7:39: error: ResourceFlavor \"spot\": tolerations[].value must be "
                                         "empty when operator is Exists"));
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:8:71: error: ResourceFlavor \"spot\": "
                                         "tolerations[].tolerationSeconds needs effect NoExecute"));
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:9:40: error: effect: \"Sometimes\" is not valid"));
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:10:24: error: operator: \"Lt\" is not valid"));
}

// waitForPodsReady.requeuingStrategy is the backoff of jobs the engine
// evicts; v1beta1 turns the block on with enable: true, v1beta2 by its
// presence.
TEST(KueueConfigTest, TheRequeuingStrategyOfWaitForPodsReadyIsRead) {
  Decoded on = Decode(
      "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
      "kind: Configuration\n"
      "waitForPodsReady:\n"
      "  enable: true\n"
      "  requeuingStrategy: {timestamp: Creation, backoffLimitCount: 3, backoffBaseSeconds: 10, backoffMaxSeconds: 40}\n");
  ASSERT_TRUE(on.ok) << on.diagnostics;
  EXPECT_EQ(on.diagnostics, "");
  ASSERT_TRUE(on.out.config.requeuing_strategy.has_value());
  EXPECT_EQ(on.out.config.requeuing_strategy->backoff_limit_count, 3);
  EXPECT_EQ(on.out.config.requeuing_strategy->backoff_base_seconds, 10);
  EXPECT_EQ(on.out.config.requeuing_strategy->backoff_max_seconds, 40);

  Decoded defaults = Decode("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {}\n");
  ASSERT_TRUE(defaults.ok) << defaults.diagnostics;
  ASSERT_TRUE(defaults.out.config.requeuing_strategy.has_value()) << "v1beta2: the block turns it on";
  EXPECT_EQ(defaults.out.config.requeuing_strategy->backoff_base_seconds, 60);
  EXPECT_EQ(defaults.out.config.requeuing_strategy->backoff_max_seconds, 3600);
  EXPECT_FALSE(defaults.out.config.requeuing_strategy->backoff_limit_count.has_value());

  Decoded off = Decode("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nwaitForPodsReady: {}\n");
  ASSERT_TRUE(off.ok) << off.diagnostics;
  EXPECT_FALSE(off.out.config.requeuing_strategy.has_value()) << "v1beta1: off unless enable: true";

  Decoded eviction = Decode(
      "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
      "waitForPodsReady: {requeuingStrategy: {timestamp: Eviction}}\n");
  EXPECT_TRUE(eviction.ok) << eviction.diagnostics;
  EXPECT_THAT(eviction.diagnostics, HasSubstr("kueue.yaml:3:51: warning: waitForPodsReady.requeuingStrategy.timestamp: "
                                              "Eviction is not acted on"));

  Decoded bad = Decode(
      "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
      "waitForPodsReady: {requeuingStrategy: {backoffBaseSeconds: -1, backoffLimit: 2}}\n");
  EXPECT_FALSE(bad.ok);
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:3:60: error: waitForPodsReady.requeuingStrategy.backoffBaseSeconds: "
                                         "expected a whole number >= 0, got"));
  EXPECT_THAT(bad.diagnostics, HasSubstr("kueue.yaml:3:64: error: unknown field \"backoffLimit\" in "
                                         "waitForPodsReady.requeuingStrategy; did you mean \"backoffLimitCount\"?"));
}

// A quoted name never closed swallows the documents after it into one
// string; it is a syntax error at the opening quote, and nothing is applied.
TEST(KueueConfigTest, AnUnterminatedQuoteIsAnErrorAtTheQuote) {
  Decoded d = Decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: \"f\n---\n"
                     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: g\n");
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.diagnostics,
            "kueue.yaml:4:9: error: invalid YAML: this quoted string is never closed (its closing quote is missing)\n");
  EXPECT_TRUE(d.out.config.resource_flavors.empty());
}

// A tag that says the value is not an integer is an error on an integer
// field, even when the text would read as one.
TEST(KueueConfigTest, AFloatTagOnAnIntegerFieldIsAnError) {
  Decoded d = Decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: high\n"
                     "value: !!float 1000\n");
  EXPECT_FALSE(d.ok);
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:5:8: error: WorkloadPriorityClass: \"value\" must be an integer"));
  Decoded fine = Decode("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: high\n"
                        "value: !!int 1000\n");
  EXPECT_TRUE(fine.ok) << fine.diagnostics;
}

TEST(KueueConfigTest, CommentsAndEmptyDocumentsAreFine) {
  Decoded d = Decode("# nothing here\n---\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                     "metadata:\n  name: f\n---\n# trailing\n");
  EXPECT_TRUE(d.ok) << d.diagnostics;
  EXPECT_EQ(d.out.config.resource_flavors.size(), 1u);
}

TEST(KueueConfigTest, NamespaceSelectorsSelectWorkspacesByTheirNameLabel) {
  Decoded d = Decode(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: team-a
    matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: [scratch]
)");
  ASSERT_TRUE(d.ok) << d.diagnostics;
  EXPECT_EQ(d.diagnostics, "");
  const auto& sel = d.out.config.cluster_queues.at(0).namespace_selector;
  ASSERT_TRUE(sel.has_value());
  EXPECT_TRUE(sel->Matches(sched::WorkspaceLabels("team-a")));
  EXPECT_FALSE(sel->Matches(sched::WorkspaceLabels("team-b")));
}

TEST(KueueConfigTest, BadNamespaceSelectorsArePositionedErrors) {
  Decoded d = Decode(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: q
spec:
  namespaceSelector:
    matchExpressions:
    - key: team
      operator: Inside
    - key: team
      operator: In
    - key: team
      operator: Exists
      values: [a]
    matchLabel: {}
)");
  EXPECT_FALSE(d.ok);
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:9:17: error: operator: \"Inside\" is not valid"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:10:7: error: operator In needs a non-empty \"values\" list"));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:12:7: error: operator Exists takes no \"values\""));
  EXPECT_THAT(d.diagnostics, HasSubstr("kueue.yaml:15:5: error: unknown field \"matchLabel\" in namespaceSelector"));
}

}  // namespace
}  // namespace tau::render
