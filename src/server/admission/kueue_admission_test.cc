// Admission by a real Kueue, decided from the Workloads Kueue keeps for
// the jobs' objects (scripted here as Kueue writes them).

#include "server/admission/kueue_admission.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tau::server {
namespace {

using kube::ReflectorEventType;
using nlohmann::json;

constexpr char kId[] = "j_abcdefgh23";

sched::Workload Job(const std::string& id = kId, const std::string& queue = "team") {
  sched::Workload w;
  w.id = id;
  w.namespace_ = "default";
  w.local_queue = queue;
  return w;
}

// A Workload owned by attempt `attempt` of kId's Job, with `conditions`.
json Workload(int64_t attempt, json conditions, json admission = nullptr) {
  json w = {{"metadata",
             {{"name", fmt::format("job-train-abcdefgh23-{}-x", attempt)},
              {"namespace", "default"},
              {"ownerReferences",
               json::array({{{"apiVersion", "batch/v1"},
                             {"kind", "Job"},
                             {"name", fmt::format("train-abcdefgh23-{}", attempt)}}})}}},
            {"status", {{"conditions", conditions}}}};
  if (!admission.is_null()) {
    w["status"]["admission"] = admission;
  }
  return w;
}

json Cond(const std::string& type, const std::string& status, const std::string& reason = "",
          const std::string& message = "") {
  return {{"type", type}, {"status", status}, {"reason", reason}, {"message", message}};
}

json AdmittedTo(const std::string& cq) {
  return {{"clusterQueue", cq},
          {"podSetAssignments", json::array({{{"name", "main"}, {"flavors", {{"nvidia.com/gpu", "h100"}, {"cpu", "default"}}}}})}};
}

class KueueAdmissionTest : public ::testing::Test {
 protected:
  int64_t attempt_ = 1;
  KueueAdmission admission_{[this](const std::string&) { return attempt_; }};
};

TEST_F(KueueAdmissionTest, AJobIsAdmittedWhenKueueAdmitsTheWorkloadOfItsCurrentAttempt) {
  ASSERT_TRUE(admission_.Enqueue(Job()).ok());
  EXPECT_TRUE(admission_.Admit().empty()) << "no Workload yet";
  EXPECT_EQ(admission_.Why(kId)->reason, "WaitingForWorkload");

  admission_.OnWorkload(ReflectorEventType::kAdded,
                        Workload(1, json::array({Cond("QuotaReserved", "False", "Pending",
                                                      "couldn't assign flavors to pod set main: insufficient unused "
                                                      "quota for nvidia.com/gpu in flavor h100, 4 more needed")})));
  EXPECT_TRUE(admission_.Admit().empty());
  auto why = admission_.Why(kId);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "Pending");
  EXPECT_EQ(why->message,
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 "
            "more needed");

  admission_.OnWorkload(ReflectorEventType::kModified,
                        Workload(1, json::array({Cond("QuotaReserved", "True"), Cond("Admitted", "True")}),
                                 AdmittedTo("gpus")));
  auto admitted = admission_.Admit();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].workload_id, kId);
  EXPECT_EQ(admitted[0].cluster_queue, "gpus");
  EXPECT_EQ(admitted[0].flavors.at("nvidia.com/gpu"), "h100");
  EXPECT_TRUE(admission_.Knows(kId));
  EXPECT_FALSE(admission_.Why(kId).has_value()) << "admitted: not waiting";
  EXPECT_TRUE(admission_.Admit().empty()) << "admitted once";
}

TEST_F(KueueAdmissionTest, TheWorkloadOfAnEarlierAttemptDoesNotAdmitTheNextOne) {
  attempt_ = 2;
  ASSERT_TRUE(admission_.Enqueue(Job()).ok());
  admission_.OnWorkload(ReflectorEventType::kAdded,
                        Workload(1, json::array({Cond("QuotaReserved", "True"), Cond("Admitted", "True")}),
                                 AdmittedTo("gpus")));
  EXPECT_TRUE(admission_.Admit().empty());
}

