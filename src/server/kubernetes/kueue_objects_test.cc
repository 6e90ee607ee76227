#include "server/kubernetes/kueue_objects.h"

#include <nlohmann/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace tau::server::kubernetes {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A cluster in memory: objects by path, a resourceVersion that moves when
// an apply changes an object, scripted conflicts and failures.
class FakeKueue : public KueueCluster {
 public:
  Result<json> Get(const kube::ResourceRef& ref) override {
    gets.push_back(kube::ResourcePath(ref));
    auto it = objects.find(kube::ResourcePath(ref));
    if (it == objects.end()) return NotFoundError(kube::ResourcePath(ref) + " not found");
    return it->second;
  }
  Result<std::vector<json>> List(const kube::ResourceRef& ref) override {
    std::string prefix = kube::ResourcePath(ref);
    std::vector<json> out;
    for (const auto& [path, object] : objects) {
      if (object.contains("kind") && path.find("/" + ref.resource + "/") != std::string::npos &&
          path.find("/apis/kueue.x-k8s.io/") == 0) {
        out.push_back(object);
      }
    }
    return out;
  }
  Result<json> Apply(const kube::ResourceRef& ref, const json& object, bool force,
                     std::vector<FieldConflict>* conflicts) override {
    std::string path = kube::ResourcePath(ref);
    if (on_apply) on_apply(path);
    applied.push_back(path);
    forced.push_back(force);
    if (auto it = conflicting.find(path); it != conflicting.end() && !force) {
      *conflicts = it->second;
      return AbortedError("PATCH " + path + ": HTTP 409 Conflict: Apply failed with 1 conflict");
    }
    if (auto it = failing.find(path); it != failing.end()) return it->second;
    json stored = object;
    json& current = objects[path];
    // What the apply would change: everything but the server's fields.
    json previous = current;
    std::string version;
    int64_t generation = 0;
    if (previous.is_object()) {
      version = previous["metadata"].value("resourceVersion", "");
      generation = previous["metadata"].value("generation", int64_t{1});
      for (const char* k : {"resourceVersion", "managedFields", "uid", "generation"}) previous["metadata"].erase(k);
      if (previous.contains("status")) stored["status"] = previous["status"];
    }
    if (previous != stored) {
      version = std::to_string(++version_);
      ++generation;
    }
    stored["metadata"]["resourceVersion"] = version;
    stored["metadata"]["generation"] = generation;
    stored["metadata"]["managedFields"] = json::array({{{"manager", "taugrid"}}});
    stored["metadata"]["uid"] = "u-" + path;
    current = stored;
    return current;
  }
  Status Delete(const kube::ResourceRef& ref) override {
    if (objects.erase(kube::ResourcePath(ref)) == 0) return NotFoundError("HTTP 404 NotFound");
    return Status::Ok();
  }

  void AddNamespace(const std::string& ns) { objects["/api/v1/namespaces/" + ns] = {{"metadata", {{"name", ns}}}}; }

  std::map<std::string, json> objects;
  std::map<std::string, std::vector<FieldConflict>> conflicting;
  std::map<std::string, Status> failing;
  std::function<void(const std::string&)> on_apply;  // before each apply is served
  std::vector<std::string> gets, applied;
  std::vector<bool> forced;
  int version_ = 100;
};

const char* kManifests = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: main
  namespace: team-a
spec:
  clusterQueue: team-a
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: h100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
)";

std::vector<std::string> Labels(const std::vector<render::AppliedObject>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) out.push_back(o.kind + "/" + o.name);
  return out;
}

TEST(DecodeForClusterTest, OrdersObjectsSoThatWhatIsReferredToComesFirst) {
  auto decoded = DecodeForCluster({{"a.yaml", kManifests},
                                   {"b.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n"
                                              "  name: a100\n"}});
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_THAT(Labels(decoded->objects), ElementsAre("ResourceFlavor/h100", "ResourceFlavor/a100",
                                                    "WorkloadPriorityClass/high", "ClusterQueue/team-a",
                                                    "LocalQueue/main"));
  EXPECT_THAT(decoded->warnings, ElementsAre(HasSubstr("a.yaml:23:13: warning: kueue.x-k8s.io/v1beta1 is deprecated")));
}

TEST(DecodeForClusterTest, FieldsOnlyEmbeddedModeIgnoresAreNotWarnedAbout) {
  const std::string text = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: q\nspec:\n"
                           "  admissionChecks: [prov]\n";
  render::DecodedKueueConfig embedded;
  spec::Diagnostics diags;
  ASSERT_TRUE(render::DecodeKueueManifests(text, "q.yaml", &embedded, &diags));
  ASSERT_EQ(diags.items().size(), 1u);  // embedded mode warns: it does not run admission checks
  auto decoded = DecodeForCluster({{"q.yaml", text}});
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->warnings.empty());
}

