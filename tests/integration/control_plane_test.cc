// The embedded control plane end to end: taugridd, tau-shim and the tau
// CLI, with real processes and a fresh TAU_HOME per test.

#include <gmock/gmock.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string CommandSpec(const std::string& name, const std::string& command, const std::string& extra = "") {
  return "schema_version: 1\nname: " + name + "\nrun:\n  entrypoint: '" + command + "'\ncompute:\n  cpus: 100m\n" + extra;
}

class ControlPlaneTest : public DaemonTest {};

TEST_F(ControlPlaneTest, RunFollowStreamsOutputAndExitsZero) {
  std::string spec = WriteSpec("hello.yaml", CommandSpec("hello", "echo hello from $TAU_JOB_NAME attempt $TAU_ATTEMPT"));
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hello from hello attempt 1\n"));
  std::string id = r.out.substr(0, r.out.find('\n'));
  nlohmann::json job = Job(id);
  EXPECT_EQ(job["state"], "Succeeded");
  EXPECT_EQ(job["exit_code"], 0);
  EXPECT_EQ(job["attempts"].size(), 1u);
  for (const char* field : {"id", "name", "workspace", "queue", "state", "reason", "exit_code", "attempt",
                            "attempts", "created_at", "started_at", "finished_at"}) {
    EXPECT_TRUE(job.contains(field)) << field;
  }
}

// The daemon's periodic work (checkpoint scans, following progress) keeps
// rescheduling itself; many rounds of it pass while a job runs, and the
// same daemon is there at the end.
class PeriodicWorkTest : public DaemonTest {
 protected:
  void BeforeStart() override { extra_env_["TAU_CHECKPOINT_SCAN_INTERVAL"] = "1s"; }
};

TEST_F(ControlPlaneTest, RunDashReadsTheSpecFromStandardInput) {
  // The spec comes from a pipe; its working_dir is the current folder.
  WriteFile("piped.txt", "piped data\n");
  std::string spec = WriteSpec("piped.yaml", CommandSpec("piped", "cat piped.txt"));
  CommandResult r = RunCommand({"/bin/sh", "-c", "exec \"$0\" run -f - < \"$1\"", BinPath("tau"), spec},
                               work_.string(), Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("piped data\n"));
}

TEST_F(PeriodicWorkTest, TheDaemonOutlivesManyRoundsOfItsPeriodicWork) {
  const int64_t pid = DaemonPid();
  std::string spec = WriteSpec("slow.yaml",
      "schema_version: 1\nname: slow\nrun:\n  entrypoint: 'sleep 7; echo done'\n  launcher: command\n"
      "compute:\n  cpus: 100m\n");
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("done"));
  EXPECT_EQ(Job("slow")["state"], "Succeeded");
  EXPECT_EQ(DaemonPid(), pid);
  EXPECT_EQ(::kill(static_cast<pid_t>(pid), 0), 0) << "taugridd is gone";
}

TEST_F(ControlPlaneTest, ExitCodesAndSignalsReachTheCaller) {
  CommandResult seven = Tau({"run", "-f", WriteSpec("seven.yaml", CommandSpec("seven", "exit 7"))});
  EXPECT_EQ(seven.exit_code, 7);
  CommandResult killed = Tau({"run", "-f", WriteSpec("killed.yaml", CommandSpec("killed", "kill -9 $$"))});
  EXPECT_EQ(killed.exit_code, 128 + 9);
  nlohmann::json job = Job("killed");
  EXPECT_EQ(job["state"], "Failed");
  EXPECT_EQ(job["reason"], "Signal");
  EXPECT_THAT(job["message"].get<std::string>(), HasSubstr("SIGKILL"));
}