TEST_F(KueueAdmissionTest, AnAdmittedWorkloadThatKueueEvictsIsReportedOnceWithKueuesReason) {
  ASSERT_TRUE(admission_.Enqueue(Job()).ok());
  admission_.OnWorkload(ReflectorEventType::kAdded,
                        Workload(1, json::array({Cond("QuotaReserved", "True"), Cond("Admitted", "True")}),
                                 AdmittedTo("gpus")));
  ASSERT_EQ(admission_.Admit().size(), 1u);
  EXPECT_TRUE(admission_.TakeEvictions().empty());
  admission_.OnWorkload(
      ReflectorEventType::kModified,
      Workload(1, json::array({Cond("QuotaReserved", "True"), Cond("Admitted", "True"),
                               Cond("Evicted", "True", "Preempted",
                                    "Preempted to accommodate a workload (UID: u1) due to prioritization in the "
                                    "ClusterQueue")}),
               AdmittedTo("gpus")));
  auto evictions = admission_.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].victim_id, kId);
  EXPECT_EQ(evictions[0].reason, "Preempted");
  EXPECT_EQ(evictions[0].preemptor_id,
            "Kueue: Preempted to accommodate a workload (UID: u1) due to prioritization in the ClusterQueue");
  EXPECT_TRUE(admission_.TakeEvictions().empty()) << "reported once";
}

TEST_F(KueueAdmissionTest, AJobWhoseLocalQueueIsNotInItsNamespaceIsNotFeasibleOnceTheQueuesAreKnown) {
  EXPECT_TRUE(admission_.CheckFeasible(Job()).ok()) << "not listed yet: Kueue will say";
  admission_.OnLocalQueue(ReflectorEventType::kAdded, {{"metadata", {{"name", "team"}, {"namespace", "default"}}}});
  admission_.OnLocalQueue(ReflectorEventType::kSynced, json::object());
  EXPECT_TRUE(admission_.CheckFeasible(Job()).ok());
  Status st = admission_.CheckFeasible(Job(kId, "other"));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "LocalQueue other does not exist in namespace default (the job's workspace) of the cluster");
  EXPECT_EQ(admission_.Enqueue(Job(kId, "other")).code(), StatusCode::kNotFound);
}

TEST_F(KueueAdmissionTest, AWithdrawnOrHeldJobIsNotAdmitted) {
  ASSERT_TRUE(admission_.Enqueue(Job()).ok());
  admission_.SetHeld(kId, true);
  admission_.OnWorkload(ReflectorEventType::kAdded,
                        Workload(1, json::array({Cond("QuotaReserved", "True"), Cond("Admitted", "True")}),
                                 AdmittedTo("gpus")));
  EXPECT_TRUE(admission_.Admit().empty());
  admission_.Withdraw(kId);
  admission_.SetHeld(kId, false);
  EXPECT_TRUE(admission_.Admit().empty());
  EXPECT_FALSE(admission_.Knows(kId));
}

TEST_F(KueueAdmissionTest, TheClustersWorkloadPriorityClassesTakeThePlaceOfStoredOnesOfTheirName) {
  sched::KueueConfig stored;
  stored.priority_classes = {{"high", 10, "stored"}, {"low", 1, "stored"}};
  admission_.Configure(stored);
  admission_.OnPriorityClass(ReflectorEventType::kAdded,
                             {{"metadata", {{"name", "high"}}}, {"value", 1000}, {"description", "the cluster's"}});
  admission_.OnPriorityClass(ReflectorEventType::kAdded, {{"metadata", {{"name", "urgent"}}}, {"value", 5000}});
  std::map<std::string, int64_t> values;
  for (const auto& pc : admission_.Config().priority_classes) {
    values[pc.name] = pc.value;
  }
  EXPECT_EQ(values, (std::map<std::string, int64_t>{{"high", 1000}, {"low", 1}, {"urgent", 5000}}));
  admission_.Configure(stored);  // a stored change keeps the cluster's
  EXPECT_EQ(admission_.Config().priority_classes.size(), 3u);
  admission_.OnPriorityClass(ReflectorEventType::kDeleted, {{"metadata", {{"name", "urgent"}}}});
  EXPECT_EQ(admission_.Config().priority_classes.size(), 2u);
}

TEST_F(KueueAdmissionTest, AClusterQueuesUsageIsKueuesFlavorsUsage) {
  admission_.OnClusterQueue(
      ReflectorEventType::kAdded,
      {{"metadata", {{"name", "gpus"}}},
       {"status",
        {{"flavorsUsage",
          json::array({{{"name", "h100"}, {"resources", json::array({{{"name", "nvidia.com/gpu"}, {"total", "8"}, {"borrowed", "2"}}})}}})}}}});
  auto usage = admission_.ClusterQueueUsage("gpus", {"h100", "nvidia.com/gpu"});
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->used, 8000);
  EXPECT_EQ(usage->borrowed, 2000);
  EXPECT_FALSE(admission_.ClusterQueueUsage("cpu", {"h100", "nvidia.com/gpu"}).has_value());
}

