// tau-bench-api-under-load: how fast taugridd answers while many clients
// follow a job's log.
//
//   tau-bench-api-under-load [--followers N] [--half-sent N] [--samples N] [--bin DIR] [--max-ms MS]
//
// Starts a private taugridd (fresh TAU_HOME in a temp folder, loopback
// only), submits one job that runs until the benchmark ends, and times
// GET /healthz, POST /api/v1/jobs and GET /api/v1/jobs, each on a fresh
// connection as `tau` makes them: first with no follower (the baseline),
// then with N open `logs?follow=true` streams, then with --half-sent
// connections besides (unauthenticated clients that send half a request
// head and stop: slowloris). Prints all three and exits 1 when --max-ms is
// given and a request under load took longer. Everything
// it started is stopped and removed at the end, or after 5 minutes.

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

class Connection {
 public:
  explicit Connection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads the response head (and a Content-Length body); "" on timeout.
  std::string Read(bool head_only, int timeout_ms) {
    std::string in;
    char buf[16384];
    while (true) {
      size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        if (head_only) return in;
        size_t cl = in.find("Content-Length: ");
        if (cl == std::string::npos || cl > end) return in;
        if (in.size() >= end + 4 + std::stoul(in.substr(cl + 16))) return in;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) != 1) return "";
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return in;
      in.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

struct Target {
  int port = 0;
  std::string token;
};

// One request on a fresh connection; milliseconds, or -1 when it failed.
double Time(const Target& t, const std::string& method, const std::string& path, const std::string& body,
            int* status) {
  auto start = Clock::now();
  Connection c(t.port);
  if (!c.ok()) return -1;
  std::string req = fmt::format("{} {} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n", method,
                                path, t.token, body.size());
  if (!body.empty()) req += "Content-Type: application/json\r\n";
  req += "Connection: close\r\n\r\n" + body;
  if (!c.Send(req)) return -1;
  std::string res = c.Read(false, 60000);
  if (res.size() < 12) return -1;
  *status = std::atoi(res.c_str() + 9);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Stats {
  double p50 = 0, p99 = 0, max = 0;
  int failed = 0;
};

Stats Measure(const Target& t, const std::string& method, const std::string& path, const std::string& body,
              int samples, int expect) {
  std::vector<double> ms;
  Stats s;
  for (int i = 0; i < samples; ++i) {
    int status = 0;
    double d = Time(t, method, path, body, &status);
    if (d < 0 || status != expect) {
      ++s.failed;
      continue;
    }
    ms.push_back(d);
  }
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.p50 = ms[ms.size() / 2];
  s.p99 = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  s.max = ms.back();
  return s;
}

long RssKiB(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

long Threads(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atol(line.c_str() + 8);
  }
  return -1;
}

pid_t daemon_pid = -1;
fs::path base_dir;
Target daemon_target;  // set once taugridd answers

// The body of a GET on a fresh connection; empty when it failed.
std::string Get(const Target& t, const std::string& path) {
  Connection c(t.port);
  if (!c.ok()) return "";
  if (!c.Send(fmt::format("GET {} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
                          path, t.token))) {
    return "";
  }
  std::string res = c.Read(false, 10000);
  size_t body = res.find("\r\n\r\n");
  return body == std::string::npos ? "" : res.substr(body + 4);
}

// Whether every job the bench made has ended (so no shim outlives the
// bench's folder).
bool AllJobsEnded(const Target& t) {
  nlohmann::json page = nlohmann::json::parse(Get(t, "/api/v1/jobs?limit=1000"), nullptr, false);
  if (!page.is_object() || !page.contains("jobs") || !page["jobs"].is_array()) return false;
  for (const auto& job : page["jobs"]) {
    const std::string state = job.value("state", "");
    if (state != "Succeeded" && state != "Failed" && state != "Cancelled") return false;
  }
  return true;
}

void Cleanup() {
  if (daemon_pid > 0 && daemon_target.port != 0) {
    // The followed job ends when the stop file is there; the probes end
    // at once. Their shims write into the folder removed below.
    std::ofstream(base_dir / "work" / "stop") << "";
    for (int i = 0; i < 600 && !AllJobsEnded(daemon_target); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (daemon_pid > 0) {
    ::kill(daemon_pid, SIGTERM);
    ::waitpid(daemon_pid, nullptr, 0);
    daemon_pid = -1;
  }
  std::error_code ec;
  if (!base_dir.empty()) fs::remove_all(base_dir, ec);
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "tau-bench-api-under-load: %s\n", why.c_str());
  Cleanup();
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int followers = 1000, half_sent = 4000, samples = 50;
  double max_ms = 0;
  fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--followers") followers = std::atoi(value().c_str());
    else if (a == "--samples") samples = std::atoi(value().c_str());
    else if (a == "--half-sent") half_sent = std::atoi(value().c_str());
    else if (a == "--bin") bin = value();
    else if (a == "--max-ms") max_ms = std::atof(value().c_str());
    else Die("usage: tau-bench-api-under-load [--followers N] [--half-sent N] [--samples N] [--bin DIR] [--max-ms MS]");
  }
  if (followers < 0 || half_sent < 0 || samples < 1) {
    Die("--followers and --half-sent are 0 or more and --samples at least 1");
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Each follower is a socket here too.
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < static_cast<rlim_t>(followers) + static_cast<rlim_t>(half_sent) + 64) {
    Die(fmt::format("the open-file limit ({}) is too low for {} followers and {} half-sent heads", files.rlim_cur,
                    followers, half_sent));
  }
  // Bounded: whatever happens, it ends.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::minutes(5));
    Die("took more than 5 minutes");
  }).detach();