TEST(DecodeForClusterTest, ErrorsAreEmbeddedModesWithFileLineAndColumn) {
  const std::string text = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: q\nspec:\n"
                           "  queueingStrategy: Fastest\n  cohrt: x\n";
  auto decoded = DecodeForCluster({{"q.yaml", text}});
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().code(), StatusCode::kInvalidArgument);
  render::DecodedKueueConfig embedded;
  spec::Diagnostics diags;
  ASSERT_FALSE(render::DecodeKueueManifests(text, "q.yaml", &embedded, &diags));
  EXPECT_EQ(decoded.error().message(), diags.Format());
  EXPECT_THAT(decoded.error().message(), HasSubstr("q.yaml:6:21: error: queueingStrategy: \"Fastest\" is not valid"));
  EXPECT_THAT(decoded.error().message(), HasSubstr("q.yaml:7:3: error: unknown field \"cohrt\""));
}

TEST(DecodeForClusterTest, RefusesAKueueConfigurationWithItsPosition) {
  auto decoded = DecodeForCluster({{"c.yaml", "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                                              "fairSharing:\n  enable: true\n"}});
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.error().message(),
              HasSubstr("c.yaml:2:7: error: a Kueue Configuration configures the Kueue controller"));
}

TEST(KueueResourceTest, MapsKindsToV1beta2Resources) {
  auto cq = KueueResource("ClusterQueue", "ignored", "q");
  ASSERT_TRUE(cq.ok());
  EXPECT_EQ(kube::ResourcePath(*cq), "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/q");
  auto lq = KueueResource("LocalQueue", "team-a", "main");
  ASSERT_TRUE(lq.ok());
  EXPECT_EQ(kube::ResourcePath(*lq), "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/main");
  auto bad = KueueResource("Workload", "", "w");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("expected one of ResourceFlavor, WorkloadPriorityClass"));
}

TEST(ApplyKueueObjectsTest, AppliesInOrderAndSaysWhatChanged) {
  FakeKueue cluster;
  cluster.AddNamespace("team-a");
  auto decoded = DecodeForCluster({{"a.yaml", kManifests}});
  ASSERT_TRUE(decoded.ok());
  ApplyReport first = ApplyKueueObjects(cluster, decoded->objects, false);
  ASSERT_TRUE(first.ok()) << first.FailureMessage();
  EXPECT_THAT(first.Changes(), ElementsAre("ResourceFlavor/h100 created", "WorkloadPriorityClass/high created",
                                           "ClusterQueue/team-a created", "LocalQueue/team-a/main created"));
  EXPECT_THAT(cluster.applied, ElementsAre("/apis/kueue.x-k8s.io/v1beta2/resourceflavors/h100",
                                           "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/high",
                                           "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a",
                                           "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/main"));
  // Quantities go out as strings (Kueue keeps them so).
  EXPECT_EQ(cluster.objects["/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a"]["spec"]["resourceGroups"][0]["flavors"][0]
                           ["resources"][0]["nominalQuota"],
            "8");
  // The v1beta1 flavor went out as v1beta2; the LocalQueue with its namespace.
  EXPECT_EQ(cluster.objects["/apis/kueue.x-k8s.io/v1beta2/resourceflavors/h100"]["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(cluster.objects["/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/main"]["metadata"]["namespace"],
            "team-a");

  ApplyReport again = ApplyKueueObjects(cluster, decoded->objects, false);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(again.Changes(), ElementsAre("ResourceFlavor/h100 unchanged", "WorkloadPriorityClass/high unchanged",
                                           "ClusterQueue/team-a unchanged", "LocalQueue/team-a/main unchanged"));

  std::string changed = kManifests;
  changed.replace(changed.find("nominalQuota: 8"), 15, "nominalQuota: 16");
  auto decoded2 = DecodeForCluster({{"a.yaml", changed}});
  ASSERT_TRUE(decoded2.ok());
  ApplyReport third = ApplyKueueObjects(cluster, decoded2->objects, false);
  EXPECT_THAT(third.Changes(), ElementsAre("ResourceFlavor/h100 unchanged", "WorkloadPriorityClass/high unchanged",
                                           "ClusterQueue/team-a configured", "LocalQueue/team-a/main unchanged"));
}

TEST(ApplyKueueObjectsTest, AStatusUpdateByKueueIsNotAChange) {
  FakeKueue cluster;
  cluster.AddNamespace("team-a");
  auto decoded = DecodeForCluster({{"a.yaml", kManifests}});
  ASSERT_TRUE(decoded.ok());
  ASSERT_TRUE(ApplyKueueObjects(cluster, decoded->objects, false).ok());
  // Kueue writes the status between the read and the apply: a new
  // resourceVersion, the same generation.
  cluster.on_apply = [&](const std::string& path) {
    if (path != "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a") return;
    json& cq = cluster.objects[path];
    cq["status"] = {{"pendingWorkloads", 3}};
    cq["metadata"]["resourceVersion"] = "5000";
  };
  ApplyReport again = ApplyKueueObjects(cluster, decoded->objects, false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.Changes()[2], "ClusterQueue/team-a unchanged");
}

TEST(ApplyKueueObjectsTest, MissingNamespaceAppliesNothingAndSaysHowToCreateIt) {
  FakeKueue cluster;
  auto decoded = DecodeForCluster({{"a.yaml", kManifests}});
  ASSERT_TRUE(decoded.ok());
  ApplyReport report = ApplyKueueObjects(cluster, decoded->objects, false);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(cluster.applied.empty());
  EXPECT_EQ(report.precondition.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.FailureMessage(), HasSubstr("namespace \"team-a\" does not exist on the cluster"));
  EXPECT_THAT(report.FailureMessage(), HasSubstr("kubectl create namespace team-a"));
  EXPECT_THAT(report.FailureMessage(), HasSubstr("applied: nothing\n"));
  EXPECT_THAT(report.FailureMessage(),
              HasSubstr("not applied: ResourceFlavor/h100, WorkloadPriorityClass/high, ClusterQueue/team-a, "
                        "LocalQueue/team-a/main"));
}

TEST(ApplyKueueObjectsTest, ConflictNamesFieldsAndManagersAndAccountsForEveryObject) {
  FakeKueue cluster;
  cluster.AddNamespace("team-a");
  cluster.conflicting["/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a"] = {
      {"kubectl-edit", ".spec.queueingStrategy"}, {"kubectl-edit", ".spec.resourceGroups"}, {"ops", ".spec.cohortName"}};
  auto decoded = DecodeForCluster({{"a.yaml", kManifests}});
  ASSERT_TRUE(decoded.ok());
  ApplyReport report = ApplyKueueObjects(cluster, decoded->objects, false);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.objects[2].state, ApplyState::kFailed);
  EXPECT_EQ(report.objects[3].state, ApplyState::kNotApplied);
  EXPECT_EQ(report.FailureMessage(),
            "ClusterQueue/team-a: not applied: fields .spec.queueingStrategy, .spec.resourceGroups managed by "
            "\"kubectl-edit\"; field .spec.cohortName managed by \"ops\"; apply again with --force-conflicts to take "
            "them over\n"
            "applied: ResourceFlavor/h100 created, WorkloadPriorityClass/high created\n"
            "not applied: LocalQueue/team-a/main\n");
  EXPECT_EQ(cluster.applied.size(), 3u);

  ApplyReport forced = ApplyKueueObjects(cluster, decoded->objects, true);
  EXPECT_TRUE(forced.ok()) << forced.FailureMessage();
  EXPECT_THAT(forced.Changes(), ElementsAre("ResourceFlavor/h100 unchanged", "WorkloadPriorityClass/high unchanged",
                                            "ClusterQueue/team-a created", "LocalQueue/team-a/main created"));
  EXPECT_TRUE(cluster.forced.back());
}

TEST(ApplyKueueObjectsTest, OtherFailureStopsWithTheServersWords) {
  FakeKueue cluster;
  cluster.AddNamespace("team-a");
  cluster.failing["/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/high"] =
      PermissionDeniedError("PATCH ...: HTTP 403 Forbidden: cannot patch resource \"workloadpriorityclasses\"");
  auto decoded = DecodeForCluster({{"a.yaml", kManifests}});
  ASSERT_TRUE(decoded.ok());
  ApplyReport report = ApplyKueueObjects(cluster, decoded->objects, false);
  EXPECT_THAT(report.FailureMessage(),
              HasSubstr("WorkloadPriorityClass/high: not applied: PATCH ...: HTTP 403 Forbidden: cannot patch"));
  EXPECT_THAT(report.FailureMessage(), HasSubstr("applied: ResourceFlavor/h100 created\n"));
  EXPECT_THAT(report.FailureMessage(), HasSubstr("not applied: ClusterQueue/team-a, LocalQueue/team-a/main\n"));
}

TEST(ApplyConflictsOfTest, ReadsTheCausesOfA409) {
  // As kube-apiserver 1.35 answers (a StatusCause's type is "reason").
  json status = json::parse(R"({
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Conflict", "code": 409,
    "message": "Apply failed with 1 conflict: conflict with \"kubectl-edit\": .spec.queueingStrategy",
    "details": {"causes": [
      {"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-edit\"", "field": ".spec.queueingStrategy"},
      {"reason": "FieldValueInvalid", "message": "x", "field": ".y"}]}})");
  std::vector<FieldConflict> conflicts = ApplyConflictsOf(status);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].manager, "kubectl-edit");
  EXPECT_EQ(conflicts[0].field, ".spec.queueingStrategy");
  EXPECT_TRUE(ApplyConflictsOf(json::parse(R"({"kind": "Status"})")).empty());
}