// A pending Workload of another owner (not a TauGrid job) in `queue`.
json Foreign(const std::string& name, const std::string& queue, int64_t priority, const std::string& created,
             json conditions = json::array({Cond("QuotaReserved", "False", "Pending", "waiting")})) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}, {"creationTimestamp", created}}},
          {"spec", {{"queueName", queue}, {"priority", priority}}},
          {"status", {{"conditions", conditions}}}};
}

json LocalQueue(const std::string& name, const std::string& cluster_queue) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}}, {"spec", {{"clusterQueue", cluster_queue}}}};
}

TEST_F(KueueAdmissionTest, AWaitingJobsPlaceIsItsWorkloadsInKueuesOrderAmongItsClusterQueuesPendingOnes) {
  admission_.OnLocalQueue(ReflectorEventType::kAdded, LocalQueue("team", "gpus"));
  admission_.OnLocalQueue(ReflectorEventType::kAdded, LocalQueue("other", "gpus"));
  admission_.OnLocalQueue(ReflectorEventType::kAdded, LocalQueue("elsewhere", "cpus"));
  admission_.OnLocalQueue(ReflectorEventType::kSynced, json::object());
  ASSERT_TRUE(admission_.Enqueue(Job()).ok());
  json mine = Workload(1, json::array({Cond("QuotaReserved", "False", "Pending", "insufficient quota")}));
  mine["metadata"]["creationTimestamp"] = "2026-12-06T10:00:05Z";
  mine["spec"] = {{"queueName", "team"}, {"priority", 10}};
  admission_.OnWorkload(ReflectorEventType::kAdded, mine);
  EXPECT_EQ(admission_.Why(kId)->position, 1) << "alone in its ClusterQueue";

  // Ahead: a higher priority from another LocalQueue of the same
  // ClusterQueue, and an older one of the same priority.
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("urgent", "other", 100, "2026-12-06T10:00:09Z"));
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("older", "team", 10, "2026-12-06T10:00:01Z"));
  // Not ahead: younger, lower priority, another ClusterQueue, admitted,
  // finished, deactivated.
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("younger", "team", 10, "2026-12-06T10:00:07Z"));
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("low", "team", 1, "2026-12-06T09:00:00Z"));
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("cpu", "elsewhere", 100, "2026-12-06T09:00:00Z"));
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("running", "team", 100, "2026-12-06T09:00:00Z",
                                                            json::array({Cond("QuotaReserved", "True")})));
  admission_.OnWorkload(ReflectorEventType::kAdded, Foreign("done", "team", 100, "2026-12-06T09:00:00Z",
                                                            json::array({Cond("Finished", "True")})));
  json inactive = Foreign("inactive", "team", 100, "2026-12-06T09:00:00Z");
  inactive["spec"]["active"] = false;
  admission_.OnWorkload(ReflectorEventType::kAdded, inactive);
  auto why = admission_.Why(kId);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->position, 3);
  EXPECT_EQ(why->message, "insufficient quota") << "Kueue's own words; the job code adds the place";

  // One ahead is admitted, one removed: the job moves up.
  admission_.OnWorkload(ReflectorEventType::kModified, Foreign("urgent", "other", 100, "2026-12-06T10:00:09Z",
                                                               json::array({Cond("QuotaReserved", "True")})));
  admission_.OnWorkload(ReflectorEventType::kDeleted, Foreign("older", "team", 10, "2026-12-06T10:00:01Z"));
  EXPECT_EQ(admission_.Why(kId)->position, 1);

  // Requeued after a PodsReadyTimeout eviction: behind the younger one.
  mine["status"]["conditions"].push_back(
      {{"type", "Evicted"}, {"status", "True"}, {"reason", "PodsReadyTimeout"}, {"lastTransitionTime", "2026-12-06T10:01:00Z"}});
  admission_.OnWorkload(ReflectorEventType::kModified, mine);
  EXPECT_EQ(admission_.Why(kId)->position, 2);
}

}  // namespace
}  // namespace tau::server
