// Kueue objects and pod logs through a real API server (src/server/kubernetes):
// a test cluster started by scripts/k8s-env with Kueue running and kwok
// serving every pod's log from DIR/pod.log. One cluster serves every test of
// this program; `kueue_ops_k8s_test WORK_DIR` starts it in WORK_DIR/cluster
// and stops it at the end. TAU_K8S_ENV_DIR=DIR uses a cluster already up in
// DIR instead (its DIR/pod.log is appended to); TAU_K8S_ENV names another
// scripts/k8s-env.
#include <nlohmann/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "k8s/kueue_ops_cluster.h"
#include "server/kubernetes/kueue_objects.h"
#include "server/kubernetes/pod_logs.h"

namespace tau::server::kubernetes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* kSetupTemplate = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: main
  namespace: kq-team
spec:
  clusterQueue: kq-cq
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: kq-cq
spec:
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: kq-h100
      resources:
      - name: cpu
        nominalQuota: 96
      - name: memory
        nominalQuota: 1Ti
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: kq-h100
spec:
  nodeLabels:
    taugrid.io/gpu-class: h100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: kq-high
value: 1000
)";

const std::string& SetupManifests() {
  static const std::string text = N(kSetupTemplate);
  return text;
}

std::vector<render::AppliedObject> Decoded(const std::string& text) {
  auto decoded = DecodeForCluster({{"setup.yaml", text}});
  EXPECT_TRUE(decoded.ok()) << decoded.error().ToString();
  return decoded.ok() ? decoded->objects : std::vector<render::AppliedObject>{};
}

// The tests below run in order on one cluster: the first applies the set
// the others build on.
TEST(KueueOpsK8sTest, AppliesInOrderAndReadsBackWithKueuesStatus) {
  REQUIRE_CLUSTER();
  EnsureNamespace(N("kq-team"));
  auto cluster = KueueClusterOf(Cluster::Get()->client());
  ApplyReport report = ApplyKueueObjects(*cluster, Decoded(SetupManifests()), false);
  ASSERT_TRUE(report.ok()) << report.FailureMessage();
  EXPECT_THAT(report.Changes(), ElementsAre(N("ResourceFlavor/kq-h100 created"), N("WorkloadPriorityClass/kq-high created"),
                                            N("ClusterQueue/kq-cq created"), N("LocalQueue/kq-team/main created")));

  // A 16-GPU Job cannot fit the 8-GPU queue: Kueue counts it pending.
  json job = json::parse(N(R"({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "kq-too-big", "namespace": "kq-team", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
    "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never", "containers": [{
      "name": "main", "image": "busybox",
      "resources": {"requests": {"nvidia.com/gpu": "16"}, "limits": {"nvidia.com/gpu": "16"}}}]}}}})"));
  auto created = Cluster::Get()->client().Create({"batch", "v1", "jobs", N("kq-team"), "", ""}, job);
  ASSERT_TRUE(created.ok()) << created.error().ToString();

  json queues;
  ASSERT_TRUE(WaitFor([&] {
    auto q = QueuesJsonFromCluster(*cluster);
    if (!q.ok()) {
      return false;
    }
    queues = *q;
    for (const json& cq : queues["cluster_queues"]) {
      if (cq["name"] == N("kq-cq") && cq["pending"] == 1) {
        return true;
      }
    }
    return false;
  })) << queues.dump(2);
  for (const json& cq : queues["cluster_queues"]) {
    if (cq["name"] != N("kq-cq")) {
      continue;
    }
    EXPECT_EQ(cq["admitted"], 0);
    ASSERT_EQ(cq["resources"].size(), 3u);
    EXPECT_EQ(cq["resources"][2], json({{"flavor", N("kq-h100")}, {"resource", "nvidia.com/gpu"}, {"nominal", "8"},
                                       {"used", "0"}, {"borrowed", "0"}}));
  }
  bool lq_found = false;
  for (const json& lq : queues["local_queues"]) {
    if (lq["workspace"] == N("kq-team") && lq["name"] == "main") {
      lq_found = true;
      EXPECT_EQ(lq["cluster_queue"], N("kq-cq"));
      EXPECT_EQ(lq["pending"], 1);
    }
  }
  EXPECT_TRUE(lq_found) << queues.dump(2);

  auto got = GetKueueObjects(*cluster, "ClusterQueue", N("kq-cq"));
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 1u);
  const json& cq = (*got)[0];
  EXPECT_EQ(cq["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(cq["kind"], "ClusterQueue");
  EXPECT_EQ(cq["status"]["pendingWorkloads"], 1);
  EXPECT_FALSE(cq["metadata"].contains("managedFields"));
  EXPECT_EQ(cq["spec"]["resourceGroups"][0]["flavors"][0]["name"], N("kq-h100"));

  ASSERT_TRUE(Cluster::Get()->client().Delete({"batch", "v1", "jobs", N("kq-team"), N("kq-too-big"), ""},
                                              {"Background", std::nullopt}).ok());
}

TEST(KueueOpsK8sTest, ApplyingAgainChangesNothing) {
  REQUIRE_CLUSTER();
  auto cluster = KueueClusterOf(Cluster::Get()->client());
  ApplyReport report = ApplyKueueObjects(*cluster, Decoded(SetupManifests()), false);
  ASSERT_TRUE(report.ok()) << report.FailureMessage();
  EXPECT_THAT(report.Changes(),
              ElementsAre(N("ResourceFlavor/kq-h100 unchanged"), N("WorkloadPriorityClass/kq-high unchanged"),
                          N("ClusterQueue/kq-cq unchanged"), N("LocalQueue/kq-team/main unchanged")));
}

TEST(KueueOpsK8sTest, AFieldAnotherManagerOwnsIsAConflictNamingFieldAndManager) {
  REQUIRE_CLUSTER();
  // Someone else takes .spec.queueingStrategy over.
  json theirs = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                 {"kind", "ClusterQueue"},
                 {"metadata", {{"name", N("kq-cq")}}},
                 {"spec", {{"queueingStrategy", "StrictFIFO"}}}};
  auto taken = Cluster::Get()->client().Apply({"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", N("kq-cq"), ""}, theirs,
                                              {N("kq-test-operator"), true});
  ASSERT_TRUE(taken.ok()) << taken.error().ToString();

  auto cluster = KueueClusterOf(Cluster::Get()->client());
  ApplyReport report = ApplyKueueObjects(*cluster, Decoded(SetupManifests()), false);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.objects[2].label, N("ClusterQueue/kq-cq"));
  EXPECT_EQ(report.objects[2].state, ApplyState::kFailed);
  EXPECT_EQ(report.objects[2].error.code(), StatusCode::kAborted);
  EXPECT_EQ(report.objects[3].state, ApplyState::kNotApplied);
  EXPECT_THAT(report.FailureMessage(),
              HasSubstr(N("ClusterQueue/kq-cq: not applied: field .spec.queueingStrategy managed by "
                          "\"kq-test-operator\"; apply again with --force-conflicts to take them over\n")));
  EXPECT_THAT(report.FailureMessage(),
              HasSubstr(N("applied: ResourceFlavor/kq-h100 unchanged, WorkloadPriorityClass/kq-high unchanged\n")));
  EXPECT_THAT(report.FailureMessage(), HasSubstr(N("not applied: LocalQueue/kq-team/main\n")));

  ApplyReport forced = ApplyKueueObjects(*cluster, Decoded(SetupManifests()), true);
  ASSERT_TRUE(forced.ok()) << forced.FailureMessage();
  EXPECT_THAT(forced.Changes(), ::testing::Contains(N("ClusterQueue/kq-cq configured")));
  auto got = GetKueueObjects(*cluster, "ClusterQueue", N("kq-cq"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0]["spec"]["queueingStrategy"], "BestEffortFIFO");
}