TEST(GetKueueObjectsTest, PrintsObjectsWithStatusWithoutBookkeeping) {
  FakeKueue cluster;
  cluster.AddNamespace("team-a");
  auto decoded = DecodeForCluster({{"a.yaml", kManifests}});
  ASSERT_TRUE(decoded.ok());
  ASSERT_TRUE(ApplyKueueObjects(cluster, decoded->objects, false).ok());
  cluster.objects["/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a"]["status"] = {{"pendingWorkloads", 2}};
  auto all = GetKueueObjects(cluster, "", "");
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0]["kind"], "ResourceFlavor");
  EXPECT_EQ((*all)[3]["kind"], "LocalQueue");
  const json& cq = (*all)[2];
  EXPECT_EQ(cq["status"]["pendingWorkloads"], 2);
  EXPECT_FALSE(cq["metadata"].contains("managedFields"));
  EXPECT_FALSE(cq["metadata"].contains("resourceVersion"));
  EXPECT_FALSE(cq["metadata"].contains("uid"));

  auto one = GetKueueObjects(cluster, "ClusterQueue", "team-a");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  auto none = GetKueueObjects(cluster, "ClusterQueue", "other");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto bad = GetKueueObjects(cluster, "Configuration", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
}

TEST(DeleteKueueObjectTest, DeletesOrSaysThereIsNone) {
  FakeKueue cluster;
  cluster.objects["/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/main"] = {{"kind", "LocalQueue"}};
  auto deleted = DeleteKueueObject(cluster, "LocalQueue", "", "main");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, "LocalQueue/main deleted");
  auto again = DeleteKueueObject(cluster, "LocalQueue", "", "main");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(again.error().message(), "no LocalQueue named \"main\"");
}

