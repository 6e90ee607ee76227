#pragma once

// What the Kubernetes backend's end-to-end tests share (kube_backend_test.cc
// and node_agent_k8s_test.cc, one program and one cluster): the cluster with
// the test's queues and the chart's identities, a taugridd of its own home
// and the tau CLI against it, job folders, and the fixture.

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

namespace tau::kube_backend_test {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Where the cluster, the daemons' homes and the logs go (main sets it).
inline std::string g_work_dir;

// Pods held running by kwok until the test ends: its delay, and its
// jitter, which caps the delay when shorter.
inline const std::vector<std::string> kHold = {"--pod-annotation", "pod-complete.stage.kwok.x-k8s.io/delay=1h",
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

inline bool Eventually(int seconds, const std::function<bool()>& done) {
  for (int i = 0; i < seconds * 4; ++i) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return done();
}

// A job folder with a spec `name` asking for `gpus` GPUs on `queue`.
inline std::string JobDir(const std::string& name, int gpus, const std::string& queue, const std::string& priority) {
  fs::path dir = fs::path(g_work_dir) / "jobs" / name;
  fs::create_directories(dir);
  std::ofstream(dir / "run.sh") << "echo hello\n";
  std::ofstream(dir / "tau.yaml") << "schema_version: 1\nname: " << name << "\nqueue: " << queue
                                  << (priority.empty() ? "" : "\npriority: " + priority)
                                  << "\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1, memory: 1Gi, gpus: " << gpus
                                  << "}\n";
  return dir.string();
}

inline std::string Submit(Daemon& d, const std::string& name, int gpus, const std::string& queue = "gpu-lq",
                   const std::string& priority = "") {
  auto r = d.Tau({"run", "tau.yaml"}, JobDir(name, gpus, queue, priority));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r.out.substr(0, r.out.find_first_of(" \n"));
}

// The objects of kind `resource` labelled with the job's id.
inline size_t ObjectsOf(const std::string& resource, const std::string& job_id) {
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


}  // namespace tau::kube_backend_test
