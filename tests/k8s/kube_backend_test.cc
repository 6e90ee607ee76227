// The Kubernetes backend end to end: taugridd --backend kubernetes against
// a real control plane started by scripts/k8s-env (kube-apiserver, the
// scheduler, the controller manager, kwok GPU nodes, Kueue, KubeRay), driven
// through the real `tau` CLI: admission, Kueue's reasons, cancel, a run to
// the end, a daemon killed with -9, preemption by priority, a RayJob
// through KubeRay, an API server restart. The node agent's cases are in
// node_agent_k8s_test.cc, linked into this program: one cluster serves
// every test; `kube_backend_k8s_test WORK_DIR` starts it in WORK_DIR/cluster
// with kwok's general pod stages (pods can be held running by annotation)
// and stops it at the end. TAU_K8S_ENV_DIR=DIR uses a cluster already up
// in DIR (started with K8S_ENV_POD_STAGES=general).
#include "k8s/kube_backend_cluster.h"

namespace tau {
namespace {

using namespace kube_backend_test;  // NOLINT
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(KubeBackendTest, KueueAdmitsTwoOfThreeFourGpuJobsOnEightGpusAndCancelRemovesEveryObject) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start(kHold)) << d.log();
  std::vector<std::string> ids;
  for (const char* name : {"hold-a", "hold-b", "hold-c"}) {
    ids.push_back(Submit(d, name, 4));
  }
  auto count = [&](const std::string& state) {
    int n = 0;
    for (const char* name : {"hold-a", "hold-b", "hold-c"}) {
      n += d.State(name) == state ? 1 : 0;
    }
    return n;
  };
  ASSERT_TRUE(Eventually(60, [&] { return count("Running") == 2 && count("Queued") == 1; }))
      << "Running " << count("Running") << ", Queued " << count("Queued") << "\n" << d.log();
  std::string waiting;
  for (const char* name : {"hold-a", "hold-b", "hold-c"}) {
    if (d.State(name) == "Queued") {
      waiting = name;
    }
  }
  // Kueue's own words, once it has tried the Workload.
  testing::CommandResult why;
  EXPECT_TRUE(Eventually(30, [&] {
    why = d.Tau({"why", waiting});
    return why.out.find("insufficient") != std::string::npos;
  })) << why.out << why.err;
  EXPECT_THAT(why.out, HasSubstr("Pending: couldn't assign flavors to pod set main"));
  for (const std::string& id : ids) {
    EXPECT_EQ(ObjectsOf("jobs", id), 1u) << "one Job per job";
  }

  auto cancel = d.Tau({"cancel", "hold-a", "hold-b", "hold-c"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_TRUE(Eventually(60, [&] { return count("Cancelled") == 3; })) << d.log();
  for (const std::string& id : ids) {
    EXPECT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", id) == 0 && ObjectsOf("configmaps", id) == 0; }))
        << "objects of " << id << " left";
  }
}

TEST_F(KubeBackendTest, AJobRunsToSucceeded) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start()) << d.log();
  std::string id = Submit(d, "quick", 1);
  ASSERT_TRUE(Eventually(90, [&] { return d.State("quick") == "Succeeded"; }))
      << d.Status("quick").dump(2) << "\n" << d.log();
  EXPECT_EQ(d.Status("quick").value("exit_code", json()), 0);
  EXPECT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", id) == 0; })) << "its objects go when it ends";
}

