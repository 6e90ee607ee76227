// Kueue configuration through the control plane: tau admin apply/get/delete,
// quota-limited admission with pending reasons, tau why, tau queues,
// hold and release.

#include <gmock/gmock.h>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

using ::testing::HasSubstr;

class QueueingTest : public DaemonTest {};

constexpr char kOneCpuQueue[] = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: small
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 4Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: default
  name: small
spec:
  clusterQueue: small
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
)";

TEST_F(QueueingTest, TheDefaultConfigurationIsThereAndPrintsAsKueueYaml) {
  CommandResult r = Tau({"admin", "get"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("kind: ResourceFlavor\n"));
  EXPECT_THAT(r.out, HasSubstr("kind: ClusterQueue\n"));
  EXPECT_THAT(r.out, HasSubstr("kind: LocalQueue\n"));
  EXPECT_THAT(Tau({"admin", "get", "ClusterQueue", "default"}).out, HasSubstr("nvidia.com/gpu"));
}

TEST_F(QueueingTest, KueuesOwnExampleSetupApplies) {
  CommandResult r = Tau({"admin", "apply", "-f", SourcePath("tests/kueue/single-clusterqueue-setup.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ResourceFlavor/default-flavor created"));
  EXPECT_THAT(r.out, HasSubstr("ClusterQueue/cluster-queue created"));
  EXPECT_THAT(r.out, HasSubstr("LocalQueue/default/user-queue created"));
  CommandResult again = Tau({"admin", "apply", "-f", SourcePath("tests/kueue/single-clusterqueue-setup.yaml")});
  EXPECT_THAT(again.out, HasSubstr("ClusterQueue/cluster-queue unchanged"));
  CommandResult gpu = Tau({"admin", "apply", "-f", SourcePath("tests/kueue/cohort-gpu-setup.yaml")});
  EXPECT_EQ(gpu.exit_code, 0) << gpu.err;
  EXPECT_THAT(gpu.err, HasSubstr("v1beta1 is deprecated"));
  EXPECT_THAT(Tau({"admin", "get", "ClusterQueue", "team-b"}).out, HasSubstr("cohortName: research"));
}

TEST_F(QueueingTest, BadManifestsArePositionedErrorsAndChangeNothing) {
  WriteFile("bad.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: x\nspec:\n  queueingStrategy: FIFO\n");
  CommandResult r = Tau({"admin", "apply", "-f", "bad.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:6:21: error: queueingStrategy: \"FIFO\" is not valid"));
  EXPECT_EQ(Tau({"admin", "get", "ClusterQueue", "x"}).exit_code, 1);
}

TEST_F(QueueingTest, AOneCpuQueueRunsOneJobAndTellsWhyTheOthersWait) {
  WriteFile("small.yaml", kOneCpuQueue);
  ASSERT_EQ(Tau({"admin", "apply", "-f", "small.yaml"}).exit_code, 0);
  std::string spec = WriteSpec("one.yaml",
      "schema_version: 1\nname: one-cpu\nqueue: small\nrun:\n  entrypoint: 'sleep 30'\ncompute:\n  cpus: 1\n  memory: 256Mi\n");
  std::string a = Submit(spec), b = Submit(spec), c = Submit(spec);
  // Admission runs right after each submit is acknowledged.
  ASSERT_TRUE(WaitForState(a, "Running"));
  for (const std::string& id : {b, c}) {
    ASSERT_TRUE(WaitUntil([&] { return Job(id)["reason"] == "WaitingForQuota"; })) << Job(id).dump();
    EXPECT_EQ(Job(id)["state"], "Queued");
  }
  // The running one waits for nothing.
  EXPECT_THAT(Tau({"why", a}).out, HasSubstr("is Running.\nIt runs (attempt 1): no pending reason.\n"));
  CommandResult why = Tau({"why", c});
  EXPECT_THAT(why.out, HasSubstr("is Queued."));
  EXPECT_THAT(why.out, HasSubstr("WaitingForQuota"));
  EXPECT_THAT(why.out, HasSubstr("position 2"));
  EXPECT_THAT(why.out, HasSubstr("It can start when quota is released by:\n  " + a + " (one-cpu) in default/small"));
  CommandResult why_json = Tau({"why", c, "-o", "json"});
  ASSERT_EQ(why_json.exit_code, 0) << why_json.err;
  EXPECT_EQ(nlohmann::json::parse(why_json.out)["reason"], "WaitingForQuota");
  EXPECT_THAT(Tau({"why", c, "-o", "yaml"}).out, HasSubstr("reason: WaitingForQuota\n"));
  CommandResult events = Tau({"events", c, "-o", "json"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  nlohmann::json event_list = nlohmann::json::parse(events.out);
  ASSERT_TRUE(event_list.is_array()) << events.out;
  ASSERT_FALSE(event_list.empty());
  EXPECT_EQ(event_list[0]["job_id"], c);
  EXPECT_THAT(Tau({"events", c, "-o", "yaml"}).out, HasSubstr("job_id: " + c + "\n"));
  CommandResult queues = Tau({"queues", "-o", "json"});
  nlohmann::json q = nlohmann::json::parse(queues.out);
  bool found = false;
  for (const auto& cq : q["cluster_queues"]) {
    if (cq["name"] != "small") continue;
    found = true;
    EXPECT_EQ(cq["pending"], 2);
    EXPECT_EQ(cq["admitted"], 1);
    EXPECT_EQ(cq["resources"][0]["used"], "1");
  }
  EXPECT_TRUE(found) << queues.out;
  EXPECT_THAT(Tau({"queues"}).out, HasSubstr("CLUSTERQUEUE"));
  // Finishing the running one admits the next.
  Tau({"cancel", a});
  ASSERT_TRUE(WaitForState(b, "Running"));
  EXPECT_EQ(Job(c)["state"], "Queued");
}

TEST_F(QueueingTest, HeldJobsKeepTheirPlaceAndPrioritiesOrderTheQueue) {
  WriteFile("small.yaml", kOneCpuQueue);
  ASSERT_EQ(Tau({"admin", "apply", "-f", "small.yaml"}).exit_code, 0);
  std::string spec = WriteSpec("one.yaml",
      "schema_version: 1\nname: w\nqueue: small\nrun:\n  entrypoint: 'sleep 30'\ncompute:\n  cpus: 1\n  memory: 256Mi\n");
  std::string running = Submit(spec);
  std::string low = Submit(spec);
  std::string high = Submit(spec, {"--priority", "high"});
  ASSERT_TRUE(WaitUntil([&] { return Tau({"why", high}).out.find("position 1") != std::string::npos; }));
  ASSERT_EQ(Tau({"hold", high}).exit_code, 0);
  EXPECT_THAT(Tau({"why", high}).out, HasSubstr("held"));
  Tau({"cancel", running});
  ASSERT_TRUE(WaitForState(low, "Running"));  // the held one kept its place but was passed over
  EXPECT_EQ(Job(high)["state"], "Queued");
  ASSERT_EQ(Tau({"release", high}).exit_code, 0);
  Tau({"cancel", low});
  ASSERT_TRUE(WaitForState(high, "Running"));
  // set-priority moves a queued job up its queue.
  std::string later = Submit(spec);
  ASSERT_TRUE(WaitUntil([&] { return Tau({"why", later}).out.find("position 1") != std::string::npos; }));
  ASSERT_EQ(Tau({"set-priority", later, "high"}).exit_code, 0) << Tau({"set-priority", later, "high"}).err;
  EXPECT_EQ(Job(later)["priority_class"], "high");
  EXPECT_EQ(Tau({"set-priority", later, "nope"}).exit_code, 1);
  CommandResult unknown = Tau({"run", spec, "--priority", "urgent"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("WorkloadPriorityClass \"urgent\" does not exist"));
}

TEST_F(QueueingTest, AHighPriorityJobPreemptsALowOneWhichIsRequeuedAndFinishesLater) {
  WriteFile("preempt.yaml", std::string(kOneCpuQueue) + R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: small
spec:
  namespaceSelector: {}
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 4Gi
)");
  ASSERT_EQ(Tau({"admin", "apply", "-f", "preempt.yaml"}).exit_code, 0);
  std::string low_spec = WriteSpec("low.yaml",
      "schema_version: 1\nname: low\nqueue: small\nrun:\n  entrypoint: 'echo low attempt $TAU_ATTEMPT; "
      "if [ \"$TAU_ATTEMPT\" = 1 ]; then trap \"echo saving; exit 0\" TERM; while :; do sleep 0.05; done; fi'\n"
      "compute:\n  cpus: 1\n  memory: 256Mi\ncheckpoint:\n  grace_period: 10s\n");
  std::string low = Submit(low_spec);
  ASSERT_TRUE(WaitUntil([&] { return Tau({"logs", low}).out.find("low attempt 1") != std::string::npos; }));
  std::string high = Submit(WriteSpec("high.yaml",
      "schema_version: 1\nname: high\nqueue: small\npriority: high\nrun:\n  entrypoint: 'sleep 0.3'\n"
      "compute:\n  cpus: 1\n  memory: 256Mi\n"));
  ASSERT_TRUE(WaitForState(high, "Succeeded"));
  ASSERT_TRUE(WaitForState(low, "Succeeded"));
  nlohmann::json job = Job(low);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["attempts"][0]["reason"], "Preempted");
  EXPECT_EQ(job["attempt"], 2);
  EXPECT_THAT(Tau({"logs", low, "--attempt", "1"}).out, HasSubstr("saving"));
  EXPECT_THAT(Tau({"logs", low}).out, HasSubstr("low attempt 2"));
  EXPECT_THAT(Tau({"events", low}).out, HasSubstr("Preempted"));
}

// The LocalQueue "small" of kOneCpuQueue with `stop_policy`.
std::string SmallLocalQueue(const std::string& stop_policy) {
  return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: default, name: small}\n"
         "spec: {clusterQueue: small, stopPolicy: " + stop_policy + "}\n";
}

TEST_F(QueueingTest, ALocalQueueStopPolicyHoldsItsJobsAndHoldAndDrainRequeuesTheRunningOne) {
  WriteFile("small.yaml", kOneCpuQueue);
  ASSERT_EQ(Tau({"admin", "apply", "-f", "small.yaml"}).exit_code, 0);
  std::string spec = WriteSpec("one.yaml",
      "schema_version: 1\nname: one-cpu\nqueue: small\nrun:\n  entrypoint: 'sleep 30'\ncompute:\n  cpus: 1\n  memory: 256Mi\n");
  std::string a = Submit(spec);
  ASSERT_TRUE(WaitForState(a, "Running"));

  WriteFile("hold.yaml", SmallLocalQueue("Hold"));
  ASSERT_EQ(Tau({"admin", "apply", "-f", "hold.yaml"}).exit_code, 0);
  std::string b = Submit(spec);
  ASSERT_TRUE(WaitUntil([&] { return Job(b)["reason"] == "LocalQueueStopped"; })) << Job(b).dump();
  CommandResult why = Tau({"why", b});
  EXPECT_THAT(why.out, HasSubstr("LocalQueue default/small is inactive: it has stopPolicy Hold"));
  EXPECT_THAT(why.out, ::testing::Not(HasSubstr("It can start when quota is released by"))) << "quota is not what it waits for";
  EXPECT_EQ(Job(a)["state"], "Running") << "Hold keeps what runs";

  WriteFile("drain.yaml", SmallLocalQueue("HoldAndDrain"));
  ASSERT_EQ(Tau({"admin", "apply", "-f", "drain.yaml"}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return Job(a)["state"] == "Queued" && Job(a)["reason"] == "LocalQueueStopped"; }))
      << Job(a).dump();
  EXPECT_THAT(Tau({"events", a}).out, HasSubstr("its LocalQueue's stopPolicy HoldAndDrain"));

  WriteFile("none.yaml", SmallLocalQueue("None"));
  ASSERT_EQ(Tau({"admin", "apply", "-f", "none.yaml"}).exit_code, 0);
  ASSERT_TRUE(WaitForState(a, "Running")) << "the older job runs again first";
  EXPECT_EQ(Job(b)["state"], "Queued");
  Tau({"cancel", a, b});
}

TEST_F(QueueingTest, WithARequeuingStrategyAPreemptedJobBacksOffBeforeItMayRunAgain) {
  WriteFile("preempt.yaml", std::string(kOneCpuQueue) + R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: small
spec:
  namespaceSelector: {}
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 4Gi
---
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  requeuingStrategy: {backoffBaseSeconds: 600}
)");
  ASSERT_EQ(Tau({"admin", "apply", "-f", "preempt.yaml"}).exit_code, 0);
  std::string low = Submit(WriteSpec("low.yaml",
      "schema_version: 1\nname: low\nqueue: small\nrun:\n  entrypoint: 'sleep 30'\ncompute:\n  cpus: 1\n  memory: 256Mi\n"));
  ASSERT_TRUE(WaitForState(low, "Running"));
  std::string high = Submit(WriteSpec("high.yaml",
      "schema_version: 1\nname: high\nqueue: small\npriority: high\nrun:\n  entrypoint: 'sleep 30'\n"
      "compute:\n  cpus: 1\n  memory: 256Mi\n"));
  ASSERT_TRUE(WaitForState(high, "Running"));
  ASSERT_TRUE(WaitUntil([&] { return Job(low)["reason"] == "Backoff"; })) << Job(low).dump();
  EXPECT_EQ(Job(low)["state"], "Queued");
  CommandResult why = Tau({"why", low});
  EXPECT_THAT(why.out, HasSubstr("Backoff"));
  EXPECT_THAT(why.out, HasSubstr("requeued after an eviction; may be admitted again in"));
  EXPECT_THAT(why.out, ::testing::Not(HasSubstr("It can start when quota is released by")));
  Tau({"cancel", low, high});
}

TEST_F(QueueingTest, FairSharingIsTurnedOnByKueuesConfigurationAndShowsWeightedShares) {
  CommandResult applied = Tau({"admin", "apply", "-f", SourcePath("tests/kueue/fair-sharing-setup.yaml")});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_THAT(applied.out, HasSubstr("Configuration/config created"));
  EXPECT_THAT(Tau({"admin", "get", "Configuration"}).out, HasSubstr("enable: true"));
  // team-a borrows from the shared pool: 3 jobs of 250m on 500m of quota.
  for (int i = 0; i < 3; ++i) {
    Submit(WriteSpec("a" + std::to_string(i) + ".yaml",
                     "schema_version: 1\nname: a" + std::to_string(i) +
                         "\nqueue: team-a\nrun:\n  entrypoint: 'sleep 30'\ncompute:\n  cpus: 250m\n  memory: 64Mi\n"));
  }
  ASSERT_TRUE(WaitUntil([&] { return Job("a2").value("state", "") == "Running"; }));
  nlohmann::json queues = nlohmann::json::parse(Tau({"queues", "-o", "json"}).out);
  EXPECT_EQ(queues["fair_sharing"], true);
  for (const auto& cq : queues["cluster_queues"]) {
    // 250m borrowed of the cohort's 2 CPUs = 125 per mille, halved by
    // weight 2 and rounded up: 63.
    if (cq["name"] == "team-a") {
      EXPECT_EQ(cq["weighted_share"], 63) << cq.dump();
    } else if (cq["name"] == "team-b") {
      EXPECT_EQ(cq["weighted_share"], 0) << cq.dump();
    }
  }
  std::string table = Tau({"queues"}).out;
  EXPECT_THAT(table, HasSubstr("WEIGHT"));
  EXPECT_THAT(table, HasSubstr("SHARE"));
}

TEST_F(QueueingTest, DeletingObjectsAndUnknownQueues) {
  CommandResult none = Tau({"run", WriteSpec("q.yaml", "schema_version: 1\nname: q\nqueue: nowhere\nrun:\n  entrypoint: 'true'\n")});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("there is no LocalQueue \"nowhere\" in workspace \"default\""));
  WriteFile("small.yaml", kOneCpuQueue);
  ASSERT_EQ(Tau({"admin", "apply", "-f", "small.yaml"}).exit_code, 0);
  EXPECT_EQ(Tau({"admin", "delete", "LocalQueue", "small"}).exit_code, 0);
  EXPECT_EQ(Tau({"admin", "get", "LocalQueue", "small"}).exit_code, 1);
  EXPECT_EQ(Tau({"admin", "delete", "LocalQueue", "small"}).exit_code, 1);
}

TEST_F(QueueingTest, ReadCommandsPrintJsonAndYaml) {
  CommandResult all = Tau({"admin", "get", "-o", "json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  nlohmann::json list = nlohmann::json::parse(all.out);
  EXPECT_EQ(list["kind"], "List");
  EXPECT_GE(list["items"].size(), 3u);
  CommandResult one = Tau({"admin", "get", "ClusterQueue", "default", "-o", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  nlohmann::json cq = nlohmann::json::parse(one.out);
  EXPECT_EQ(cq["kind"], "ClusterQueue");
  EXPECT_EQ(cq["metadata"]["name"], "default");
  EXPECT_THAT(Tau({"admin", "get", "ClusterQueue", "default", "-o", "yaml"}).out, HasSubstr("kind: ClusterQueue\n"));
  CommandResult queues = Tau({"queues", "-o", "yaml"});
  ASSERT_EQ(queues.exit_code, 0) << queues.err;
  EXPECT_THAT(queues.out, HasSubstr("cluster_queues:\n"));
  EXPECT_THAT(queues.out, HasSubstr("local_queues:\n"));
  CommandResult nodes = Tau({"nodes", "-o", "yaml"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
}

TEST_F(QueueingTest, AFolderOfManifestsApplies) {
  WriteFile("config/1-flavor.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: spot\n");
  WriteFile("config/2-priority.yaml",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: urgent\nvalue: 5\n");
  CommandResult r = Tau({"admin", "apply", "-f", "config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ResourceFlavor/spot created"));
  EXPECT_THAT(r.out, HasSubstr("WorkloadPriorityClass/urgent created"));
}

}  // namespace
}  // namespace tau::testing
