// A full disk fails the submit with a clear reason and leaves the database
// intact. TAU_HOME lives on a small tmpfs (needs root to mount; skipped,
// saying why, otherwise).

#include <gmock/gmock.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class DiskFullTest : public DaemonTest {
 protected:
  void BeforeStart() override {
    fs::create_directories(home_);
    if (::mount("tmpfs", home_.c_str(), "tmpfs", 0, "size=8m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs for TAU_HOME (" << std::strerror(errno)
                   << "); the disk-full test needs root";
    }
    mounted_ = true;
  }
  void TearDown() override {
    DaemonTest::TearDown();
    if (mounted_) ::umount2(home_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(home_.parent_path(), ec);
  }
  // Fills the tmpfs until about `leave` bytes are free.
  void Fill(size_t leave) {
    fs::space_info space = fs::space(home_);
    std::ofstream out(home_ / "filler", std::ios::binary);
    std::string block(1 << 16, 'f');
    for (size_t written = 0; written + leave + block.size() < space.available; written += block.size()) {
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
    }
  }
  // Fills the tmpfs to the last byte.
  void FillCompletely() {
    Fill(0);
    int fd = ::open((home_ / "filler").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::string block(4096, 'f');
    for (size_t n : {size_t{4096}, size_t{1}}) {
      while (::write(fd, block.data(), n) == static_cast<ssize_t>(n)) {
      }
    }
    ::close(fd);
  }
  bool mounted_ = false;
};

TEST_F(DiskFullTest, ASubmitThatDoesNotFitFailsClearlyAndLosesNothing) {
  std::string spec = "schema_version: 1\nname: disk\nrun:\n  entrypoint: 'cat big.bin | wc -c'\ncompute:\n  cpus: 100m\n";
  std::string before = Submit(WriteSpec("small.yaml", "schema_version: 1\nname: before\nrun:\n  entrypoint: 'true'\n"));
  ASSERT_TRUE(WaitForState(before, "Succeeded"));

  // An incompressible 1 MiB file in the job's folder, with ~200 KiB free.
  std::string random(1 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : random) c = static_cast<char>(rng());
  WriteFile("big.bin", random);
  Fill(200 << 10);
  CommandResult r = Tau({"run", WriteSpec("disk.yaml", spec)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::AnyOf(HasSubstr("disk full"), HasSubstr("No space left on device"),
                                      HasSubstr("database or disk is full")));

  // The database still answers and holds what it held.
  nlohmann::json jobs = nlohmann::json::parse(Tau({"list", "-o", "json"}).out);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], before);
  EXPECT_EQ(jobs[0]["state"], "Succeeded");

  // With space again, the same submit works.
  fs::remove(home_ / "filler");
  CommandResult again = Tau({"run", "-f", WriteSpec("disk.yaml", spec)});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("1048576"));
}

TEST_F(DiskFullTest, AJobThatFillsTheDiskRunsOnceAndItsEndIsRecorded) {
  // It notes each run, then fills the disk and exits 0 leaving it full:
  // its shim must still record that end.
  std::string spec = WriteSpec("fill.yaml",
                               "schema_version: 1\nname: fill\nrun:\n"
                               "  entrypoint: 'rm -f fill; echo ran >> \"$TAU_OUTPUT_DIR/runs\"; "
                               "dd if=/dev/zero of=fill bs=64k 2>/dev/null; exit 0'\n"
                               "  launcher: command\ncompute:\n  cpus: 100m\nretry:\n  backoff: 1s\n");
  std::string id = Submit(spec);
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitUntil([&] {
    std::string state = Job(id).value("state", "");
    return state == "Succeeded" || state == "Failed";
  }));
  nlohmann::json job = Job(id);
  EXPECT_EQ(job["state"], "Succeeded") << job.dump(2);
  EXPECT_EQ(job["attempts"].size(), 1u) << job.dump(2);
  std::ifstream runs(home_ / "jobs" / id / "outputs" / "runs");
  std::stringstream text;
  text << runs.rdbuf();
  EXPECT_EQ(text.str(), "ran\n");
}

TEST_F(DiskFullTest, ADaemonStartsOnAFullDiskAnswersReadsAndRefusesSubmitsUntilSpaceReturns) {
  std::string before = Submit(WriteSpec("small.yaml", "schema_version: 1\nname: before\nrun:\n  entrypoint: 'true'\n"));
  ASSERT_TRUE(WaitForState(before, "Succeeded"));
  ASSERT_EQ(Tau({"server", "stop"}).exit_code, 0);
  ASSERT_TRUE(WaitForDaemonGone());

  FillCompletely();
  CommandResult started = Tau({"server", "start"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  CommandResult list = Tau({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(before));
  CommandResult status = Tau({"status", before});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("Succeeded"));
  CommandResult server = Tau({"server", "status"});
  EXPECT_EQ(server.exit_code, 0) << server.err;
  EXPECT_THAT(server.out, HasSubstr("DiskFull"));
  std::ifstream log(home_ / "server.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("DiskFull"));

  std::string spec = WriteSpec("after.yaml", "schema_version: 1\nname: after\nrun:\n  entrypoint: 'echo done'\n");
  CommandResult refused = Tau({"run", spec});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, ::testing::AnyOf(HasSubstr("is full"), HasSubstr("No space left on device")));

  // Once space returns, the daemon notices by itself and takes submits.
  fs::remove(home_ / "filler");
  ASSERT_TRUE(WaitUntil([&] { return Tau({"server", "status"}).out.find("DiskFull") == std::string::npos; }));
  CommandResult again = Tau({"run", "-f", spec});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("done"));
}

}  // namespace
}  // namespace tau::testing
