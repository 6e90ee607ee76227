// The Kubernetes backend end to end: taugridd --backend kubernetes against
// a real control plane started by scripts/k8s-env (kube-apiserver, the
// scheduler, the controller manager, kwok GPU nodes, Kueue, KubeRay), driven
// through the real `tau` CLI: admission, Kueue's reasons, cancel, a run to
// the end, a daemon killed with -9, preemption by priority, a RayJob
// through KubeRay, an API server restart. One cluster
// serves every test of this
// program; `kube_backend_k8s_test WORK_DIR` starts it in WORK_DIR/cluster
// with kwok's general pod stages (pods can be held running by annotation)
// and stops it at the end. TAU_K8S_ENV_DIR=DIR uses a cluster already up
// in DIR (started with K8S_ENV_POD_STAGES=general).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <memory>
#include <thread>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "k8s/test_cluster.h"
#include "support/subprocess.h"

namespace tau {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string g_work_dir;

// Pods held running by kwok until the test ends: its delay, and its
// jitter, which caps the delay when shorter.
const std::vector<std::string> kHold = {"--pod-annotation", "pod-complete.stage.kwok.x-k8s.io/delay=1h",
                                        "--pod-annotation", "pod-complete.stage.kwok.x-k8s.io/jitter-delay=1h"};

class Cluster : public testing::K8sTestCluster {
 public:
  Cluster() : K8sTestCluster(g_work_dir, {{"K8S_ENV_POD_STAGES", "general"}}) { instance_ = this; }
  static Cluster* Get() { return instance_; }

 protected:
  Status Prepare() override {
    // One ClusterQueue of 8 GPUs and its LocalQueue in namespace default.
    kube::ApplyOptions apply{"taugrid-k8s-test", true};
    const json objects[] = {
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "ResourceFlavor"}, {"metadata", {{"name", "default-flavor"}}}},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "ClusterQueue"},
         {"metadata", {{"name", "gpu-cq"}}},
         {"spec",
          {{"namespaceSelector", json::object()},
           {"resourceGroups",
            json::array({{{"coveredResources", {"cpu", "memory", "nvidia.com/gpu"}},
                          {"flavors",
                           json::array({{{"name", "default-flavor"},
                                         {"resources",
                                          json::array({{{"name", "cpu"}, {"nominalQuota", "64"}},
                                                       {{"name", "memory"}, {"nominalQuota", "512Gi"}},
                                                       {{"name", "nvidia.com/gpu"}, {"nominalQuota", "8"}}})}}})}}})}}}},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "LocalQueue"},
         {"metadata", {{"name", "gpu-lq"}, {"namespace", "default"}}},
         {"spec", {{"clusterQueue", "gpu-cq"}}}},
        // 8 GPUs where a higher priority preempts a lower one.
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "ClusterQueue"},
         {"metadata", {{"name", "prio-cq"}}},
         {"spec",
          {{"namespaceSelector", json::object()},
           {"preemption", {{"withinClusterQueue", "LowerPriority"}}},
           {"resourceGroups",
            json::array({{{"coveredResources", {"cpu", "memory", "nvidia.com/gpu"}},
                          {"flavors",
                           json::array({{{"name", "default-flavor"},
                                         {"resources",
                                          json::array({{{"name", "cpu"}, {"nominalQuota", "64"}},
                                                       {{"name", "memory"}, {"nominalQuota", "512Gi"}},
                                                       {{"name", "nvidia.com/gpu"}, {"nominalQuota", "8"}}})}}})}}})}}}},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "LocalQueue"},
         {"metadata", {{"name", "prio-lq"}, {"namespace", "default"}}},
         {"spec", {{"clusterQueue", "prio-cq"}}}},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "WorkloadPriorityClass"},
         {"metadata", {{"name", "low"}}},
         {"value", 10}},
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "WorkloadPriorityClass"},
         {"metadata", {{"name", "high"}}},
         {"value", 1000}},
    };
    const kube::ResourceRef refs[] = {{"kueue.x-k8s.io", "v1beta2", "resourceflavors", "", "default-flavor", ""},
                                      {"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "gpu-cq", ""},
                                      {"kueue.x-k8s.io", "v1beta2", "localqueues", "default", "gpu-lq", ""},
                                      {"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "prio-cq", ""},
                                      {"kueue.x-k8s.io", "v1beta2", "localqueues", "default", "prio-lq", ""},
                                      {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "", "low", ""},
                                      {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "", "high", ""}};
    for (int i = 0; i < 7; ++i) {
      if (auto applied = client().Apply(refs[i], objects[i], apply); !applied.ok()) {
        return Status(applied.error().code(), "creating the queues: " + applied.error().ToString());
      }
    }
    // taugridd acts as the Helm chart's ServiceAccount, with the chart's
    // RBAC and workspace namespace "default": every verb the chart's Roles
    // lack fails a test below.
    const std::string identities = (fs::path(g_work_dir) / "chart-identities").string();
    daemon_kubeconfig_ = identities + "/server.kubeconfig";
    agent_kubeconfig_ = identities + "/agent.kubeconfig";
    testing::CommandResult sa = testing::RunCommand({testing::SourcePath("tests/k8s/chart_service_account.sh"),
                                                     testing::SourcePath(""), dir(), identities, "default"});
    if (sa.exit_code != 0) {
      return InternalError("giving taugridd the chart's ServiceAccount (tests/k8s/chart_service_account.sh): " +
                           sa.out + sa.err);
    }
    return Status::Ok();
  }

 public:
  // The kubeconfig taugridd runs with: a token of the chart's
  // ServiceAccount, not the cluster's admin.
  const std::string& daemon_kubeconfig() const { return daemon_kubeconfig_; }
  // The node agent's: a token of the chart's agent ServiceAccount.
  const std::string& agent_kubeconfig() const { return agent_kubeconfig_; }

 private:
  static inline Cluster* instance_ = nullptr;
  std::string daemon_kubeconfig_, agent_kubeconfig_;
};