TEST(KueueOpsK8sTest, AMissingNamespaceAppliesNothing) {
  REQUIRE_CLUSTER();
  std::string text = SetupManifests();
  const std::string team = N("namespace: kq-team"), flavor_name = N("name: kq-h100\nspec");
  text.replace(text.find(team), team.size(), N("namespace: kq-nowhere"));
  text.replace(text.find(flavor_name), flavor_name.size(), N("name: kq-a100\nspec"));
  auto cluster = KueueClusterOf(Cluster::Get()->client());
  ApplyReport report = ApplyKueueObjects(*cluster, Decoded(text), false);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.FailureMessage(), HasSubstr(N("namespace \"kq-nowhere\" does not exist on the cluster")));
  EXPECT_THAT(report.FailureMessage(), HasSubstr("applied: nothing\n"));
  auto flavor = GetKueueObjects(*cluster, "ResourceFlavor", N("kq-a100"));
  ASSERT_TRUE(flavor.ok());
  EXPECT_TRUE(flavor->empty());
}

TEST(KueueOpsK8sTest, DeleteRemovesTheObjectOnce) {
  REQUIRE_CLUSTER();
  auto cluster = KueueClusterOf(Cluster::Get()->client());
  auto deleted = DeleteKueueObject(*cluster, "LocalQueue", N("kq-team"), "main");
  ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
  EXPECT_EQ(*deleted, "LocalQueue/main deleted");
  ASSERT_TRUE(WaitFor([&] {
    auto lq = GetKueueObjects(*cluster, "LocalQueue", "main");
    return lq.ok() && std::none_of(lq->begin(), lq->end(), [](const json& o) {
             return o["metadata"]["namespace"] == N("kq-team");
           });
  }));
  auto again = DeleteKueueObject(*cluster, "LocalQueue", N("kq-team"), "main");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), StatusCode::kNotFound);
}

