// The Kubernetes executor against a scripted cluster: objects made once
// and adopted by their job-id label, ranks ended by what their pods and
// Job say, stopping and sweeping by deleting.

#include "server/execution/kube_executor.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/kubernetes/fake_cluster_api.h"
#include "spec/load.h"

namespace tau::server {
namespace {

namespace fs = std::filesystem;
using kube::ReflectorEventType;
using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kId[] = "j_abcdefgh23";
constexpr char kJobKey[] = "jobs/default/train-abcdefgh23-1";

class KubeExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snapshot_ = fs::temp_directory_path() / ("tau-kube-exec-" + std::to_string(::getpid()) + ".tar");
    std::ofstream(snapshot_) << "tar";
  }
  void TearDown() override { fs::remove(snapshot_); }

  AttemptPlan Plan(int64_t attempt = 1, const std::string& body = "name: train\nrun: {entrypoint: ./run.sh}\n") {
    spec::Diagnostics diags;
    spec::LoadOptions o;
    o.check_files = false;
    auto loaded = spec::LoadJobSpecText("schema_version: 1\n" + body, "t.yaml", "/", o, &diags);
    EXPECT_TRUE(loaded.ok()) << diags.Format();
    AttemptPlan plan;
    plan.job_id = kId;
    plan.attempt = attempt;
    plan.spec = loaded->spec;
    plan.snapshot_path = snapshot_.string();
    return plan;
  }
  // The cluster's copy of an object, as a reflector would hand it over.
  void Seen(KubeExecutor::Kind kind, const json& object, ReflectorEventType type = ReflectorEventType::kModified) {
    executor_.OnObject(kind, type, object);
  }
  json Pod(int64_t attempt, int index, const std::string& phase, std::optional<int> exit_code = std::nullopt) {
    json pod = {{"metadata",
                 {{"name", fmt::format("p-{}-{}", attempt, index)},
                  {"namespace", "default"},
                  {"labels", {{"taugrid.io/job-id", kId}, {"taugrid.io/attempt", std::to_string(attempt)}}},
                  {"annotations", {{"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
                {"status", {{"phase", phase}}}};
    if (exit_code) {
      pod["status"]["containerStatuses"] = json::array({{{"name", "main"}, {"state", {{"terminated", {{"exitCode", *exit_code}}}}}}});
    }
    return pod;
  }
  json Unsuspended() {
    json job = api_.objects.at(kJobKey);
    job["spec"]["suspend"] = false;
    return job;
  }

  fs::path snapshot_;
  kubernetes::FakeClusterApi api_;
  std::vector<uint64_t> ended_;
  KubeExecutor executor_{&api_, {}, [this](uint64_t token) { ended_.push_back(token); }};
};

TEST_F(KubeExecutorTest, AttemptsOnANodeAreThoseOfItsLivePodsNotOfOnesGoingAway) {
  json old = Pod(1, 0, "Running");
  old["spec"]["nodeName"] = "gpu-0";
  old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";  // attempt 1, being deleted
  Seen(KubeExecutor::Kind::kPod, old, ReflectorEventType::kAdded);
  json ended = Pod(2, 0, "Failed", 1);
  ended["spec"]["nodeName"] = "gpu-0";
  Seen(KubeExecutor::Kind::kPod, ended, ReflectorEventType::kAdded);
  EXPECT_TRUE(executor_.AttemptsOnNode("gpu-0").empty()) << "a pod going away or ended is no attempt on the node";
  json live = Pod(3, 0, "Running");
  live["spec"]["nodeName"] = "gpu-0";
  Seen(KubeExecutor::Kind::kPod, live, ReflectorEventType::kAdded);
  EXPECT_THAT(executor_.AttemptsOnNode("gpu-0"), ElementsAre(std::pair<std::string, int64_t>{kId, 3}));
  EXPECT_TRUE(executor_.AttemptsOnNode("gpu-1").empty());
}

TEST_F(KubeExecutorTest, PrepareMakesTheSuspendedJobThenItsCodeOwnedByIt) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  EXPECT_THAT(api_.calls, ElementsAre("CREATE jobs/default/train-abcdefgh23-1",
                                      "CREATE configmaps/default/train-abcdefgh23-1-code"));
  const json& code = api_.objects.at("configmaps/default/train-abcdefgh23-1-code");
  EXPECT_EQ(code["metadata"]["ownerReferences"][0]["uid"], api_.objects.at(kJobKey)["metadata"]["uid"]);
  EXPECT_EQ(code["metadata"]["ownerReferences"][0]["kind"], "Job");
  EXPECT_EQ(executor_.PreparedAttempt(kId), 1);
}

TEST_F(KubeExecutorTest, APreparedAgainAttemptAdoptsItsObjectsAndMakesNoSecond) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  const json before = api_.objects.at(kJobKey);
  ASSERT_TRUE(executor_.Prepare(Plan()).ok()) << "AlreadyExists with the job's label is adopted";
  EXPECT_EQ(api_.objects.size(), 2u);
  EXPECT_EQ(api_.objects.at(kJobKey)["metadata"]["uid"], before["metadata"]["uid"]);
  EXPECT_THAT(api_.calls, Contains("GET jobs/default/train-abcdefgh23-1"));
}

TEST_F(KubeExecutorTest, AnObjectOfThatNameOfAnotherJobIsLeftAloneAndPrepareFails) {
  api_.objects[kJobKey] = {{"metadata", {{"name", "train-abcdefgh23-1"}, {"labels", {{"taugrid.io/job-id", "j_other"}}}}}};
  Status st = executor_.Prepare(Plan());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("belongs to job j_other"));
  EXPECT_EQ(api_.objects.at(kJobKey)["metadata"]["labels"]["taugrid.io/job-id"], "j_other");
  EXPECT_EQ(api_.objects.size(), 1u) << "nothing is made for an object it could not adopt";
}

TEST_F(KubeExecutorTest, ARankEndsWithItsPodsExitCodeOnceThePodHasEnded) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  AttemptStart start;
  start.ref = {kId, 1, 0};
  auto handle = executor_.Start(start);
  ASSERT_TRUE(handle.ok());
  Seen(KubeExecutor::Kind::kJob, Unsuspended(), ReflectorEventType::kAdded);
  ASSERT_TRUE(executor_.Watch(7, *handle).ok());
  Seen(KubeExecutor::Kind::kPod, Pod(1, 0, "Running"));
  EXPECT_TRUE(ended_.empty());
  Seen(KubeExecutor::Kind::kPod, Pod(1, 0, "Failed", 3));
  EXPECT_THAT(ended_, ElementsAre(7u));
  auto end = executor_.ReadEnd({kId, 1, 0});
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->exit_code, 3);
  EXPECT_TRUE(executor_.EndVouchedFor({kId, 1, 0}));
}