TEST_F(KubeBackendTest, ADaemonKilledMidWayAdoptsTheRunningJobWithNoSecondObject) {
  if (home_.empty()) {
    return;
  }
  auto d = std::make_unique<Daemon>(home_);
  ASSERT_TRUE(d->Start(kHold)) << d->log();
  std::string running = Submit(*d, "survivor", 4);
  ASSERT_TRUE(Eventually(60, [&] { return d->State("survivor") == "Running"; })) << d->log();
  // One that waits: 8 GPUs while 4 of the 8 are taken.
  std::string queued = Submit(*d, "waiter", 8);
  ASSERT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", queued) == 1; })) << d->log();
  EXPECT_EQ(d->State("waiter"), "Queued");
  d->Stop(SIGKILL);
  d = std::make_unique<Daemon>(home_);
  ASSERT_TRUE(d->Start(kHold)) << d->log();
  EXPECT_EQ(d->State("survivor"), "Running") << d->log();
  EXPECT_EQ(d->Status("survivor").value("attempt", 0), 1) << "adopted, not started again";
  EXPECT_EQ(ObjectsOf("jobs", running), 1u) << "no duplicate object";
  EXPECT_EQ(d->State("waiter"), "Queued") << d->log();
  EXPECT_EQ(ObjectsOf("jobs", queued), 1u) << "the waiting job's suspended Job is adopted, not made again";
  // The room the first leaves goes to the one that waited, through Kueue.
  auto cancel = d->Tau({"cancel", "survivor"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(Eventually(60, [&] { return d->State("survivor") == "Cancelled"; })) << d->log();
  EXPECT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", running) == 0; }));
  EXPECT_TRUE(Eventually(90, [&] { return d->State("waiter") == "Running"; }))
      << d->Status("waiter").dump(2) << "\n" << d->log();
  EXPECT_EQ(d->Status("waiter").value("attempt", 0), 1);
  EXPECT_EQ(ObjectsOf("jobs", queued), 1u);
  cancel = d->Tau({"cancel", "waiter"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", queued) == 0; }));
}

TEST_F(KubeBackendTest, AHigherPriorityJobPreemptsThroughKueueAndTheVictimWaitsAgainUncharged) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start(kHold)) << d.log();
  std::string victim = Submit(d, "victim", 8, "prio-lq", "low");
  ASSERT_TRUE(Eventually(60, [&] { return d.State("victim") == "Running"; })) << d.log();
  // A checkpoint the victim wrote, where the daemon sees the claim mounted
  // (TAU_HOME/jobs/ID/checkpoints).
  const fs::path step = fs::path(home_) / "jobs" / victim / "checkpoints" / "step-0040";
  fs::create_directories(step);
  std::ofstream(step / "model.pt") << "weights";
  std::string preemptor = Submit(d, "preemptor", 8, "prio-lq", "high");
  ASSERT_TRUE(Eventually(90, [&] { return d.State("preemptor") == "Running"; }))
      << d.Status("victim").dump(2) << "\n" << d.Status("preemptor").dump(2) << "\n" << d.log();
  json v = d.Status("victim");
  EXPECT_EQ(v.value("state", ""), "Queued");
  ASSERT_FALSE(v["attempts"].empty());
  EXPECT_EQ(v["attempts"][0].value("reason", ""), "Preempted") << v.dump(2);
  EXPECT_EQ(v["retries"].value("restarts", -1), 0) << "a preemption is not charged to retry.max_restarts";
  // Its next attempt waits as a new suspended Job; the preempted one is gone.
  EXPECT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", victim) == 1; }));
  kube::ListOptions second;
  second.label_selector = "taugrid.io/job-id=" + victim + ",taugrid.io/attempt=2";
  auto next = Cluster::Get()->client().List({"batch", "v1", "jobs", "", "", ""}, second);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ((*next)["items"].size(), 1u);
  // ... told to resume from the newest checkpoint, on the claim's path.
  std::string resume_from;
  for (const json& c : (*next)["items"][0]["spec"]["template"]["spec"]["containers"]) {
    for (const json& e : c.value("env", json::array())) {
      if (e.value("name", "") == "TAU_RESUME_FROM") {
        resume_from = e.value("value", "");
      }
    }
  }
  EXPECT_EQ(resume_from, "/tau/checkpoints/" + victim + "/step-0040") << (*next)["items"][0].dump(2);

  auto cancel = d.Tau({"cancel", "victim", "preemptor"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(Eventually(30, [&] { return ObjectsOf("jobs", victim) == 0 && ObjectsOf("jobs", preemptor) == 0; }));
}

TEST_F(KubeBackendTest, ARayJobRunsThroughKubeRayToSucceeded) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start()) << d.log();
  fs::path dir = fs::path(g_work_dir) / "jobs" / "ray-quick";
  fs::create_directories(dir);
  std::ofstream(dir / "main.py") << "print('hello')\n";
  std::ofstream(dir / "tau.yaml") << "schema_version: 1\nname: ray-quick\nqueue: gpu-lq\n"
                                     "run: {entrypoint: main.py, workload_kind: rayjob}\n"
                                     "compute: {cpus: 1, memory: 1Gi, gpus: 1}\n";
  auto r = d.Tau({"run", "tau.yaml"}, dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = r.out.substr(0, r.out.find_first_of(" \n"));
  // KubeRay starts the cluster, submits, and polls the (fake) dashboard.
  ASSERT_TRUE(Eventually(180, [&] { return d.State("ray-quick") == "Succeeded"; }))
      << d.Status("ray-quick").dump(2) << "\n" << d.log();
  EXPECT_EQ(d.Status("ray-quick").value("exit_code", json()), 0);
}

// The platform team's commands, through a daemon that has only the chart's
// RBAC: server-side apply of cluster-scoped and workspace objects (and the
// namespace check before it), reading them back with status, deleting them.
TEST_F(KubeBackendTest, TheChartsServiceAccountAppliesReadsAndDeletesKueueObjects) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start()) << d.log();
  const fs::path dir = fs::path(g_work_dir) / "admin";
  fs::create_directories(dir);
  std::ofstream(dir / "queues.yaml") << R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: rbac-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: rbac-cq
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: rbac-flavor
          resources:
            - {name: nvidia.com/gpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: rbac-lq
  namespace: default
spec:
  clusterQueue: rbac-cq
)";
  auto applied = d.Tau({"admin", "apply", "-f", "queues.yaml"}, dir.string());
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err << d.log();
  EXPECT_EQ(applied.out, "ResourceFlavor/rbac-flavor created\nClusterQueue/rbac-cq created\nLocalQueue/default/rbac-lq created\n");
  testing::CommandResult got;
  EXPECT_TRUE(Eventually(30, [&] {
    got = d.Tau({"admin", "get", "ClusterQueue", "rbac-cq"});
    return got.exit_code == 0 && got.out.find("type: Active") != std::string::npos;
  })) << got.out << got.err;
  for (auto [kind, name] : {std::pair{"LocalQueue", "rbac-lq"}, {"ClusterQueue", "rbac-cq"}, {"ResourceFlavor", "rbac-flavor"}}) {
    auto deleted = d.Tau({"admin", "delete", kind, name});
    EXPECT_EQ(deleted.exit_code, 0) << kind << " " << name << ": " << deleted.out << deleted.err;
  }
  EXPECT_TRUE(Eventually(30, [&] {
    return !Cluster::Get()->client().Get({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "rbac-cq", ""}).ok();
  }));
}

// Last: it leaves the cluster with an API server this process started.
TEST_F(KubeBackendTest, TheDaemonFollowsTheClusterAcrossAnApiServerRestart) {
  if (home_.empty()) {
    return;
  }
  if (!Cluster::Get()->owned()) {
    GTEST_SKIP() << "TAU_K8S_ENV_DIR names a cluster this test did not start; it does not restart its API server";
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start(kHold)) << d.log();
  std::string before = Submit(d, "before-restart", 4);
  ASSERT_TRUE(Eventually(60, [&] { return d.State("before-restart") == "Running"; })) << d.log();
  ASSERT_TRUE(Cluster::Get()->RestartApiServer().ok());
  ASSERT_TRUE(Eventually(90, [&] {
    kube::ListOptions one;
    one.limit = 1;
    return Cluster::Get()->client().List({"", "v1", "namespaces", "", "", ""}, one).ok();
  })) << "the API server did not come back";
  // Admitted after the restart: the reflectors watch again.
  std::string after = Submit(d, "after-restart", 4);
  EXPECT_TRUE(Eventually(90, [&] { return d.State("after-restart") == "Running"; }))
      << d.Status("after-restart").dump(2) << "\n" << d.log();
  EXPECT_EQ(d.State("before-restart"), "Running");
  EXPECT_EQ(ObjectsOf("jobs", before), 1u);
  auto cancel = d.Tau({"cancel", "before-restart", "after-restart"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(Eventually(60, [&] { return ObjectsOf("jobs", before) == 0 && ObjectsOf("jobs", after) == 0; }));
}

}  // namespace
}  // namespace tau

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tau::kube_backend_test::g_work_dir = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "kube-backend-k8s").string();
  std::filesystem::create_directories(tau::kube_backend_test::g_work_dir);
  ::testing::AddGlobalTestEnvironment(new tau::kube_backend_test::Cluster);
  return RUN_ALL_TESTS();
}