TEST(KueueOpsK8sTest, APodLogStreamsWithFollowAndResumesWithoutDuplicates) {
  REQUIRE_CLUSTER();
  EnsureNamespace(N("kq-team"));
  kube::KubeClient& client = Cluster::Get()->client();
  json pod = json::parse(N(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "kq-log-pod", "namespace": "kq-team"},
    "spec": {"containers": [{"name": "main", "image": "busybox"}]}})"));
  auto created = client.Create({"", "v1", "pods", N("kq-team"), "", ""}, pod);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  ASSERT_TRUE(WaitFor([&] {
    auto p = client.Get({"", "v1", "pods", N("kq-team"), N("kq-log-pod"), ""});
    return p.ok() && (*p)["status"].value("phase", "") == "Running";
  }));
  // Lines from an hour ahead: no earlier line of the shared file is at or
  // after them, so a stream that starts at the first one's second sees only
  // this test's lines.
  AppendLog({{Stamp(0, 100), "one"}, {Stamp(0, 100), "two"}, {Stamp(0, 900000000), "three"}});

  std::mutex mu;
  std::vector<std::string> targets;
  StreamFn real = StreamOf(client);
  StreamFn recorded = [&](const kube::HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                          const std::atomic<bool>* stop) {
    {
      std::lock_guard lock(mu);
      targets.push_back(request.target);
    }
    return real(request, on_chunk, stop);
  };
  PodLogOptions options;
  options.follow = true;
  // Each request ends after 1.5 s: the stream resumes again and again.
  options.max_request_time = milliseconds(1500);
  options.from = {Stamp(-1, 0), 1};  // start within this test's lines
  PodLogStreamer streamer(recorded, [] { return Result<PodRef>(PodRef{N("kq-team"), N("kq-log-pod")}); }, options);
  std::string got;
  Result<LogEnd> end = LogEnd::kEnded;
  std::thread runner([&] {
    end = streamer.Run([&](std::string_view text) {
      std::lock_guard lock(mu);
      got += text;
      return true;
    });
  });
  std::this_thread::sleep_for(milliseconds(2500));
  AppendLog({{Stamp(0, 900000000), "four"}, {Stamp(1, 0), "five"}});
  std::this_thread::sleep_for(milliseconds(2000));
  AppendLog({{Stamp(2, 5), "six"}});
  const std::string expected = "one\ntwo\nthree\nfour\nfive\nsix\n";
  bool complete = WaitFor([&] {
    std::lock_guard lock(mu);
    return got.size() >= expected.size();
  }, seconds(30));
  // A few more reconnections may bring nothing more.
  std::this_thread::sleep_for(milliseconds(3500));
  streamer.Stop();
  runner.join();
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(*end, LogEnd::kStopped);
  EXPECT_TRUE(complete);
  EXPECT_EQ(got, expected);
  std::lock_guard lock(mu);
  ASSERT_GE(targets.size(), 3u);
  EXPECT_THAT(targets[0], HasSubstr(N("/api/v1/namespaces/kq-team/pods/kq-log-pod/log?container=main&timestamps=true"
                                      "&follow=true&sinceTime=")));
  EXPECT_THAT(targets.back(), HasSubstr("&sinceTime=" + kube::UrlEscape(Stamp(2, 0).substr(0, 19) + "Z")));
}

TEST(KueueOpsK8sTest, FindsThePodOfACompletionIndex) {
  REQUIRE_CLUSTER();
  EnsureNamespace(N("kq-team"));
  kube::KubeClient& client = Cluster::Get()->client();
  json job = json::parse(N(R"({"apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "kq-indexed", "namespace": "kq-team"},
    "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2,
      "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}})"));
  auto created = client.Create({"batch", "v1", "jobs", N("kq-team"), "", ""}, job);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  Result<PodRef> pod = NotFoundError("not yet");
  ASSERT_TRUE(WaitFor([&] {
    pod = FindIndexedJobPod(client, N("kq-team"), N("kq-indexed"), 1);
    return pod.ok();
  })) << pod.error().ToString();
  EXPECT_EQ(pod->namespace_, N("kq-team"));
  EXPECT_THAT(pod->name, ::testing::StartsWith(N("kq-indexed-1-")));
  auto none = FindIndexedJobPod(client, N("kq-team"), N("kq-indexed"), 5);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.error().message(), HasSubstr(N("no pod of completion index 5 of Job kq-team/kq-indexed")));
}

}  // namespace
}  // namespace tau::server::kubernetes

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tau::server::kubernetes::g_work_dir =
      argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "kueue-ops-k8s").string();
  ::testing::AddGlobalTestEnvironment(new tau::server::kubernetes::Cluster);
  return RUN_ALL_TESTS();
}