TEST_F(ControlPlaneTest, TheJobEnvironmentFollowsTheContract) {
  std::string spec = WriteSpec("env.yaml", CommandSpec("env-check", "env | grep -E \"^(TAU_|CUDA_VISIBLE|MY_VAR)\" | sort",
                                                       "runtime:\n  env:\n    MY_VAR: mine\n"));
  CommandResult r = Tau({"run", "-f", spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_THAT(r.out, HasSubstr("TAU_JOB_ID=" + id + "\n"));
  EXPECT_THAT(r.out, HasSubstr("TAU_JOB_NAME=env-check\n"));
  EXPECT_THAT(r.out, HasSubstr("TAU_ATTEMPT=1\n"));
  EXPECT_THAT(r.out, HasSubstr("TAU_WORKSPACE=default\n"));
  EXPECT_THAT(r.out, HasSubstr("TAU_CHECKPOINT_DIR=" + (home_ / "jobs" / id / "checkpoints").string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("TAU_OUTPUT_DIR=" + (home_ / "jobs" / id / "outputs").string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("TAU_METRICS_FILE=" + (home_ / "jobs" / id / "metrics.jsonl").string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("CUDA_VISIBLE_DEVICES=\n"));
  EXPECT_THAT(r.out, HasSubstr("MY_VAR=mine\n"));
}

TEST_F(ControlPlaneTest, AJobRunsFromItsSnapshotNotTheLiveFolder) {
  WriteFile("code/data.txt", "original\n");
  std::string spec = "schema_version: 1\nname: snap\nrun:\n  entrypoint: 'sleep 1; cat data.txt'\n  working_dir: code\ncompute:\n  cpus: 100m\n";
  std::string id = Submit(WriteSpec("snap.yaml", spec));
  WriteFile("code/data.txt", "edited after submit\n");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  CommandResult logs = Tau({"logs", id});
  EXPECT_EQ(logs.out, "original\n");
}

TEST_F(ControlPlaneTest, CancelGivesTheGracePeriodAndEndsCancelled) {
  std::string spec = WriteSpec("long.yaml", CommandSpec("long", "trap \"echo saving; exit 0\" TERM; echo started; while :; do sleep 0.05; done",
                                                        "checkpoint:\n  grace_period: 5s\n"));
  std::string id = Submit(spec);
  ASSERT_TRUE(WaitUntil([&] { return Tau({"logs", id}).out.find("started") != std::string::npos; }));
  CommandResult cancel = Tau({"cancel", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  ASSERT_TRUE(WaitForState(id, "Cancelled"));
  EXPECT_THAT(Tau({"logs", id}).out, HasSubstr("saving"));
  EXPECT_EQ(Job(id)["reason"], "Cancelled");
  CommandResult again = Tau({"cancel", id});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already ended"));
}

TEST_F(ControlPlaneTest, JobsWaitForCapacityInSubmissionOrder) {
  // Each job takes every CPU of the machine, so they must run one at a time.
  std::string cpus = std::to_string(std::thread::hardware_concurrency());
  std::string spec = WriteSpec("whole.yaml", "schema_version: 1\nname: whole\nrun:\n  entrypoint: 'sleep 0.3'\ncompute:\n  cpus: " + cpus + "\n");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(Submit(spec));
  EXPECT_EQ(Job(ids[2])["state"], "Queued");
  for (const auto& id : ids) ASSERT_TRUE(WaitForState(id, "Succeeded"));
  for (size_t i = 1; i < ids.size(); ++i) {
    EXPECT_GE(Job(ids[i])["started_at"].get<std::string>(), Job(ids[i - 1])["finished_at"].get<std::string>())
        << "job " << i << " started before job " << i - 1 << " released the machine";
  }
}

TEST_F(ControlPlaneTest, CancellingAQueuedJobEndsItAtOnce) {
  std::string cpus = std::to_string(std::thread::hardware_concurrency());
  std::string spec = WriteSpec("block.yaml", "schema_version: 1\nname: block\nrun:\n  entrypoint: 'sleep 30'\ncompute:\n  cpus: " + cpus + "\n");
  std::string running = Submit(spec);
  std::string queued = Submit(spec);
  EXPECT_EQ(Job(queued)["state"], "Queued");
  EXPECT_EQ(Tau({"cancel", queued}).exit_code, 0);
  EXPECT_EQ(Job(queued)["state"], "Cancelled");
  EXPECT_TRUE(Job(queued)["attempts"].empty());
  Tau({"cancel", running});
}

TEST_F(ControlPlaneTest, AJobThatCanNeverFitIsRefusedAtSubmit) {
  // The extra line lands under compute:.
  CommandResult r = Tau({"run", WriteSpec("huge.yaml", CommandSpec("huge", "true", "  gpus: 64\n"))});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr("can never run on this machine: 64 GPUs requested, the machine has 0"));
  EXPECT_THAT(Tau({"list", "-o", "json"}).out, HasSubstr("[]"));
}

TEST_F(ControlPlaneTest, MaxRuntimeEndsTheJobWithDeadlineExceeded) {
  std::string spec = WriteSpec("slow.yaml", CommandSpec("slow", "sleep 30", "limits:\n  max_runtime: 300ms\ncheckpoint:\n  grace_period: 1s\n"));
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("DeadlineExceeded"));
  EXPECT_EQ(Job("slow")["reason"], "DeadlineExceeded");
}

TEST_F(ControlPlaneTest, LogsTailAndAttempts) {
  std::string id = Submit(WriteSpec("count.yaml", CommandSpec("count", "for i in 1 2 3 4 5; do echo line $i; done")));
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  EXPECT_EQ(Tau({"logs", id}).out, "line 1\nline 2\nline 3\nline 4\nline 5\n");
  EXPECT_EQ(Tau({"logs", id, "--tail", "2"}).out, "line 4\nline 5\n");
  EXPECT_EQ(Tau({"logs", "count", "--attempt", "1"}).out, "line 1\nline 2\nline 3\nline 4\nline 5\n");
  CommandResult missing = Tau({"logs", id, "--attempt", "2"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no attempt 2"));
  // A tail counts back in one attempt's log; across all it is refused, not ignored.
  CommandResult across = Tau({"logs", id, "--attempt", "all", "--tail", "1"});
  EXPECT_EQ(across.exit_code, 1);
  EXPECT_THAT(across.err, HasSubstr("tail is not taken with attempt=all"));
}

TEST_F(ControlPlaneTest, FollowingLogsNeverDropsTheLastLines) {
  std::string id = Submit(WriteSpec("burst.yaml", CommandSpec("burst", "sleep 0.2; seq 1 20000")));
  CommandResult r = Tau({"logs", "-f", id});
  EXPECT_EQ(r.exit_code, 0);
  std::istringstream lines(r.out);
  int count = 0;
  std::string line, last;
  while (std::getline(lines, line)) {
    ++count;
    last = line;
  }
  EXPECT_EQ(count, 20000);
  EXPECT_EQ(last, "20000");
}

TEST_F(ControlPlaneTest, UnknownJobsAreNotFound) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"status", "j_aaaaaaaaaa"}, {"logs", "nope"}, {"cancel", "nope"}, {"rm", "nope"}, {"events", "nope"}}) {
    CommandResult r = Tau(args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_THAT(r.err, HasSubstr("no job with id or name")) << args[0];
  }
}

TEST_F(ControlPlaneTest, NamesResolveToTheNewestJob) {
  std::string spec = WriteSpec("twice.yaml", CommandSpec("twice", "echo run"));
  std::string first = Submit(spec);
  std::string second = Submit(spec);
  ASSERT_TRUE(WaitForState(second, "Succeeded"));
  EXPECT_EQ(Job("twice")["id"], second);
  EXPECT_NE(first, second);
}

TEST_F(ControlPlaneTest, ListFiltersAndRemoveFreesFiles) {
  std::string ok = Submit(WriteSpec("a.yaml", CommandSpec("list-a", "true")));
  std::string bad = Submit(WriteSpec("b.yaml", CommandSpec("list-b", "false")));
  ASSERT_TRUE(WaitForState(ok, "Succeeded"));
  ASSERT_TRUE(WaitForState(bad, "Failed"));
  nlohmann::json all = nlohmann::json::parse(Tau({"list", "-o", "json"}).out);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]["id"], bad);  // newest first
  nlohmann::json failed = nlohmann::json::parse(Tau({"list", "-o", "json", "--state", "Failed"}).out);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["id"], bad);
  CommandResult table = Tau({"list"});
  EXPECT_THAT(table.out, HasSubstr("ID"));
  EXPECT_THAT(table.out, HasSubstr("list-a"));
  EXPECT_TRUE(fs::exists(home_ / "jobs" / ok));
  EXPECT_EQ(Tau({"rm", ok}).exit_code, 0);
  EXPECT_FALSE(fs::exists(home_ / "jobs" / ok));
  EXPECT_EQ(Tau({"status", ok}).exit_code, 1);
  EXPECT_EQ(Tau({"prune", "--older-than", "0s"}).exit_code, 0);
  EXPECT_THAT(Tau({"list", "-o", "json"}).out, HasSubstr("[]"));
}

TEST_F(ControlPlaneTest, RemovingARunningJobIsRefused) {
  std::string id = Submit(WriteSpec("r.yaml", CommandSpec("running", "sleep 30")));
  CommandResult r = Tau({"rm", id});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cancel it first"));
}

TEST_F(ControlPlaneTest, AMissingPythonEntrypointIsRefusedBeforeSubmit) {
  CommandResult r = Tau({"run", WriteSpec("nopy.yaml", "schema_version: 1\nname: nopy\nrun:\n  entrypoint: train.py\n")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("\"train.py\" is not in working_dir"));
  CommandResult invalid = Tau({"run", WriteSpec("bad.yaml", "schema_version: 1\nname: Bad\nrun:\n  entrypoint: x\n")});
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_THAT(invalid.err, HasSubstr("bad.yaml:2:7: error:"));
  EXPECT_THAT(Tau({"list", "-o", "json"}).out, HasSubstr("[]"));
}

TEST_F(ControlPlaneTest, EventsTellTheTimeline) {
  std::string id = Submit(WriteSpec("ev.yaml", CommandSpec("ev", "true")));
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  CommandResult r = Tau({"events", id});
  EXPECT_EQ(r.exit_code, 0);
  size_t submitted = r.out.find("Submitted"), admitted = r.out.find("Admitted"), started = r.out.find("Started"),
         succeeded = r.out.find("Succeeded");
  ASSERT_NE(succeeded, std::string::npos) << r.out;
  EXPECT_LT(submitted, admitted);
  EXPECT_LT(admitted, started);
  EXPECT_LT(started, succeeded);
  EXPECT_THAT(Tau({"status", id}).out, HasSubstr("Timeline:"));
}

TEST_F(ControlPlaneTest, BadRequestsGetErrorsAndTheServerStaysUp) {
  std::ifstream in(home_ / "server.json");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string url = nlohmann::json::parse(buf.str())["url"];
  std::ifstream token_in(home_ / "token");
  std::string token;
  std::getline(token_in, token);
  std::string script =
      "import sys, urllib.request, urllib.error\n"
      "url, token = sys.argv[1], sys.argv[2]\n"
      "def call(path, body, auth=True):\n"
      "    req = urllib.request.Request(url + path, data=body, method='POST')\n"
      "    if auth: req.add_header('Authorization', 'Bearer ' + token)\n"
      "    try:\n"
      "        return urllib.request.urlopen(req).status\n"
      "    except urllib.error.HTTPError as e:\n"
      "        return e.code\n"
      "    except Exception as e:\n"
      "        return 'error'\n"
      "print(call('/api/v1/jobs', b'{not json'))\n"
      "print(call('/api/v1/jobs', b'{}', auth=False))\n"
      "print(call('/api/v1/jobs', b'[' * (2 << 20)))\n"
      "print(call('/api/v1/jobs', b'{\"spec\": {\"name\": 1}, \"snapshot\": \"sha256:00\"}'))\n";
  CommandResult r = RunCommand({"/usr/bin/env", "python3", "-c", script, url, token});
  EXPECT_EQ(r.out, "400\n401\n413\n400\n") << r.err;
  EXPECT_EQ(Tau({"server", "status"}).exit_code, 0);
}

TEST_F(ControlPlaneTest, DependsOnMakesAPipeline) {
  std::string prep = Submit(WriteSpec("prep.yaml", CommandSpec("prep", "sleep 0.3; echo prepared > $TAU_OUTPUT_DIR/done")));
  std::string train = Submit(WriteSpec("train.yaml", CommandSpec("train", "echo training", "depends_on: [prep]\n")));
  // The admission pass right after the submit records why it waits.
  ASSERT_TRUE(WaitUntil([&] {
    nlohmann::json j = Job(train);
    return j["reason"] == "WaitingForDependencies" || j["state"] != "Queued";
  }));
  nlohmann::json waiting = Job(train);
  if (waiting["state"] == "Queued") {
    EXPECT_EQ(waiting["reason"], "WaitingForDependencies");
  }
  ASSERT_TRUE(WaitForState(train, "Succeeded"));
  EXPECT_GE(Job(train)["started_at"].get<std::string>(), Job(prep)["finished_at"].get<std::string>());

  std::string broken = Submit(WriteSpec("broken.yaml", CommandSpec("broken", "exit 1")));
  std::string after = Submit(WriteSpec("after.yaml", CommandSpec("after", "echo never", "depends_on: [broken]\n")));
  ASSERT_TRUE(WaitForState(after, "Failed"));
  EXPECT_EQ(Job(after)["reason"], "DependencyFailed");
  EXPECT_TRUE(Job(after)["attempts"].empty());

  CommandResult unknown = Tau({"run", WriteSpec("orphan.yaml", CommandSpec("orphan", "true", "depends_on: [nobody]\n"))});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("depends_on: no job with id or name \"nobody\""));
  (void)broken;
}

// A quoted entrypoint never closed used to be read with the lines after it
// swallowed into it, then stored and started; it is a syntax error at the
// opening quote and no job is created. So is a quote never closed in an env
// file.
TEST_F(ControlPlaneTest, UnterminatedQuotesAreRefusedBeforeAnythingIsStored) {
  std::string at_end = WriteSpec("at-end.yaml", "schema_version: 1\nname: at-end\nrun:\n  entrypoint: \"echo hi\n");
  CommandResult r = Tau({"run", "-f", at_end});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("at-end.yaml:4:15: error: invalid YAML: this quoted string is never closed"));
  std::string swallows = WriteSpec("swallows.yaml",
                                   "schema_version: 1\nname: swallows\nrun:\n  entrypoint: \"echo hi\n"
                                   "  args: [a]\ncompute:\n  cpus: 100m\n");
  r = Tau({"run", "-f", swallows});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("swallows.yaml:4:15: error: invalid YAML: this quoted string is never closed"));
  std::string spec = WriteSpec("fine.yaml", CommandSpec("fine", "true"));
  r = Tau({"run", "-f", "--env-file", WriteSpec("open.env", "TOKEN=\"abc\n"), spec});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("open.env:1:7: error: the double quote that opens the value of TOKEN is never closed"));
  std::string listed = Tau({"list", "-o", "json"}).out;
  for (const char* name : {"at-end", "swallows", "fine"}) {
    EXPECT_EQ(listed.find(name), std::string::npos) << name << " was stored";
  }
}