TEST_F(KubeExecutorTest, AJobCompleteEndsItsRanksWithZero) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  AttemptStart start;
  start.ref = {kId, 1, 0};
  auto handle = executor_.Start(start);
  ASSERT_TRUE(executor_.Watch(1, *handle).ok());
  json job = Unsuspended();
  job["status"]["conditions"] = json::array({{{"type", "Complete"}, {"status", "True"}}});
  Seen(KubeExecutor::Kind::kJob, job);
  EXPECT_THAT(ended_, ElementsAre(1u));
  EXPECT_EQ(executor_.ReadEnd({kId, 1, 0})->exit_code, 0);
}

TEST_F(KubeExecutorTest, AJobNotYetInTheCacheDoesNotEndTheRankButOneDeletedAfterItRanDoesWithoutAnEnd) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  AttemptStart start;
  start.ref = {kId, 1, 0};
  auto handle = executor_.Start(start);
  ASSERT_TRUE(executor_.Watch(1, *handle).ok());
  EXPECT_TRUE(ended_.empty()) << "the reflector has not delivered the Job yet";
  Seen(KubeExecutor::Kind::kJob, Unsuspended());
  Seen(KubeExecutor::Kind::kJob, Unsuspended(), ReflectorEventType::kDeleted);
  EXPECT_THAT(ended_, ElementsAre(1u));
  auto end = executor_.ReadEnd({kId, 1, 0});
  EXPECT_EQ(end.status().code(), StatusCode::kNotFound) << "deleted by someone else: how it ended is unknown";
}

