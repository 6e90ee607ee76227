// What a job leaves behind (outputs, logs, the metrics file, checkpoints)
// served safely: never through a link the job planted, with secrets
// redacted from the record, and streamed with bounded memory.

#include <gmock/gmock.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "TOP-SECRET-5f2e";

class JobFilesTest : public DaemonTest {
 protected:
  void BeforeStart() override {
    outside_ = work_ / "outside";
    fs::create_directories(outside_);
    std::ofstream(outside_ / "shadow") << "{\"step\": 1, \"leak\": \"" << kSecret << "\"}\n";
  }

  // GET `path` of the API (with a Range header when `range` is set):
  // "STATUS\nBODY".
  std::string Get(const std::string& path, const std::string& range = "") {
    const std::string script =
        "import sys, urllib.request, urllib.error\n"
        "h = {'Authorization': 'Bearer ' + sys.argv[2]}\n"
        "if sys.argv[4]: h['Range'] = sys.argv[4]\n"
        "req = urllib.request.Request(sys.argv[1] + sys.argv[3], headers=h)\n"
        "try:\n    r = urllib.request.urlopen(req); print(r.status); sys.stdout.write(r.read().decode('utf-8', 'replace'))\n"
        "except urllib.error.HTTPError as e:\n    print(e.code); sys.stdout.write(e.read().decode('utf-8', 'replace'))\n";
    CommandResult r = RunCommand({"/usr/bin/env", "python3", "-c", script, ApiUrl(), ApiToken(), path, range});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // Runs `script` (Python) as a job and waits for it to succeed.
  std::string RunJob(const std::string& script, std::vector<std::string> extra = {}) {
    WriteFile("code/job.py", script);
    std::string spec = WriteSpec("job.yaml",
                                 "schema_version: 1\nname: leave\nrun:\n  entrypoint: job.py\n  working_dir: code\n"
                                 "compute:\n  cpus: 100m\n  memory: 256Mi\n");
    std::string id = Submit(spec, std::move(extra));
    EXPECT_TRUE(WaitForState(id, "Succeeded")) << Tau({"logs", id}).out;
    return id;
  }

  // Peak resident memory (VmHWM) of the running daemon, in bytes.
  int64_t DaemonPeakRss() {
    std::ifstream in("/proc/" + std::to_string(DaemonPid()) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
    }
    ADD_FAILURE() << "no VmHWM for the daemon";
    return 0;
  }

  fs::path outside_;
};

TEST_F(JobFilesTest, OutputsServeNothingThroughALinkTheJobPlanted) {
  std::string id = RunJob(
      "import os\n"
      "out = os.environ['TAU_OUTPUT_DIR']\n"
      "open(os.path.join(out, 'real.txt'), 'w').write('real\\n')\n"
      "os.symlink('" + outside_.string() + "', os.path.join(out, 'etcdir'))\n"
      "os.symlink('" + (outside_ / "shadow").string() + "', os.path.join(out, 'shadow'))\n"
      "os.mkfifo(os.path.join(out, 'pipe'))\n");
  // A folder link: refused, and the file behind it never read.
  std::string through_folder = Get("/api/v1/jobs/" + id + "/outputs/etcdir/shadow");
  EXPECT_THAT(through_folder, ::testing::StartsWith("403\n"));
  EXPECT_THAT(through_folder, HasSubstr("etcdir/shadow: \\\"etcdir\\\" is a symbolic link, which is not followed"));
  EXPECT_THAT(through_folder, Not(HasSubstr(kSecret)));
  std::string file_link = Get("/api/v1/jobs/" + id + "/outputs/shadow");
  EXPECT_THAT(file_link, ::testing::StartsWith("403\n"));
  EXPECT_THAT(file_link, Not(HasSubstr(kSecret)));
  std::string fifo = Get("/api/v1/jobs/" + id + "/outputs/pipe");  // answered, not blocked on
  EXPECT_THAT(fifo, ::testing::StartsWith("403\n"));
  EXPECT_THAT(fifo, HasSubstr("a fifo, not a regular file"));
  EXPECT_THAT(Get("/api/v1/jobs/" + id + "/outputs/%2E%2E/%2E%2E/token"), ::testing::StartsWith("400\n"));
  EXPECT_EQ(Get("/api/v1/jobs/" + id + "/outputs/real.txt"), "200\nreal\n");
  EXPECT_EQ(Get("/api/v1/jobs/" + id + "/outputs/real.txt", "bytes=1-2"), "206\nea");

  // The outputs folder itself replaced by a link.
  fs::path outputs = home_ / "jobs" / id / "outputs";
  fs::remove_all(outputs);
  fs::create_directory_symlink(outside_, outputs);
  std::string listing = Get("/api/v1/jobs/" + id + "/outputs");
  EXPECT_THAT(listing, ::testing::StartsWith("403\n"));
  EXPECT_THAT(Get("/api/v1/jobs/" + id + "/outputs/shadow"), ::testing::StartsWith("403\n"));
}

TEST_F(JobFilesTest, ListingAndCopyTakeOddNamesAndLeaveLinksOut) {
  const std::string long_name(250, 'n');
  std::string id = RunJob(
      "import os\n"
      "out = os.environ['TAU_OUTPUT_DIR']\n"
      "open(os.path.join(out, 'real.txt'), 'w').write('real\\n')\n"
      "os.makedirs(os.path.join(out, 'a\\nb'))\n"
      "open(os.path.join(out, 'a\\nb', 'x y.txt'), 'w').write('odd\\n')\n"
      "open(os.path.join(out, '" + long_name + "'), 'w').write('long\\n')\n"
      "os.symlink('" + outside_.string() + "', os.path.join(out, 'etcdir'))\n"
      "os.symlink('" + (outside_ / "shadow").string() + "', os.path.join(out, 'shadow'))\n");
  CommandResult listed = Tau({"outputs", id, "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  nlohmann::json files = nlohmann::json::parse(listed.out)["files"];
  ASSERT_EQ(files.size(), 3u) << listed.out;
  EXPECT_EQ(files[0]["path"], "a\nb/x y.txt");
  EXPECT_EQ(files[1]["path"], long_name);
  EXPECT_EQ(files[2]["path"], "real.txt");
  CommandResult copied = Tau({"cp", id + ":", (work_ / "copy").string()});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  EXPECT_TRUE(fs::exists(work_ / "copy" / "real.txt"));
  EXPECT_TRUE(fs::exists(work_ / "copy" / "a\nb" / "x y.txt"));
  EXPECT_TRUE(fs::exists(work_ / "copy" / long_name));
  EXPECT_FALSE(fs::exists(work_ / "copy" / "etcdir"));
  EXPECT_FALSE(fs::exists(work_ / "copy" / "shadow"));
}

TEST_F(JobFilesTest, LogsMetricsCheckpointsAndTheBundleNeverFollowLinks) {
  // The job swaps its own log, metrics file and a checkpoint for links to
  // a file it wants the daemon to read.
  std::string id = RunJob(
      "import os, time\n"
      "secret = '" + (outside_ / "shadow").string() + "'\n"
      "job = os.path.dirname(os.environ['TAU_OUTPUT_DIR'])\n"
      "print('hello', flush=True)\n"
      "log = os.path.join(job, 'attempts', '1', 'rank-0.log')\n"
      "os.remove(log); os.symlink(secret, log)\n"
      "metrics = os.environ['TAU_METRICS_FILE']\n"
      "if os.path.exists(metrics): os.remove(metrics)\n"
      "os.symlink(secret, metrics)\n"
      "ck = os.environ['TAU_CHECKPOINT_DIR']\n"
      "os.makedirs(ck, exist_ok=True)\n"
      "os.symlink('" + outside_.string() + "', os.path.join(ck, 'step-9'))\n"
      "open(os.path.join(ck, 'step-1.json'), 'w').write('{}')\n");
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["evidence"].is_string(); }));
  CommandResult logs = Tau({"logs", id});
  EXPECT_THAT(logs.out, Not(HasSubstr(kSecret)));
  CommandResult tail = Tau({"logs", id, "--tail", "5"});
  EXPECT_THAT(tail.out, Not(HasSubstr(kSecret)));
  std::string metrics = Get("/api/v1/jobs/" + id + "/metrics");
  EXPECT_THAT(metrics, Not(HasSubstr(kSecret)));
  EXPECT_THAT(metrics, HasSubstr("symbolic link"));
  CommandResult checkpoints = Tau({"checkpoints", id, "-o", "json"});
  EXPECT_THAT(checkpoints.out, HasSubstr("step-1.json"));
  EXPECT_THAT(checkpoints.out, Not(HasSubstr("step-9")));