// A taugridd --backend kubernetes of its own TAU_HOME, and the tau CLI
// against it.
class Daemon {
 public:
  explicit Daemon(std::string home) : home_(std::move(home)) { fs::create_directories(home_); }
  ~Daemon() { Stop(SIGTERM); }

  bool Start(const std::vector<std::string>& extra = {}) {
    fs::remove(fs::path(home_) / "server.json");
    std::vector<std::string> args = {testing::BinPath("taugridd"), "--home", home_, "--backend", "kubernetes",
                                     "--kubeconfig", Cluster::Get()->daemon_kubeconfig()};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string log = home_ + "/taugridd.log";
      FILE* out = std::freopen(log.c_str(), "a", stdout);
      (void)out;
      ::dup2(STDOUT_FILENO, STDERR_FILENO);
      std::vector<char*> argv;
      for (std::string& a : args) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 1200; ++i) {
      std::ifstream in(fs::path(home_) / "server.json");
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().find("\"url\"") != std::string::npos) {
        return true;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  void Stop(int sig) {
    if (pid_ <= 0) {
      return;
    }
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  testing::CommandResult Tau(const std::vector<std::string>& args, const std::string& cwd = "") {
    std::vector<std::string> argv = {testing::BinPath("tau")};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv, cwd, {{"TAU_HOME", home_}});
  }
  json Status(const std::string& job) {
    auto r = Tau({"status", job, "-o", "json"});
    json out = json::parse(r.out, nullptr, false);
    return out.is_discarded() ? json::object() : out;
  }
  std::string State(const std::string& job) { return Status(job).value("state", "?"); }
  std::string log() const {
    std::ifstream in(fs::path(home_) / "taugridd.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string home_;
  pid_t pid_ = -1;
};

bool Eventually(int seconds, const std::function<bool()>& done) {
  for (int i = 0; i < seconds * 4; ++i) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return done();
}

// A job folder with a spec `name` asking for `gpus` GPUs on `queue`.
std::string JobDir(const std::string& name, int gpus, const std::string& queue, const std::string& priority) {
  fs::path dir = fs::path(g_work_dir) / "jobs" / name;
  fs::create_directories(dir);
  std::ofstream(dir / "run.sh") << "echo hello\n";
  std::ofstream(dir / "tau.yaml") << "schema_version: 1\nname: " << name << "\nqueue: " << queue
                                  << (priority.empty() ? "" : "\npriority: " + priority)
                                  << "\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1, memory: 1Gi, gpus: " << gpus
                                  << "}\n";
  return dir.string();
}

std::string Submit(Daemon& d, const std::string& name, int gpus, const std::string& queue = "gpu-lq",
                   const std::string& priority = "") {
  auto r = d.Tau({"run", "tau.yaml"}, JobDir(name, gpus, queue, priority));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r.out.substr(0, r.out.find_first_of(" \n"));
}

// The objects of kind `resource` labelled with the job's id.
size_t ObjectsOf(const std::string& resource, const std::string& job_id) {
  kube::ListOptions options;
  options.label_selector = "taugrid.io/job-id=" + job_id;
  kube::ResourceRef ref = resource == "configmaps" ? kube::ResourceRef{"", "v1", "configmaps", "", "", ""}
                                                   : kube::ResourceRef{"batch", "v1", resource, "", "", ""};
  auto list = Cluster::Get()->client().List(ref, options);
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  return list.ok() ? (*list)["items"].size() : 0;
}

class KubeBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Cluster::Get()->Usable()) {
      if (!Cluster::Get()->skip_reason().empty()) {
        GTEST_SKIP() << Cluster::Get()->skip_reason();
      }
      return;
    }
    home_ = (fs::path(g_work_dir) / ("home-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())))
                .string();
    fs::remove_all(home_);
  }
  std::string home_;
};

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

// The nodes the pods of one attempt of a job are placed on.
std::set<std::string> NodesOf(const std::string& job_id, int attempt) {
  kube::ListOptions mine;
  mine.label_selector = "taugrid.io/job-id=" + job_id + ",taugrid.io/attempt=" + std::to_string(attempt);
  auto pods = Cluster::Get()->client().List({"", "v1", "pods", "", "", ""}, mine);
  std::set<std::string> nodes;
  if (!pods.ok()) return nodes;
  for (const json& pod : (*pods)["items"]) {
    const std::string node = pod["spec"].value("nodeName", "");
    if (!node.empty()) nodes.insert(node);
  }
  return nodes;
}

json GetNode(const std::string& name) {
  auto node = Cluster::Get()->client().Get({"", "v1", "nodes", "", name, ""});
  return node.ok() ? *node : json::object();
}

std::string NodeCondition(const json& node) {
  for (const json& c : node["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "TauGridGPUHealthy") return c.value("status", "");
  }
  return "";
}

bool AgentTainted(const json& node) {
  for (const json& t : node["spec"].value("taints", json::array())) {
    if (t.value("key", "") == "taugrid.io/gpu-unhealthy" && t.value("effect", "") == "NoSchedule") return true;
  }
  return false;
}

// taugrid-agent on one kwok node, its GPUs from the fake NVML library.
class Agent {
 public:
  // `extra`: more flags; `kubeconfig`: another than the chart's agent
  // identity.
  Agent(std::string node, std::string scenario, int metrics_port, const std::string& tag = "",
        std::vector<std::string> extra = {}, std::string kubeconfig = "") {
    if (kubeconfig.empty()) kubeconfig = Cluster::Get()->agent_kubeconfig();
    log_ = fs::path(g_work_dir) / ("agent-" + node + tag + ".log");
    std::ofstream(log_, std::ios::trunc).close();  // not an earlier run's, before the agent opens it
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(log_.c_str(), "w", stdout);
      (void)out;
      ::dup2(STDOUT_FILENO, STDERR_FILENO);
      ::setenv("TAU_NVML_LIBRARY", TAU_FAKE_NVML_PATH, 1);
      ::setenv("TAU_FAKE_NVML", scenario.c_str(), 1);
      std::vector<std::string> args = {testing::BinPath("taugrid-agent"), "--node", node, "--kubeconfig", kubeconfig,
                                       "--poll-interval", "200ms", "--metrics-address", "127.0.0.1", "--metrics-port",
                                       std::to_string(metrics_port), "--log-format", "logfmt",
                                       // The chart's Role for the lease is in its release namespace.
                                       "--lease-namespace", "taugrid-system",
                                       // A pod's name: a restarted agent takes its lease back at once.
                                       "--identity", "agent-" + node};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~Agent() { Stop(SIGTERM); }
  void Stop(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Sends `signal` and waits up to `seconds` for the agent to end; true
  // when it did (it is killed otherwise).
  bool StopWithin(int signal, int seconds) {
    if (pid_ <= 0) return true;
    ::kill(pid_, signal);
    for (int i = 0; i < seconds * 20; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Stop(SIGKILL);
    return false;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
};

// The agent's /metrics (curl through sh: RunCommand does not search PATH).
testing::CommandResult Scrape(int port) {
  return testing::RunCommand({"/bin/sh", "-c", "curl -sf http://127.0.0.1:" + std::to_string(port) + "/metrics"});
}

std::string FakeGpus(int count, const std::string& events) {
  json devices = json::array();
  for (int i = 0; i < count; ++i) {
    devices.push_back({{"uuid", "GPU-kwok-" + std::to_string(i)}, {"name", "NVIDIA H100 80GB HBM3"},
                       {"memory_total_mib", 81559}, {"temperature_c", 40}, {"power_mw", 70000},
                       {"utilization_gpu", 0}, {"ecc_uncorrected", 0}, {"ecc_corrected", 0}});
  }
  return json{{"driver_version", "580.159.03"}, {"cuda_version", 13000}, {"devices", devices},
              {"events", json::parse(events)}}
      .dump();
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// The node agent end to end: a fatal XID on a GPU of the node a job runs
// on makes the node's condition False and taints it; the job is stopped
// and retried, uncharged, on the other node, where kube-scheduler also
// puts new work; an operator's clear removes the taint.
TEST_F(KubeBackendTest, AFatalGpuFaultTaintsItsNodeAndTheJobOnItMovesToTheOtherNode) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start(kHold)) << d.log();
  const std::string id = Submit(d, "on-faulty-node", 4);
  ASSERT_TRUE(Eventually(60, [&] { return d.State("on-faulty-node") == "Running" && NodesOf(id, 1).size() == 1; }))
      << d.log();
  const std::string bad = *NodesOf(id, 1).begin();

  const fs::path scenario = fs::path(g_work_dir) / "fake-nvml.json";
  std::ofstream(scenario) << FakeGpus(8, "[]");
  const int port = FreePort();
  auto agent = std::make_unique<Agent>(bad, scenario.string(), port);
  ASSERT_TRUE(Eventually(30, [&] { return NodeCondition(GetNode(bad)) == "True"; })) << agent->log();
  EXPECT_FALSE(AgentTainted(GetNode(bad)));

  // XID 95 (uncontained ECC error) on GPU 1: within 10 s the node says so.
  {
    std::ofstream(scenario.string() + ".tmp") << FakeGpus(8, R"([{"at_s": 0, "gpu": 1, "xid": 95}])");
    fs::rename(scenario.string() + ".tmp", scenario);
  }
  ASSERT_TRUE(Eventually(10, [&] {
    json node = GetNode(bad);
    return NodeCondition(node) == "False" && AgentTainted(node);
  })) << GetNode(bad).dump(2) << "\n" << agent->log();
  json node = GetNode(bad);
  json gpus = json::parse(node["metadata"]["annotations"].value("taugrid.io/gpu-health", "[]"));
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[1]["health"], "Unhealthy");
  EXPECT_EQ(gpus[0]["health"], "Healthy");
  // kubectl describe node shows why: a Warning Event on the Node.
  kube::ListOptions on_node;
  on_node.field_selector = "involvedObject.kind=Node,involvedObject.name=" + bad;
  auto node_events = Cluster::Get()->client().List({"", "v1", "events", "default", "", ""}, on_node);
  ASSERT_TRUE(node_events.ok()) << node_events.status().ToString();
  bool warned = false;
  for (const json& e : (*node_events)["items"]) {
    warned |= e.value("type", "") == "Warning" && e.value("reason", "") == "XidFatal" &&
              e.value("message", "").find("XID 95") != std::string::npos;
  }
  EXPECT_TRUE(warned) << node_events->dump(2) << "\n" << agent->log();

  // The job on it is stopped and retried on the other node, not charged.
  ASSERT_TRUE(Eventually(90, [&] {
    return d.Status("on-faulty-node").value("attempt", 0) == 2 && d.State("on-faulty-node") == "Running" &&
           NodesOf(id, 2).size() == 1;
  })) << d.Status("on-faulty-node").dump(2) << "\n" << d.log();
  EXPECT_NE(*NodesOf(id, 2).begin(), bad);
  auto events = d.Tau({"events", "on-faulty-node"});
  EXPECT_THAT(events.out, HasSubstr("GpuFault")) << events.out << events.err;
  // New work goes to the healthy node too (kube-scheduler, the taint).
  const std::string fresh = Submit(d, "after-fault", 4);
  ASSERT_TRUE(Eventually(60, [&] { return d.State("after-fault") == "Running" && NodesOf(fresh, 1).size() == 1; }))
      << d.log();
  EXPECT_NE(*NodesOf(fresh, 1).begin(), bad);

  // tau nodes shows it; the agent's metrics carry dcgm-exporter's names.
  auto nodes = d.Tau({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("Unhealthy"));
  EXPECT_THAT(nodes.out, HasSubstr("tainted"));
  EXPECT_THAT(nodes.out, HasSubstr("GPU 1 GPU-kwok-1: Unhealthy"));
  auto metrics = Scrape(port);
  EXPECT_THAT(metrics.out, HasSubstr("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\",UUID=\"GPU-kwok-1\""));
  EXPECT_THAT(metrics.out, HasSubstr("taugrid_agent_node_healthy{node=\"" + bad + "\"} 0"));

  // The agent is killed and replaced (a pod restart, an upgrade). NVML
  // does not replay the XID to the new one; the Node's record keeps the
  // fault until an operator clears it.
  {
    std::ofstream(scenario.string() + ".tmp") << FakeGpus(8, "[]");
    fs::rename(scenario.string() + ".tmp", scenario);
  }
  agent->Stop(SIGKILL);
  const int port2 = FreePort();
  agent = std::make_unique<Agent>(bad, scenario.string(), port2, "-2");
  ASSERT_TRUE(Eventually(30, [&] { return agent->log().find("stays Unhealthy") != std::string::npos; }))
      << agent->log();
  {
    EXPECT_TRUE(Eventually(10, [&] {
      return Scrape(port2).out.find("taugrid_agent_node_healthy{node=\"" + bad + "\"} 0") != std::string::npos;
    })) << Scrape(port2).out;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several polls of the new agent
  node = GetNode(bad);
  EXPECT_EQ(NodeCondition(node), "False") << node.dump(2) << "\n" << agent->log();
  EXPECT_TRUE(AgentTainted(node)) << node.dump(2);

  // After the repair the operator clears the fault: the taint goes.
  auto cleared = Cluster::Get()->client().MergePatch({"", "v1", "nodes", "", bad, ""},
                                                     {{"metadata", {{"annotations", {{"taugrid.io/gpu-clear", "all"}}}}}});
  ASSERT_TRUE(cleared.ok()) << cleared.status().ToString();
  EXPECT_TRUE(Eventually(30, [&] {
    json n = GetNode(bad);
    return NodeCondition(n) == "True" && !AgentTainted(n) &&
           !n["metadata"].value("annotations", json::object()).contains("taugrid.io/gpu-clear");
  })) << GetNode(bad).dump(2) << "\n" << agent->log();

  auto cancel = d.Tau({"cancel", "on-faulty-node", "after-fault"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(Eventually(60, [&] { return ObjectsOf("jobs", id) == 0 && ObjectsOf("jobs", fresh) == 0; }));
}

// A copy of the agent's kubeconfig that points at `server` instead.
std::string KubeconfigFor(const std::string& server, const std::string& name) {
  std::ifstream in(Cluster::Get()->agent_kubeconfig());
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const size_t at = config.find("server: ");
  const size_t end = config.find('\n', at);
  config.replace(at, end - at, "server: " + server);
  const fs::path path = fs::path(g_work_dir) / name;
  std::ofstream(path) << config;
  return path.string();
}

// One agent per node (the node's Lease); a fault found while the API
// server cannot be reached survives a restart (the state file); a stop
// while the API server does not answer is prompt.
TEST_F(KubeBackendTest, OneAgentReportsPerNodeAndKeepsItsFaultsOnTheNode) {
  if (home_.empty()) {
    return;
  }
  auto nodes = Cluster::Get()->client().List({"", "v1", "nodes", "", "", ""});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  std::string name;
  for (const json& n : (*nodes)["items"]) {
    if (NodeCondition(n) != "False") name = n["metadata"]["name"];
  }
  ASSERT_FALSE(name.empty()) << nodes->dump(2);
  const fs::path scenario = fs::path(g_work_dir) / "fake-nvml-lease.json";
  std::ofstream(scenario) << FakeGpus(8, "[]");

  // A second agent on the node waits, saying who holds it; when the first
  // stops it takes over at once (the first released the lease).
  auto first = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-first", std::vector<std::string>{"--identity", "first"});
  ASSERT_TRUE(Eventually(30, [&] { return first->log().find("reporting for the node") != std::string::npos; }))
      << first->log();
  auto second = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-second", std::vector<std::string>{"--identity", "second"});
  ASSERT_TRUE(Eventually(30, [&] { return second->log().find("another agent reports for this node") != std::string::npos; }))
      << second->log();
  EXPECT_THAT(second->log(), HasSubstr("holder=first"));
  EXPECT_THAT(second->log(), Not(HasSubstr("reporting for the node")));
  auto lease = Cluster::Get()->client().Get({"coordination.k8s.io", "v1", "leases", "taugrid-system", "taugrid-agent-" + name, ""});
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "first");
  // Both see XID 95 on GPU 3; the holder reports it; the operator clears it
  // through the holder. The agent that takes over keeps it cleared: it
  // starts from the Node's record, not from what it saw while waiting.
  {
    std::ofstream(scenario.string() + ".tmp") << FakeGpus(8, R"([{"at_s": 0, "gpu": 3, "xid": 95}])");
    fs::rename(scenario.string() + ".tmp", scenario);
  }
  ASSERT_TRUE(Eventually(30, [&] { return AgentTainted(GetNode(name)); })) << first->log();
  ASSERT_TRUE(Eventually(30, [&] { return second->log().find("XID event") != std::string::npos; })) << second->log();
  ASSERT_TRUE(Cluster::Get()
                  ->client()
                  .MergePatch({"", "v1", "nodes", "", name, ""},
                              {{"metadata", {{"annotations", {{"taugrid.io/gpu-clear", "all"}}}}}})
                  .ok());
  ASSERT_TRUE(Eventually(30, [&] { return NodeCondition(GetNode(name)) == "True" && !AgentTainted(GetNode(name)); }))
      << first->log();
  ASSERT_TRUE(first->StopWithin(SIGTERM, 20));
  ASSERT_TRUE(Eventually(15, [&] { return second->log().find("reporting for the node") != std::string::npos; }))
      << second->log();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several polls of the new holder
  EXPECT_EQ(NodeCondition(GetNode(name)), "True") << second->log();
  EXPECT_FALSE(AgentTainted(GetNode(name))) << "a fault the operator cleared came back\n" << second->log();
  {
    std::ofstream(scenario.string() + ".tmp") << FakeGpus(8, "[]");
    fs::rename(scenario.string() + ".tmp", scenario);
  }
  second->Stop(SIGTERM);
  // A stopped agent leaves no Lease behind (an uninstall leaves none).
  auto gone = Cluster::Get()->client().Get({"coordination.k8s.io", "v1", "leases", "taugrid-system", "taugrid-agent-" + name, ""});
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << (gone.ok() ? gone->dump(2) : gone.status().ToString());

  // Cut off from the API server (nothing listens there), an agent finds
  // XID 95 and keeps it in its state file; killed, the next agent (the API
  // server reachable again, NVML not replaying the XID) restores it and
  // the node is tainted.
  const fs::path state = fs::path(g_work_dir) / "agent-state" / "faults.json";
  fs::create_directories(state.parent_path());
  std::ofstream(scenario.string() + ".xid") << FakeGpus(8, R"([{"at_s": 0, "gpu": 2, "xid": 95}])");
  const std::string unreachable = KubeconfigFor("https://127.0.0.1:" + std::to_string(FreePort()), "unreachable.kubeconfig");
  auto cut_off = std::make_unique<Agent>(name, scenario.string() + ".xid", FreePort(), "-cut-off",
                                         std::vector<std::string>{"--state-file", state.string()}, unreachable);
  ASSERT_TRUE(Eventually(30, [&] {
    std::ifstream in(state);
    std::stringstream text;
    text << in.rdbuf();
    return text.str().find("GPU-kwok-2") != std::string::npos;
  })) << cut_off->log();
  cut_off->Stop(SIGKILL);
  auto restarted = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-restarted",
                                           std::vector<std::string>{"--state-file", state.string()});
  ASSERT_TRUE(Eventually(30, [&] {
    json n = GetNode(name);
    return NodeCondition(n) == "False" && AgentTainted(n);
  })) << GetNode(name).dump(2) << "\n" << restarted->log();
  EXPECT_THAT(restarted->log(), HasSubstr("stays Unhealthy"));
  // Cleared by the operator: the state file forgets it too.
  auto cleared = Cluster::Get()->client().MergePatch({"", "v1", "nodes", "", name, ""},
                                                     {{"metadata", {{"annotations", {{"taugrid.io/gpu-clear", "all"}}}}}});
  ASSERT_TRUE(cleared.ok()) << cleared.status().ToString();
  EXPECT_TRUE(Eventually(30, [&] {
    json n = GetNode(name);
    std::ifstream in(state);
    std::stringstream text;
    text << in.rdbuf();
    return NodeCondition(n) == "True" && !AgentTainted(n) && text.str() == "[]";
  })) << GetNode(name).dump(2) << "\n" << restarted->log();
  restarted->Stop(SIGTERM);

  // An API server that accepts connections and never answers: SIGTERM
  // still ends the agent promptly (well within a pod's 30 s grace).
  int frozen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(frozen, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(frozen, 64), 0);
  ASSERT_EQ(::getsockname(frozen, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string silent = KubeconfigFor("https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "silent.kubeconfig");
  auto stuck = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-stuck", std::vector<std::string>{}, silent);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // inside its first call
  EXPECT_TRUE(stuck->StopWithin(SIGTERM, 15)) << stuck->log();
  ::close(frozen);
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
  tau::g_work_dir = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "kube-backend-k8s").string();
  std::filesystem::create_directories(tau::g_work_dir);
  ::testing::AddGlobalTestEnvironment(new tau::Cluster);
  return RUN_ALL_TESTS();
}
