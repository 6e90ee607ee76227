// The job code against the admission seam: what it is told (jobs waiting,
// withdrawn) and how it acts on what admission decides (who runs, who is
// evicted, why the others wait), with no engine behind it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "server/admission/fake_admission.h"
#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;

class AdmissionSeamTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    tweak_ = [this](JobManagerOptions& o) { o.admission = &admission_; };
  }
  bool Withdrawn(const std::string& id) const {
    return std::find(admission_.withdrawn.begin(), admission_.withdrawn.end(), id) != admission_.withdrawn.end();
  }
  FakeAdmission admission_;
};

TEST_F(AdmissionSeamTest, AJobWaitsWithAdmissionsReasonAndPlaceUntilAdmissionAdmitsIt) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string a = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_EQ(admission_.waiting.count(a), 1u) << "a submitted job waits for admission";
  EXPECT_EQ(admission_.waiting.at(a).local_queue, "default");
  EXPECT_TRUE(runner.starts.empty()) << "nothing runs that admission did not admit";
  admission_.why[a] = {"WaitingForQuota", "the quota is spent", 2};
  admission_.to_admit = {"nobody"};  // a pass that admits nothing
  std::string b = (*jobs->Submit(Request(kJob)))->job.id;
  EXPECT_EQ(View(a)->job.state, JobState::kQueued);
  EXPECT_EQ(View(a)->job.reason, "WaitingForQuota");
  EXPECT_EQ(View(a)->job.message, "the quota is spent (position 2 in its queue)");

  admission_.to_admit = {a};
  (*jobs->Submit(Request(kJob)));  // the next pass
  EXPECT_EQ(View(a)->job.state, JobState::kRunning);
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_EQ(runner.starts[0].ref.job_id, a);
  EXPECT_EQ(View(b)->job.state, JobState::kQueued);
}

TEST_F(AdmissionSeamTest, AnEvictionByAdmissionStopsTheJobWhichWaitsAgainUncharged) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  admission_.to_admit = {"next"};
  std::string a = (*jobs->Submit(Request(kJob)))->job.id;
  admission_.to_admit = {a};
  (*jobs->Submit(Request(kJob)));
  ASSERT_EQ(View(a)->job.state, JobState::kRunning);

  admission_.evictions.push_back({a, "j_preemptor", "InClusterQueue"});
  (*jobs->Submit(Request(kJob)));
  EXPECT_THAT(runner.stopped, ::testing::Contains(1000)) << "the evicted job is asked to stop";
  EXPECT_TRUE(HasEvent(a, "Preempted", "preempted by j_preemptor (InClusterQueue)"));

  exec::ExitStatus terminated;
  terminated.signal = 15;
  runner.statuses[StatusPath(a, 1)] = terminated;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(a)->job.state, JobState::kQueued);
  EXPECT_EQ(View(a)->attempts.at(0).reason, "Preempted");
  EXPECT_EQ(View(a)->job.restarts, 0) << "a preemption is not charged to retry.max_restarts";
  EXPECT_TRUE(Withdrawn(a)) << "its quota is given back";
  EXPECT_EQ(admission_.waiting.count(a), 1u) << "and it waits for admission again";
}

TEST_F(AdmissionSeamTest, AFinishedOrCancelledJobIsWithdrawnFromAdmission) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string waiting = (*jobs->Submit(Request(kJob)))->job.id;
  ASSERT_TRUE(jobs->Cancel(waiting).ok());
  EXPECT_TRUE(Withdrawn(waiting)) << "a cancelled job no longer waits";
  EXPECT_FALSE(admission_.Knows(waiting));

  std::string running = (*jobs->Submit(Request(kJob)))->job.id;
  admission_.to_admit = {running};
  (*jobs->Submit(Request(kJob)));
  ASSERT_EQ(View(running)->job.state, JobState::kRunning);
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(running, 1)] = ok;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(running)->job.state, JobState::kSucceeded);
  EXPECT_TRUE(Withdrawn(running)) << "a finished job gives its quota back";
  EXPECT_FALSE(admission_.Knows(running));
}

}  // namespace
}  // namespace tau::server