  fs::path bundle = work_ / "bundle.tar.zst";
  CommandResult exported = Tau({"evidence", id, "--export", bundle.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  fs::create_directories(work_ / "unpacked");
  CommandResult unpacked = RunCommand(
      {"/bin/sh", "-c", "zstd -dc '" + bundle.string() + "' | tar x -C '" + (work_ / "unpacked").string() + "'"});
  ASSERT_EQ(unpacked.exit_code, 0) << unpacked.err;
  EXPECT_TRUE(fs::exists(work_ / "unpacked" / id / "capsule.json"));
  EXPECT_FALSE(fs::exists(work_ / "unpacked" / id / "metrics.jsonl"));
  CommandResult grep = RunCommand({"/bin/sh", "-c", "grep -r -l '" + std::string(kSecret) + "' '" +
                                                        (work_ / "unpacked").string() + "' || true"});
  EXPECT_EQ(grep.out, "");
}

TEST_F(JobFilesTest, SecretValuesAreRedactedInTheRecordedCommand) {
  std::string id = RunJob(
      "import os\n"
      "open(os.path.join(os.environ['TAU_OUTPUT_DIR'], 'env.txt'), 'w').write(\n"
      "    os.environ['HF_TOKEN'] + ' ' + os.environ['DATA_URL'] + '\\n')\n",
      {"--set", "runtime.env.HF_TOKEN=hf_value 9a7", "--set", "runtime.env.DATA_URL=https://alice:pw-31337@data.example/d"});
  // The job itself sees the real values.
  ASSERT_EQ(Tau({"cp", id + ":env.txt", (work_ / "env.txt").string()}).exit_code, 0);
  std::ifstream env(work_ / "env.txt");
  std::string line;
  std::getline(env, line);
  EXPECT_EQ(line, "hf_value 9a7 https://alice:pw-31337@data.example/d");

  const std::string command = Job(id)["submit_command"].get<std::string>();
  EXPECT_THAT(command, HasSubstr("--set runtime.env.HF_TOKEN=<redacted>"));
  EXPECT_THAT(command, HasSubstr("--set runtime.env.DATA_URL=https://alice:<redacted>@data.example/d"));
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["evidence"].is_string(); }));
  CommandResult capsule = Tau({"evidence", id, "-o", "json"});
  ASSERT_EQ(capsule.exit_code, 0) << capsule.err;
  nlohmann::json c = nlohmann::json::parse(capsule.out);
  EXPECT_EQ(c["submit_command"], command);
  EXPECT_EQ(c["environment"]["HF_TOKEN"], "<redacted>");
  EXPECT_EQ(c["environment"]["DATA_URL"], "https://alice:<redacted>@data.example/d");
  EXPECT_EQ(c["spec"]["runtime"]["env"]["DATA_URL"], "https://alice:<redacted>@data.example/d");
  fs::path bundle = work_ / "bundle.tar.zst";
  ASSERT_EQ(Tau({"evidence", id, "--export", bundle.string()}).exit_code, 0);
  for (const std::string& shown : {Tau({"status", id, "-o", "json"}).out, capsule.out,
                                   RunCommand({"/bin/sh", "-c", "zstd -dc '" + bundle.string() + "'"}).out}) {
    EXPECT_THAT(shown, Not(HasSubstr("9a7")));
    EXPECT_THAT(shown, Not(HasSubstr("pw-31337")));
  }
}

