// Job progress end to end: a job appends JSON lines to TAU_METRICS_FILE
// and tau status / tau list -o wide show its progress, rate and ETA; a job
// whose lines stop is marked stalled.

#include <gmock/gmock.h>

#include <fstream>
#include <sstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

using ::testing::HasSubstr;

class ObservabilityTest : public DaemonTest {
 protected:
  void BeforeStart() override { extra_env_ = {{"TAU_PROGRESS_STALL_AFTER", "1s"}}; }
};

// Ten steps of 0.3 s, then it stops writing but keeps running until the
// file "finish" appears in its working folder.
constexpr char kTrainer[] = R"(import json, os, time
for step in range(1, 11):
    with open(os.environ["TAU_METRICS_FILE"], "a") as f:
        f.write(json.dumps({"step": step, "total_steps": 40, "loss": 1.0 / step}) + "\n")
    time.sleep(0.3)
while not os.path.exists(os.path.join(os.environ["FINISH_DIR"], "finish")):
    time.sleep(0.1)
)";

TEST_F(ObservabilityTest, ProgressRateEtaAndStallsShowForAJobThatWritesMetricsLines) {
  WriteFile("train.py", kTrainer);
  std::string id = Submit(WriteSpec("p.yaml", "schema_version: 1\nname: p\nrun:\n  entrypoint: train.py\ncompute:\n  cpus: 100m\n"
                                              "runtime:\n  env:\n    FINISH_DIR: " + work_.string() + "\n"));
  ASSERT_TRUE(WaitUntil([&] {
    nlohmann::json p = Job(id)["progress"];
    return p.is_object() && p["steps_per_second"].is_number() && p["step"].get<double>() >= 3;
  })) << Job(id).dump();
  nlohmann::json p = Job(id)["progress"];
  EXPECT_EQ(p["total_steps"], 40);
  EXPECT_GT(p["percent"].get<double>(), 0);
  EXPECT_LT(p["percent"].get<double>(), 100);
  EXPECT_GT(p["eta_seconds"].get<double>(), 0);
  EXPECT_TRUE(p["metrics"]["loss"].is_number());
  EXPECT_THAT(Tau({"status", id}).out, HasSubstr("Progress:"));
  EXPECT_THAT(Tau({"status", id}).out, HasSubstr("steps/s, ETA "));
  EXPECT_THAT(Tau({"list", "-o", "wide"}).out, HasSubstr("% ETA "));
  CommandResult top = Tau({"top", "--once"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_THAT(top.out, HasSubstr("1 running, 0 pending"));
  EXPECT_THAT(top.out, HasSubstr("CLUSTERQUEUE"));
  EXPECT_THAT(top.out, HasSubstr("% ETA "));

  // The lines stop while it runs: stalled, with an event.
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["progress"].value("stalled", false); })) << Job(id).dump();
  EXPECT_THAT(Tau({"events", id}).out, HasSubstr("ProgressStalled"));
  EXPECT_THAT(Tau({"status", id}).out, HasSubstr("stalled"));
  WriteFile("finish", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  p = Job(id)["progress"];
  EXPECT_EQ(p["step"], 10);
  EXPECT_EQ(p["percent"], 25);
  EXPECT_EQ(p["stalled"], false);
}

TEST_F(ObservabilityTest, EveryApiResponseCarriesATraceId) {
  const std::string token = ApiToken();
  const std::string url = ApiUrl();
  // A cancel of an unknown job: the daemon answers 404 with a trace id.
  const std::string script =
      "import sys, urllib.request\n"
      "req = urllib.request.Request(sys.argv[1] + '/api/v1/jobs/nope', headers={'Authorization': 'Bearer ' + sys.argv[2]})\n"
      "try:\n    urllib.request.urlopen(req)\n"
      "except urllib.error.HTTPError as e:\n    print(e.code, e.headers.get('X-Trace-Id'))\n";
  CommandResult r = RunCommand({"/usr/bin/env", "python3", "-c", script, url, token});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::MatchesRegex("404 [0-9a-f]{16}\n"));
}

}  // namespace
}  // namespace tau::testing