TEST_F(KubeExecutorTest, StopDeletesTheJobAndTheRankEndsBySigtermOnceItIsGone) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  AttemptStart start;
  start.ref = {kId, 1, 0};
  auto handle = executor_.Start(start);
  Seen(KubeExecutor::Kind::kJob, Unsuspended());
  ASSERT_TRUE(executor_.Watch(1, *handle).ok());
  const json last = Unsuspended();
  ASSERT_TRUE(executor_.Stop(*handle).ok());
  EXPECT_EQ(api_.objects.count(kJobKey), 0u);
  EXPECT_TRUE(ended_.empty()) << "its pods get their grace period";
  Seen(KubeExecutor::Kind::kJob, last, ReflectorEventType::kDeleted);
  EXPECT_THAT(ended_, ElementsAre(1u));
  auto end = executor_.ReadEnd({kId, 1, 0});
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->signal, 15);
  EXPECT_EQ(end->terminated_by, "signal");
}

TEST_F(KubeExecutorTest, DiscardDeletesEveryObjectOfTheJob) {
  ASSERT_TRUE(executor_.Prepare(Plan(1)).ok());
  ASSERT_TRUE(executor_.Prepare(Plan(2)).ok());
  api_.objects["jobs/default/unrelated"] = {{"metadata", {{"name", "unrelated"}, {"namespace", "default"}}}};
  executor_.Discard(kId);
  EXPECT_THAT(api_.objects, ::testing::SizeIs(1));
  EXPECT_EQ(api_.objects.count("jobs/default/unrelated"), 1u);
  EXPECT_EQ(executor_.PreparedAttempt(kId), 0);
}

TEST_F(KubeExecutorTest, AfterARestartALiveAttemptIsAdoptedFromTheCacheAndAnEndedOneIsRead) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  KubeExecutor restarted(&api_, {}, [this](uint64_t token) { ended_.push_back(token); });
  restarted.OnObject(KubeExecutor::Kind::kJob, ReflectorEventType::kAdded, Unsuspended());
  auto adopted = restarted.Adopt({kId, 1, 0});
  ASSERT_TRUE(adopted.has_value());
  EXPECT_FALSE(restarted.Adopt({kId, 2, 0}).has_value()) << "no object of attempt 2";
  restarted.OnObject(KubeExecutor::Kind::kPod, ReflectorEventType::kAdded, Pod(1, 0, "Succeeded", 0));
  EXPECT_FALSE(restarted.Adopt({kId, 1, 0}).has_value()) << "ended: nothing to watch";
  EXPECT_EQ(restarted.ReadEnd({kId, 1, 0})->exit_code, 0);
}

TEST_F(KubeExecutorTest, OrphansOfJobsThatAreNotLiveAreDeleted) {
  ASSERT_TRUE(executor_.Prepare(Plan()).ok());
  Seen(KubeExecutor::Kind::kJob, api_.objects.at(kJobKey), ReflectorEventType::kAdded);
  EXPECT_EQ(executor_.DeleteOrphans([](const std::string&) { return true; }), 0);
  EXPECT_EQ(api_.objects.size(), 2u);
  EXPECT_EQ(executor_.DeleteOrphans([](const std::string&) { return false; }), 1);
  EXPECT_TRUE(api_.objects.empty());
}

TEST_F(KubeExecutorTest, SweepDeletesTheAttemptsPodsAtOnceAndIsContainedWhenNoneIsLeft) {
  api_.objects["pods/default/p-1-0"] = Pod(1, 0, "Running");
  api_.objects["pods/default/p-2-0"] = Pod(2, 0, "Running");
  RankRemains remains = executor_.Sweep({kId, 1, 0});
  EXPECT_EQ(remains.killed, 1);
  EXPECT_EQ(remains.alive, 0);
  EXPECT_TRUE(remains.contained);
  EXPECT_THAT(api_.calls, Contains("DELETE pods/default/p-1-0 grace=0"));
  EXPECT_EQ(api_.objects.count("pods/default/p-2-0"), 1u) << "another attempt's pod is not this one's";
}

}  // namespace
}  // namespace tau::server
