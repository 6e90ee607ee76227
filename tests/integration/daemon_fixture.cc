#include "daemon_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace tau::testing {
namespace fs = std::filesystem;

void DaemonTest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path base = fs::temp_directory_path() /
                  (std::string("tau-it-") + info->test_suite_name() + "-" + info->name() + "-" + std::to_string(::getpid()));
  fs::remove_all(base);
  home_ = base / "home";
  work_ = base / "work";
  fs::create_directories(work_);
  BeforeStart();
  if (HasFatalFailure() || IsSkipped()) return;
  CommandResult started = Tau({"server", "start"});
  ASSERT_EQ(started.exit_code, 0) << started.err << started.out;
}

void DaemonTest::TearDown() {
  // Stop whatever still runs, then the daemon.
  CommandResult list = Tau({"list", "-o", "json"});
  nlohmann::json jobs = nlohmann::json::parse(list.out, nullptr, false);
  if (jobs.is_array()) {
    for (const auto& j : jobs) {
      std::string state = j.value("state", "");
      if (state == "Running" || state == "Queued" || state == "Admitted") Tau({"cancel", j.value("id", "")});
    }
    for (const auto& j : jobs) WaitUntil([&] {
      std::string s = Job(j.value("id", "")).value("state", "");
      return s != "Running" && s != "Admitted" && s != "Queued";
    });
  }
  Tau({"server", "stop"});
  std::error_code ec;
  fs::remove_all(home_.parent_path(), ec);
}

std::map<std::string, std::string> DaemonTest::Env() const {
  std::map<std::string, std::string> env = {{"TAU_HOME", home_.string()}, {"NO_COLOR", "1"}, {"TAU_SERVER", ""}};
  for (const auto& [k, v] : extra_env_) env[k] = v;
  return env;
}

CommandResult DaemonTest::Tau(std::vector<std::string> args, const std::string& cwd) {
  args.insert(args.begin(), BinPath("tau"));
  return RunCommand(args, cwd.empty() ? work_.string() : cwd, Env());
}

std::string DaemonTest::WriteSpec(const std::string& name, const std::string& body) {
  fs::path p = work_ / name;
  std::ofstream(p) << body;
  return p.string();
}

void DaemonTest::WriteFile(const std::string& relative, const std::string& data) {
  fs::create_directories((work_ / relative).parent_path());
  std::ofstream(work_ / relative) << data;
}

nlohmann::json DaemonTest::Job(const std::string& id) {
  CommandResult r = Tau({"status", id, "-o", "json"});
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

bool DaemonTest::WaitUntil(const std::function<bool()>& ready, std::chrono::seconds limit,
                           std::chrono::milliseconds poll) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(poll);
  }
  return false;
}

bool DaemonTest::WaitForState(const std::string& id, const std::string& state) {
  return WaitUntil([&] { return Job(id).value("state", "") == state; });
}

std::string DaemonTest::Submit(const std::string& spec_path, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", spec_path};
  args.insert(args.end(), extra.begin(), extra.end());
  CommandResult r = Tau(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

int64_t DaemonTest::DaemonPid() {
  std::ifstream in(home_ / "server.json");
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(buf.str(), nullptr, false);
  return j.is_object() ? j.value("pid", int64_t{0}) : 0;
}

std::string DaemonTest::ApiToken() {
  std::ifstream in(home_ / "token");
  std::string token;
  std::getline(in, token);
  return token;
}

std::string DaemonTest::ApiUrl() {
  std::ifstream in(home_ / "server.json");
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(buf.str(), nullptr, false);
  return j.is_object() ? j.value("url", "") : "";
}

std::string DaemonTest::PyPiUnreachable() {
  CommandResult probe = RunCommand({"/usr/bin/env", "python3", "-m", "pip", "download", "--no-deps", "-q", "-d",
                                    (work_ / "probe").string(), "six==1.16.0"});
  return probe.exit_code == 0 ? "" : "PyPI is not reachable from here: " + probe.err;
}

bool DaemonTest::WaitForDaemonGone() {
  return WaitUntil([&] {  // its lock is released when it dies
    int fd = ::open((home_ / "taugridd.lock").c_str(), O_RDWR | O_CLOEXEC);
    bool free = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0) ::close(fd);
    return free;
  });
}

}  // namespace tau::testing