  char dir_template[] = "/tmp/tau-bench-api-XXXXXX";
  if (!::mkdtemp(dir_template)) Die("cannot make a temp folder");
  base_dir = dir_template;
  const fs::path home = base_dir / "home", work = base_dir / "work";
  fs::create_directories(work);
  daemon_pid = ::fork();
  if (daemon_pid == 0) {
    int log = ::open((base_dir / "taugridd.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(log, 1);
    ::dup2(log, 2);
    std::string daemon = (bin / "taugridd").string();
    ::execl(daemon.c_str(), daemon.c_str(), "--home", home.c_str(), nullptr);
    ::_exit(127);
  }
  Target t;
  for (int i = 0; i < 600 && t.port == 0; ++i) {
    nlohmann::json info = nlohmann::json::parse(ReadFile(home / "server.json"), nullptr, false);
    if (info.is_object()) t.port = info.value("port", 0);
    if (t.port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (t.port == 0) Die("taugridd did not start: " + ReadFile(base_dir / "taugridd.log"));
  t.token = ReadFile(home / "token");
  t.token.erase(t.token.find_last_not_of("\n") + 1);
  daemon_target = t;

  // The followed job, submitted with tau (which uploads its snapshot).
  std::ofstream(work / "job.yaml") << "schema_version: 1\nname: followed\nrun:\n  launcher: command\n"
                                      "  entrypoint: 'echo started; while [ ! -e "
                                   << (work / "stop").string()
                                   << " ]; do sleep 0.2; done'\ncompute:\n  cpus: 100m\n  memory: 64Mi\n";
  std::string run = fmt::format("cd {} && TAU_HOME={} TAU_SERVER= {} run job.yaml", work.string(), home.string(),
                                (bin / "tau").string());
  FILE* p = ::popen(run.c_str(), "r");
  char idbuf[128] = {0};
  if (!p || !std::fgets(idbuf, sizeof idbuf, p)) Die("tau run failed");
  ::pclose(p);
  std::string id = idbuf;
  id.erase(id.find_last_not_of("\n ") + 1);
  int status = 0;
  Connection job_conn(t.port);
  if (!job_conn.ok()) Die("cannot connect to taugridd");
  std::string job_text;
  {
    job_conn.Send(fmt::format("GET /api/v1/jobs/{} HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {}\r\n\r\n", id, t.token));
    job_text = job_conn.Read(false, 10000);
  }
  nlohmann::json job = nlohmann::json::parse(job_text.substr(job_text.find("\r\n\r\n") + 4), nullptr, false);
  if (!job.is_object()) Die("cannot read job " + id);
  // Submissions of a job that ends at once.
  const std::string submit =
      nlohmann::json{{"spec", {{"schema_version", 1}, {"name", "probe"},
                               {"run", {{"launcher", "command"}, {"entrypoint", "true"}}},
                               {"compute", {{"cpus", "100m"}, {"memory", "64Mi"}}}}},
                     {"snapshot", job.value("snapshot", "")}}
          .dump();
  if (Time(t, "POST", "/api/v1/jobs", submit, &status) < 0 || status != 201) {
    Die(fmt::format("a probe submission was answered {}", status));
  }

  struct Row {
    std::string name, method, path, body;
    int expect;
  };
  std::vector<Row> rows = {{"GET /healthz", "GET", "/healthz", "", 200},
                           {"POST /api/v1/jobs", "POST", "/api/v1/jobs", submit, 201},
                           {"GET /api/v1/jobs", "GET", "/api/v1/jobs", "", 200}};
  std::vector<Stats> baseline, loaded;
  for (const auto& r : rows) baseline.push_back(Measure(t, r.method, r.path, r.body, samples, r.expect));
  const long rss_before = RssKiB(daemon_pid), threads_before = Threads(daemon_pid);

  std::vector<std::unique_ptr<Connection>> streams;
  const std::string follow = fmt::format(
      "GET /api/v1/jobs/{}/logs?follow=true HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {}\r\n\r\n", id, t.token);
  auto open_start = Clock::now();
  for (int i = 0; i < followers; ++i) {
    auto c = std::make_unique<Connection>(t.port);
    if (!c->ok() || !c->Send(follow)) Die(fmt::format("follower {} could not connect", i));
    streams.push_back(std::move(c));
  }
  int started = 0;
  for (auto& c : streams) started += c->Read(true, 60000).find(" 200 ") != std::string::npos;
  double open_s = std::chrono::duration<double>(Clock::now() - open_start).count();
  if (started != followers) Die(fmt::format("only {} of {} followers were served", started, followers));
  const long rss_after = RssKiB(daemon_pid), threads_after = Threads(daemon_pid);
  for (const auto& r : rows) loaded.push_back(Measure(t, r.method, r.path, r.body, samples, r.expect));
  // Slowloris besides: half a head each, then nothing (their head deadline,
  // 10 s, is further off than the measurement takes).
  std::vector<std::unique_ptr<Connection>> stalled;
  auto stall_start = Clock::now();
  for (int i = 0; i < half_sent; ++i) {
    auto c = std::make_unique<Connection>(t.port);
    if (!c->ok() || !c->Send("GET /healthz HTTP/1.1\r\nHost: b\r\nX-Slow: ")) {
      Die(fmt::format("half-sent connection {} could not connect", i));
    }
    stalled.push_back(std::move(c));
  }
  double stall_s = std::chrono::duration<double>(Clock::now() - stall_start).count();
  const long threads_stalled = Threads(daemon_pid);
  std::vector<Stats> with_stalled;
  if (half_sent > 0) {
    for (const auto& r : rows) with_stalled.push_back(Measure(t, r.method, r.path, r.body, samples, r.expect));
  }
  stalled.clear();

  std::ofstream(work / "stop") << "";
  std::printf("taugridd with %d log followers (opened and streaming in %.1f s); %d requests of each kind, one "
              "connection each\n",
              followers, open_s, samples);
  auto cell = [](const Stats& x) {
    return fmt::format("{:.1f}/{:.1f}/{:.1f}{}", x.p50, x.p99, x.max, x.failed ? fmt::format(" ({} failed)", x.failed) : "");
  };
  std::printf("%-20s %28s %28s %36s\n", "", "no followers: p50/p99/max ms",
              fmt::format("{} followers: p50/p99/max ms", followers).c_str(),
              half_sent > 0 ? fmt::format("and {} half-sent: p50/p99/max ms", half_sent).c_str() : "");
  bool over = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Stats& l = loaded[i];
    std::printf("%-20s %28s %28s %36s\n", rows[i].name.c_str(), cell(baseline[i]).c_str(), cell(l).c_str(),
                half_sent > 0 ? cell(with_stalled[i]).c_str() : "");
    over = over || l.failed > 0 || (max_ms > 0 && l.max > max_ms);
    if (half_sent > 0) {
      const Stats& w = with_stalled[i];
      over = over || w.failed > 0 || (max_ms > 0 && w.max > max_ms);
    }
  }
  if (half_sent > 0) {
    std::printf("%d half-sent heads opened in %.1f s; taugridd had %ld threads with them\n", half_sent, stall_s,
                threads_stalled);
  }
  std::printf("taugridd: %ld threads, %ld KiB resident before the followers; %ld threads, %ld KiB with them "
              "(%.1f KiB per follower)\n",
              threads_before, rss_before, threads_after, rss_after,
              followers > 0 ? static_cast<double>(rss_after - rss_before) / followers : 0.0);
  streams.clear();
  Cleanup();
  if (over) {
    std::printf("FAIL: a request under load failed%s\n", max_ms > 0 ? fmt::format(" or took over {} ms", max_ms).c_str() : "");
    return 1;
  }
  return 0;
}