// A test of memory, not of time: a 512 MiB (sparse) output and a 512 MiB
// log go through the daemon and `tau` with a bounded peak resident size
// (holding either in memory would take at least its size).
TEST_F(JobFilesTest, LargeFilesStreamWithBoundedMemory) {
  constexpr int64_t kBig = int64_t{512} << 20;
  constexpr int64_t kBound = int64_t{32} << 20;
  std::string id = RunJob(
      "import os\n"
      "with open(os.path.join(os.environ['TAU_OUTPUT_DIR'], 'big.bin'), 'wb') as f:\n"
      "    f.truncate(" + std::to_string(kBig) + ")\n"
      "    f.seek(" + std::to_string(kBig - 4) + "); f.write(b'tail')\n"
      "print('start', flush=True)\n"
      "log = os.path.join(os.path.dirname(os.environ['TAU_OUTPUT_DIR']), 'attempts', '1', 'rank-0.log')\n"
      "os.truncate(log, " + std::to_string(kBig) + ")\n");
  const int64_t before = DaemonPeakRss();
  ASSERT_GT(before, 0);

  fs::path copy = work_ / "big.bin";
  // Run under a small Python parent whose only child is `tau cp`, so its
  // children's peak RSS is that of `tau cp` alone.
  const std::string measure =
      "import resource, subprocess, sys\n"
      "rc = subprocess.run(sys.argv[1:]).returncode\n"
      "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
      "sys.exit(rc)\n";
  CommandResult cp = RunCommand({"/usr/bin/env", "python3", "-c", measure, BinPath("tau"), "cp", id + ":big.bin",
                                 copy.string()},
                                work_.string(), Env());
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  const int64_t tau_cp_peak = std::atoll(cp.out.substr(cp.out.rfind('\n', cp.out.size() - 2) + 1).c_str());
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(copy)), kBig);
  {
    std::ifstream in(copy, std::ios::binary);
    in.seekg(kBig - 4);
    std::string tail(4, '\0');
    in.read(tail.data(), 4);
    EXPECT_EQ(tail, "tail");
  }
  fs::remove(copy);
  RecordProperty("daemon_peak_growth_after_cp", std::to_string(DaemonPeakRss() - before));
  RecordProperty("tau_cp_peak_rss", std::to_string(tau_cp_peak));
  EXPECT_LE(DaemonPeakRss() - before, kBound) << "the daemon held the output in memory";
  EXPECT_GT(tau_cp_peak, 0) << cp.out;
  EXPECT_LE(tau_cp_peak, kBound) << "tau cp held the output in memory";

  fs::path bundle = work_ / "bundle.tar.zst";
  CommandResult exported = Tau({"evidence", id, "--export", bundle.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  RecordProperty("daemon_peak_growth_after_export", std::to_string(DaemonPeakRss() - before));
  EXPECT_LE(DaemonPeakRss() - before, kBound) << "the daemon held the bundle in memory";
  CommandResult size = RunCommand(
      {"/bin/sh", "-c", "zstd -dc '" + bundle.string() + "' | tar tv | grep attempt-1-rank-0.log"});
  EXPECT_THAT(size.out, HasSubstr(std::to_string(kBig))) << size.out << size.err;
}

// The pid of the running `tau` whose command line holds `word`, or 0.
int FindTau(const std::string& word) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(BinPath("tau")) == 0 && cmdline.find(word) != std::string::npos) return std::stoi(name);
  }
  return 0;
}