TEST(QueuesJsonTest, CountsAndUsageComeFromKueuesStatus) {
  json cq = json::parse(R"({
    "metadata": {"name": "team-a"},
    "spec": {"cohortName": "org", "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
      "flavors": [{"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "96"},
                                                 {"name": "memory", "nominalQuota": "1Ti"},
                                                 {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]},
    "status": {"pendingWorkloads": 1, "admittedWorkloads": 2, "reservingWorkloads": 2,
      "flavorsUsage": [{"name": "h100", "resources": [{"name": "cpu", "total": "1500m", "borrowed": "0"},
                                                     {"name": "nvidia.com/gpu", "total": "10", "borrowed": "2"}]}]}})");
  json lq = json::parse(R"({"metadata": {"name": "main", "namespace": "team-a"}, "spec": {"clusterQueue": "team-a"},
                            "status": {"pendingWorkloads": 1, "admittedWorkloads": 2}})");
  json cohort = json::parse(R"({"metadata": {"name": "org"}, "spec": {}})");
  json out = QueuesJson({cq}, {lq}, {cohort});
  EXPECT_EQ(out["fair_sharing"], false);
  const json& q = out["cluster_queues"][0];
  EXPECT_EQ(q["name"], "team-a");
  EXPECT_EQ(q["cohort"], "org");
  EXPECT_EQ(q["pending"], 1);
  EXPECT_EQ(q["admitted"], 2);
  ASSERT_EQ(q["resources"].size(), 3u);
  EXPECT_EQ(q["resources"][0], json({{"flavor", "h100"}, {"resource", "cpu"}, {"nominal", "96"}, {"used", "1500m"},
                                     {"borrowed", "0"}}));
  EXPECT_EQ(q["resources"][1]["nominal"], "1Ti");
  EXPECT_EQ(q["resources"][1]["used"], "0");
  EXPECT_EQ(q["resources"][2]["used"], "10");
  EXPECT_EQ(q["resources"][2]["borrowed"], "2");
  EXPECT_EQ(out["local_queues"][0],
            json({{"workspace", "team-a"}, {"name", "main"}, {"cluster_queue", "team-a"}, {"pending", 1}, {"admitted", 2}}));
  EXPECT_EQ(out["cohorts"][0]["name"], "org");

  cq["status"]["fairSharing"] = {{"weightedShare", 250}};
  out = QueuesJson({cq}, {lq}, {cohort});
  EXPECT_EQ(out["fair_sharing"], true);
  EXPECT_EQ(out["cluster_queues"][0]["weighted_share"], 250);
}

}  // namespace
}  // namespace tau::server::kubernetes
