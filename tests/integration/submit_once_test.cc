// One `tau run` is one job even when the connection drops after the
// server created it: a proxy between tau and taugridd lets the submit
// through and drops its answer.

#include <gmock/gmock.h>

#include "daemon_fixture.h"
#include "support/dropping_server.h"

namespace tau::testing {
namespace {

class SubmitOnceTest : public DaemonTest {};

TEST_F(SubmitOnceTest, ADroppedAnswerToASubmitDoesNotMakeASecondJob) {
  std::string url = ApiUrl();
  ASSERT_FALSE(url.empty());
  DroppingProxy proxy(std::atoi(url.substr(url.rfind(':') + 1).c_str()));
  WriteFile("train.sh", "echo trained\n");
  std::string spec = WriteSpec("once.yaml",
                               "schema_version: 1\nname: once\nrun:\n  entrypoint: 'sh train.sh'\n"
                               "  launcher: command\ncompute:\n  cpus: 100m\n");
  extra_env_["TAU_SERVER"] = proxy.url();
  extra_env_["TAU_TOKEN"] = ApiToken();
  CommandResult r = Tau({"run", spec});
  extra_env_.clear();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GT(proxy.dropped_at(), 0) << "a submit made the job and its answer was dropped";
  EXPECT_EQ(proxy.submits(), proxy.dropped_at() + 1) << "tau sends the submit again, once, after the lost answer";
  std::string id = r.out.substr(0, r.out.find('\n'));
  CommandResult list = Tau({"list", "-o", "json"});
  nlohmann::json jobs = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(jobs.is_array()) << list.out;
  ASSERT_EQ(jobs.size(), 1u) << list.out;
  EXPECT_EQ(jobs[0]["id"], id);
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
}

}  // namespace
}  // namespace tau::testing