// Whether process `pid` has a file open under `dir`.
bool HasFileOpenIn(int pid, const fs::path& dir) {
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code e;
    if (fs::read_symlink(fd.path(), e).string().rfind(dir.string() + "/", 0) == 0) return true;
  }
  return false;
}

TEST_F(JobFilesTest, AKilledCopyLeavesNothingBehind) {
  constexpr int64_t kBig = int64_t{1} << 30;
  std::string id = RunJob(
      "import os\n"
      "with open(os.path.join(os.environ['TAU_OUTPUT_DIR'], 'big.bin'), 'wb') as f:\n"
      "    f.truncate(" + std::to_string(kBig) + ")\n");
  const fs::path dest_dir = work_ / "dest";
  fs::create_directories(dest_dir);
  CommandResult cp;
  std::thread copier([&] { cp = Tau({"cp", id + ":big.bin", (dest_dir / "big.bin").string()}); });
  // Killed while it writes the file (it has a file open in DEST's folder).
  int pid = 0;
  const bool writing = WaitUntil([&] {
    if (pid == 0) pid = FindTau(id + ":big.bin");
    return pid != 0 && HasFileOpenIn(pid, dest_dir);
  });
  if (writing) ::kill(pid, SIGKILL);
  copier.join();
  ASSERT_TRUE(writing) << "tau cp never wrote into " << dest_dir << ": " << cp.err;
  if (cp.exit_code == 0) {  // it finished before the kill landed: the whole file
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(dest_dir / "big.bin")), kBig);
    return;
  }
  EXPECT_EQ(cp.exit_code, 128 + SIGKILL);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dest_dir)) left.push_back(e.path().filename().string());
  EXPECT_THAT(left, ::testing::IsEmpty()) << "a killed copy left a file behind";
}

}  // namespace
}  // namespace tau::testing