TEST_F(ControlPlaneTest, EnvFilesReachTheJobAndAreShownNowhere) {
  WriteFile(".env", "# secrets\nexport API_KEY=s3cr3t-value\nDB_PASSWORD='hunter2-value'\n");
  WriteFile("more.env", "EXTRA_TOKEN=\"tok-value\"\n");
  std::string spec = WriteSpec("secret.yaml", CommandSpec("secret", "echo got $API_KEY $DB_PASSWORD $EXTRA_TOKEN",
                                                          "runtime:\n  env_from_file: .env\n"));
  CommandResult r = Tau({"run", "-f", "--env-file", "more.env", spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("got s3cr3t-value hunter2-value tok-value\n"));
  nlohmann::json job = Job("secret");
  EXPECT_EQ(job["secret_env"], nlohmann::json::array({"API_KEY", "DB_PASSWORD", "EXTRA_TOKEN"}));
  std::string everything = Tau({"status", "secret", "-o", "json"}).out + Tau({"list", "-o", "wide"}).out +
                           Tau({"list", "-o", "json"}).out + Tau({"events"}).out;
  std::ifstream log(home_ / "server.log");
  std::stringstream log_text;
  log_text << log.rdbuf();
  everything += log_text.str();
  for (const char* value : {"s3cr3t-value", "hunter2-value", "tok-value"}) {
    EXPECT_EQ(everything.find(value), std::string::npos) << value << " leaked";
  }
  CommandResult bad = Tau({"run", "--env-file", WriteSpec("bad.env", "TAU_JOB_ID=x\nnot a line\n"), spec});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("bad.env:1:1: error: TAU_JOB_ID is set by TauGrid"));
  EXPECT_THAT(bad.err, HasSubstr("bad.env:2:1: error: expected KEY=VALUE"));
  // A folder is not an env file; "-" reads one from standard input.
  CommandResult folder = Tau({"run", "--env-file", work_.string(), spec});
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_THAT(folder.err, HasSubstr("is a folder, not a file of KEY=VALUE lines"));
  CommandResult piped = RunCommand({"/bin/sh", "-c", "printf 'EXTRA_TOKEN=piped-value\\n' | \"$0\" run -f --env-file - \"$1\"",
                                    BinPath("tau"), spec},
                                   work_.string(), Env());
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_THAT(piped.out, HasSubstr("got s3cr3t-value hunter2-value piped-value\n"));
}

