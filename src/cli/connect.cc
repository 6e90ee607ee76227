#include "cli/connect.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/duration.h"

namespace tau::cli {
namespace fs = std::filesystem;

std::optional<LocalServerInfo> ReadServerJson(const TauHome& home) {
  std::ifstream in(home.server_json());
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(buf.str(), nullptr, false);
  if (!j.is_object() || !j.contains("url")) return std::nullopt;
  return LocalServerInfo{j.value("pid", int64_t{0}), j.value("url", ""), j.value("listen", "")};
}

std::string TaugriddPath() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = exe.parent_path() / "taugridd";
    if (fs::exists(beside, ec)) return beside.string();
  }
  return "taugridd";
}

namespace {

std::string ReadToken(const TauHome& home) {
  std::ifstream in(home.token());
  std::string token;
  std::getline(in, token);
  return token;
}

// How long to wait for a daemon that holds the lock but does not answer.
Duration ConnectPatience() {
  if (const char* text = std::getenv("TAU_CONNECT_PATIENCE"); text && *text) {
    if (auto d = ParseDuration(text); d.ok()) return *d;
  }
  return std::chrono::seconds(30);
}

}  // namespace

bool DaemonHoldsLock(const TauHome& home) {
  int fd = ::open(home.daemon_lock().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never started here
  // A shared lock is refused only while a daemon holds its exclusive one.
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock when it was taken
  return held;
}

Result<ServerEndpoint> WaitForBusyServer(const TauHome& home) {
  const Duration patience = ConnectPatience();
  const auto deadline = std::chrono::steady_clock::now() + patience;
  static bool said = false;  // once per process
  while (true) {
    auto info = ReadServerJson(home);
    if (info && ServerAnswers(info->url)) return ServerEndpoint{info->url, ReadToken(home)};
    if (!DaemonHoldsLock(home)) return UnavailableError("taugridd exited");
    if (std::chrono::steady_clock::now() >= deadline) {
      return UnavailableError(fmt::format(
          "taugridd{} holds {} but has not answered for {}: it is busy or stuck (not starting another); "
          "see {}",
          info ? fmt::format(" (pid {})", info->pid) : "", home.daemon_lock().string(), FormatDurationShort(patience),
          home.server_log().string()));
    }
    if (!said) {
      std::fprintf(stderr, "tau: taugridd is running (it holds %s) but does not answer yet; waiting for it\n",
                   home.daemon_lock().c_str());
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Result<int64_t> StartBackgroundServer(const TauHome& home, const std::vector<std::string>& daemon_args) {
  std::error_code ec;
  fs::create_directories(home.root(), ec);
  if (ec) return ErrnoError(ec.value(), fmt::format("create {}", home.root().string()));
  std::string daemon = TaugriddPath();
  std::string log_path = home.server_log().string();
  std::vector<std::string> args = {daemon, "--home", home.root().string()};
  args.insert(args.end(), daemon_args.begin(), daemon_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto before = ReadServerJson(home);
  pid_t child = ::fork();
  if (child < 0) return ErrnoError(errno, "fork");
  if (child == 0) {
    // Intermediate child: new session, then fork again so the daemon is
    // not a child of this process and never gets a terminal.
    ::setsid();
    pid_t grandchild = ::fork();
    if (grandchild != 0) ::_exit(grandchild < 0 ? 1 : 0);
    int null_fd = ::open("/dev/null", O_RDONLY);
    int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    if (log_fd >= 0) {
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
    }
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    ::execvp(daemon.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  // Wait until the new server has written server.json and answers.
  for (int i = 0; i < 200; ++i) {
    auto info = ReadServerJson(home);
    if (info && (!before || info->pid != before->pid) && ServerAnswers(info->url)) return info->pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return UnavailableError(fmt::format("taugridd did not start; see {}", log_path));
}

Result<ServerEndpoint> ConnectToServer(bool start_if_needed) {
  if (const char* remote = std::getenv("TAU_SERVER"); remote && *remote) {
    const char* token = std::getenv("TAU_TOKEN");
    return ServerEndpoint{remote, token ? token : ""};
  }
  TauHome home(TauHome::DefaultRoot());
  auto info = ReadServerJson(home);
  if (info && ServerAnswers(info->url)) return ServerEndpoint{info->url, ReadToken(home)};
  // A daemon that holds the lock is alive, only slow to answer (or still
  // starting): wait for it; a second one could not start anyway.
  if (DaemonHoldsLock(home)) {
    auto busy = WaitForBusyServer(home);
    if (busy.ok() || DaemonHoldsLock(home)) return busy;
  }
  if (!start_if_needed) {
    return UnavailableError(fmt::format("no taugridd is running for {} (start one with `tau server start`)",
                                        home.root().string()));
  }
  TAU_ASSIGN_OR_RETURN(int64_t pid, StartBackgroundServer(home));
  std::fprintf(stderr, "tau: started taugridd (pid %lld) for %s; its log is %s\n",
               static_cast<long long>(pid), home.root().c_str(), home.server_log().c_str());
  info = ReadServerJson(home);
  if (!info) return UnavailableError("taugridd started but wrote no server.json");
  return ServerEndpoint{info->url, ReadToken(home)};
}

}  // namespace tau::cli
