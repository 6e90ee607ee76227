// The real `tau` CLI against an API server that has a cluster
// (ApiServerOptions::cluster): taugridd's HTTP API, job manager and store run
// in this process (with a fake executor: no job runs here), and the Kueue
// objects, queues and logs come from the test cluster. What the daemon's
// Kubernetes backend adds (creating the pods) is not needed for these.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "common/clock.h"
#include "k8s/kueue_ops_cluster.h"
#include "sched/admission_policy.h"
#include "server/api_server.h"
#include "server/control_loop.h"
#include "server/execution/fake_executor.h"
#include "server/job_manager.h"
#include "server/kubernetes/pod_logs.h"
#include "store/job_store.h"

namespace tau::server::kubernetes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// taugridd's API in this process, with the cluster.
class ApiWithCluster {
 public:
  Status Start(const fs::path& root, kube::KubeClient* cluster, RankPodLookup rank_pod) {
    home_ = std::make_unique<TauHome>(root / "home");
    fs::create_directories(home_->root());
    TAU_ASSIGN_OR_RETURN(store_, store::JobStore::Open(home_->database().string()));
    JobManagerOptions options;
    options.capacity = {4000, int64_t{8} << 30, 0};
    options.kueue = DefaultKueueConfig(options.capacity);
    executor_.home = *home_;
    jobs_ = std::make_unique<JobManager>(*home_, store_.get(), &executor_, &policy_, SystemClock::Get(), options,
                                         &publisher_);
    TAU_RETURN_IF_ERROR(loop_.Call([&] { return jobs_->Recover(); }));
    ApiServerOptions api;
    api.token = "kq-token";
    api.capacity = options.capacity;
    api.cluster = cluster;
    api.rank_pod = std::move(rank_pod);
    api_ = std::make_unique<ApiServer>(*home_, &loop_, jobs_.get(), &publisher_, api);
    TAU_ASSIGN_OR_RETURN(int port, api_->Bind());
    url_ = "http://127.0.0.1:" + std::to_string(port);
    http_ = std::thread([this] { api_->Serve(); });
    return Status::Ok();
  }
  ~ApiWithCluster() {
    if (api_) {
      api_->Stop();
    }
    if (http_.joinable()) {
      http_.join();
    }
    loop_.Stop();
  }

  // Ends every rank the fake executor started, successfully (attempt 1).
  void EndJob(const std::string& id) {
    loop_.Call([&] {
      exec::ExitStatus ok;
      ok.exit_code = 0;
      executor_.statuses[home_->status_file(id, 1).string()] = ok;
      std::vector<uint64_t> tokens;
      for (const auto& [token, pid] : executor_.watched) tokens.push_back(token);
      for (uint64_t token : tokens) jobs_->OnShimExit(token);
    });
  }

  // `tau ARGS...` against this API, in `cwd`.
  testing::CommandResult Tau(const std::vector<std::string>& args, const std::string& cwd = "") {
    std::vector<std::string> argv = {testing::BinPath("tau")};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv, cwd, {{"TAU_SERVER", url_}, {"TAU_TOKEN", "kq-token"},
                                           {"TAU_HOME", (home_->root().parent_path() / "client").string()}});
  }

 private:
  std::unique_ptr<TauHome> home_;
  std::unique_ptr<store::JobStore> store_;
  StatePublisher publisher_;
  ControlLoop loop_;
  FakeExecutor executor_;
  sched::FifoPolicy policy_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<ApiServer> api_;
  std::string url_;
  std::thread http_;
};

const char* kCliSetup = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: kq-cli-cq
spec:
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: kq-cli-flavor
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: main
  namespace: kq-cli
spec:
  clusterQueue: kq-cli-cq
)";

const char* kCliFlavor = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: kq-cli-flavor
)";