TEST_F(ControlPlaneTest, JobsAreLimitedToTheirCpusAndMemory) {
  // With cgroup v2 delegation the limits are cgroup files; without it (CI's
  // hybrid hosts) jobs are pinned to CPUs and get RLIMIT_DATA. Either way a
  // 1-CPU, 256Mi job sees at most one CPU and cannot allocate 1 GiB.
  std::string spec = WriteSpec("limits.yaml",
      "schema_version: 1\nname: limits\nrun:\n  entrypoint: >-\n    python3 -c \"import os;"
      " print('cpus', len(os.sched_getaffinity(0)));"
      " exec('try:\\n b = bytearray(1 << 30)\\n print(\\\"allocated\\\")\\nexcept MemoryError:\\n print(\\\"refused\\\")')\"\n"
      "compute:\n  cpus: 1\n  memory: 256Mi\n");
  CommandResult r = Tau({"run", "-f", spec});
  std::ifstream log(home_ / "server.log");
  std::stringstream log_text;
  log_text << log.rdbuf();
  if (log_text.str().find("jobs run in cgroup v2 leaves") != std::string::npos) {
    EXPECT_THAT(r.out + r.err, ::testing::AnyOf(HasSubstr("refused"), HasSubstr("OOMKilled")));
    return;
  }
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("cpus 1\n"));
  EXPECT_THAT(r.out, HasSubstr("refused\n"));
}

TEST_F(ControlPlaneTest, ServerStopLeavesJobsRunningAndARestartAdoptsThem) {
  std::string id = Submit(WriteSpec("survivor.yaml", CommandSpec("survivor", "echo before; sleep 1; echo after")));
  ASSERT_TRUE(WaitUntil([&] { return Tau({"logs", id}).out.find("before") != std::string::npos; }));
  ASSERT_EQ(Tau({"server", "stop"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(Tau({"server", "start"}).exit_code, 0);
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  EXPECT_EQ(Tau({"logs", id}).out, "before\nafter\n");
  EXPECT_EQ(Job(id)["attempts"].size(), 1u);
}

}  // namespace
}  // namespace tau::testing