TEST(KueueOpsCliK8sTest, TheCliAppliesReadsAndDeletesKueueObjectsAndReadsPodLogs) {
  REQUIRE_CLUSTER();
  EnsureNamespace(N("kq-cli"));
  const fs::path root = fs::path(g_work_dir) / N("cli-kq");
  fs::remove_all(root);
  fs::create_directories(root / "work");
  const std::string work = (root / "work").string();
  {
    std::ofstream(root / "work" / "queues.yaml") << N(kCliSetup);
    std::ofstream(root / "work" / "flavor.yaml") << N(kCliFlavor);
    std::ofstream(root / "work" / "run.sh") << "echo hi\n";
    std::ofstream(root / "work" / "job.yaml") << "schema_version: 1\nname: logs\nrun:\n  entrypoint: sh run.sh\n"
                                                 "compute:\n  cpus: 1\n";
  }
  kube::KubeClient& client = Cluster::Get()->client();
  // Every rank of every job is this pod: the lookup a backend provides.
  const std::string pod_name = N("kq-cli-pod");
  RankPodLookup rank_pod = [pod_name](const std::string&, int64_t, int) -> Result<PodRef> {
    return PodRef{N("kq-cli"), pod_name};
  };
  ApiWithCluster api;
  Status started = api.Start(root, &client, rank_pod);
  ASSERT_TRUE(started.ok()) << started.ToString();

  // Two files, applied together in dependency order: the flavor first.
  testing::CommandResult applied = api.Tau({"admin", "apply", "-f", "queues.yaml", "-f", "flavor.yaml"}, work);
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_EQ(applied.out, N("ResourceFlavor/kq-cli-flavor created\nClusterQueue/kq-cli-cq created\n"
                           "LocalQueue/kq-cli/main created\n"));
  testing::CommandResult again = api.Tau({"admin", "apply", "-f", "queues.yaml", "-f", "flavor.yaml"}, work);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr(N("ClusterQueue/kq-cli-cq unchanged")));

  // Read back with Kueue's status.
  testing::CommandResult got;
  ASSERT_TRUE(WaitFor([&] {
    got = api.Tau({"admin", "get", "ClusterQueue", N("kq-cli-cq")});
    return got.exit_code == 0 && got.out.find("type: Active") != std::string::npos;
  })) << got.out << got.err;
  EXPECT_THAT(got.out, HasSubstr("kind: ClusterQueue\n"));
  EXPECT_THAT(got.out, HasSubstr("queueingStrategy: StrictFIFO\n"));
  EXPECT_THAT(got.out, HasSubstr("status:\n"));
  EXPECT_THAT(got.out, Not(HasSubstr("managedFields")));
  testing::CommandResult queues = api.Tau({"queues", "-o", "json"});
  ASSERT_EQ(queues.exit_code, 0) << queues.err;
  json q = json::parse(queues.out);
  bool found = false;
  for (const json& cq : q["cluster_queues"]) {
    if (cq["name"] == N("kq-cli-cq")) {
      found = true;
      EXPECT_EQ(cq["queueing_strategy"], "StrictFIFO");
      EXPECT_EQ(cq["resources"][0]["nominal"], "8");
    }
  }
  EXPECT_TRUE(found) << queues.out;
  EXPECT_THAT(api.Tau({"queues"}).out, HasSubstr(N("kq-cli-cq")));

  // Another field manager owns a field: reported, then taken over.
  auto taken = client.Apply({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", N("kq-cli-cq"), ""},
                            {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                             {"kind", "ClusterQueue"},
                             {"metadata", {{"name", N("kq-cli-cq")}}},
                             {"spec", {{"queueingStrategy", "BestEffortFIFO"}}}},
                            {N("kq-cli-operator"), true});
  ASSERT_TRUE(taken.ok()) << taken.error().ToString();
  testing::CommandResult conflict = api.Tau({"admin", "apply", "-f", "queues.yaml", "-f", "flavor.yaml"}, work);
  EXPECT_EQ(conflict.exit_code, 1);
  EXPECT_THAT(conflict.err, HasSubstr(N("ClusterQueue/kq-cli-cq: not applied: field .spec.queueingStrategy managed "
                                        "by \"kq-cli-operator\"; apply again with --force-conflicts")));
  EXPECT_THAT(conflict.err, HasSubstr(N("not applied: LocalQueue/kq-cli/main")));
  testing::CommandResult forced =
      api.Tau({"admin", "apply", "--force-conflicts", "-f", "queues.yaml", "-f", "flavor.yaml"}, work);
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_THAT(forced.out, HasSubstr(N("ClusterQueue/kq-cli-cq configured")));

  // A job's log is its pod's, through the API server.
  json pod = json::parse(N(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "kq-cli-pod", "namespace": "kq-cli"},
    "spec": {"containers": [{"name": "main", "image": "busybox"}]}})"));
  auto created = client.Create({"", "v1", "pods", N("kq-cli"), "", ""}, pod);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  ASSERT_TRUE(WaitFor([&] {
    auto p = client.Get({"", "v1", "pods", N("kq-cli"), pod_name, ""});
    return p.ok() && (*p)["status"].value("phase", "") == "Running";
  }));
  const std::string line = N("hello from kq-cli-pod");
  AppendLog({{Stamp(10, 0), line}});
  testing::CommandResult submitted = api.Tau({"run", "job.yaml"}, work);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  std::string id = submitted.out.substr(0, submitted.out.find_first_of(" \n"));
  testing::CommandResult logs = api.Tau({"logs", id});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr(line + "\n"));

  // Followed as tau run -f does (every attempt, every rank, positions): a
  // line written meanwhile arrives, and the stream ends after the job has
  // (kwok keeps a followed log open; the route ends it 10 s after the
  // attempt is over).
  testing::CommandResult followed;
  std::thread follower([&] { followed = api.Tau({"logs", "-f", "--attempt", "all", "--rank", "all", id}); });
  std::this_thread::sleep_for(milliseconds(1500));
  const std::string later = N("a later line from kq-cli-pod");
  AppendLog({{Stamp(11, 0), later}});
  std::this_thread::sleep_for(milliseconds(1500));
  api.EndJob(id);
  follower.join();
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_THAT(followed.out, HasSubstr(line + "\n" + later + "\n"));

  testing::CommandResult deleted = api.Tau({"admin", "delete", "LocalQueue", "main", "-n", N("kq-cli")});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "LocalQueue/main deleted\n");
  testing::CommandResult missing = api.Tau({"admin", "delete", "LocalQueue", "main", "-n", N("kq-cli")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no LocalQueue named \"main\""));
}

}  // namespace
}  // namespace tau::server::kubernetes
