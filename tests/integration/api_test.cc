// The API stays up and answers bad input with JSON errors: many log
// followers, a busy daemon, a daemon restarted under a follower, hostile
// requests, and the metrics' route label.

#include <gmock/gmock.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "common/tau_home.h"
#include "daemon_fixture.h"

extern char** environ;

namespace tau::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::Not;

// A raw HTTP exchange with the daemon on loopback.
class RawHttp {
 public:
  explicit RawHttp(const std::string& url) {
    port_ = std::stoi(url.substr(url.rfind(':') + 1));
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawHttp() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Whether the server closes the connection (reads end of stream) within
  // `timeout_ms` (a hang guard); what it sends meanwhile is dropped.
  bool PeerCloses(int timeout_ms = 30000) {
    char buf[4096];
    while (true) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) != 1) return false;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }
  // Reads until the response's head (and, unless `head_only`, its
  // Content-Length body) is in, the peer closes, or `timeout_ms` passes
  // without data (a hang guard).
  std::string ReadResponse(int timeout_ms = 30000, bool head_only = false) {
    std::string in;
    char buf[65536];
    while (true) {
      size_t head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos && head_only) return in;
      if (head_end != std::string::npos) {
        std::string head = in.substr(0, head_end);
        size_t cl = head.find("Content-Length: ");
        if (cl != std::string::npos && in.size() >= head_end + 4 + std::stoul(head.substr(cl + 16))) return in;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) != 1) return in;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return in;
      in.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  bool connected_ = false;
};

struct Reply {
  int status = 0;
  std::string head;
  nlohmann::json body;
};

Reply Parse(const std::string& raw) {
  Reply r;
  if (raw.size() > 12) r.status = std::atoi(raw.c_str() + 9);
  size_t end = raw.find("\r\n\r\n");
  r.head = raw.substr(0, end);
  r.body = nlohmann::json::parse(end == std::string::npos ? "" : raw.substr(end + 4), nullptr, false);
  return r;
}

class ApiTest : public DaemonTest {
 protected:
  std::string Request(const std::string& method, const std::string& target, const std::string& extra_headers = "",
                      const std::string& body = "", bool auth = true) {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: x\r\n";
    if (auth) req += "Authorization: Bearer " + ApiToken() + "\r\n";
    req += extra_headers;
    if (extra_headers.find("Content-Length") == std::string::npos &&
        extra_headers.find("Transfer-Encoding") == std::string::npos) {
      req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    req += "\r\n" + body;
    RawHttp http(ApiUrl());
    EXPECT_TRUE(http.connected());
    http.Send(req);
    return http.ReadResponse();
  }
  Reply Call(const std::string& method, const std::string& target, const std::string& extra_headers = "",
             const std::string& body = "") {
    return Parse(Request(method, target, extra_headers, body));
  }

  // A job that prints `lines` numbered lines, waits for the file `gate` in
  // its work folder after the first half, and exits with `code`.
  std::string HalfwayJob(const std::string& name, int lines, const std::string& gate, int code) {
    return WriteSpec(name + ".yaml",
                     "schema_version: 1\nname: " + name + "\nrun:\n  launcher: command\n  entrypoint: 'for i in $(seq 1 " +
                         std::to_string(lines) + "); do echo \"line $i of the log\"; if [ $i -eq " +
                         std::to_string(lines / 2) + " ]; then while [ ! -e " + (work_ / gate).string() +
                         " ]; do sleep 0.05; done; fi; done; exit " + std::to_string(code) +
                         "'\ncompute:\n  cpus: 100m\n  memory: 64Mi\n");
  }
};

// Expects an answer with the given status and the API's JSON error body.
#define EXPECT_JSON_ERROR(reply, http_status, code_name)                                              \
  do {                                                                                                \
    const Reply& r_ = (reply);                                                                        \
    EXPECT_EQ(r_.status, http_status) << r_.head << "\n" << r_.body.dump();                           \
    EXPECT_TRUE(r_.body.is_object()) << r_.head;                                                      \
    EXPECT_EQ(r_.body.is_object() ? r_.body.value("code", "") : "", code_name) << r_.body.dump();     \
    EXPECT_FALSE(r_.body.is_object() && r_.body.value("message", "").empty()) << r_.body.dump();      \
  } while (0)

TEST_F(ApiTest, TwoHundredLogFollowersDoNotBlockOtherRequests) {
  std::string id = Submit(HalfwayJob("followed", 4, "go", 0));
  ASSERT_TRUE(WaitForState(id, "Running"));
  const std::string token = ApiToken();
  std::vector<std::unique_ptr<RawHttp>> followers;
  for (int i = 0; i < 200; ++i) {
    auto f = std::make_unique<RawHttp>(ApiUrl());
    ASSERT_TRUE(f->connected()) << i;
    ASSERT_TRUE(f->Send("GET /api/v1/jobs/" + id + "/logs?follow=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                        token + "\r\n\r\n"));
    followers.push_back(std::move(f));
  }
  // Every follower is being served (its stream has started) ...
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);  // a hang guard
  int served = 0;
  for (auto& f : followers) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    served += f->ReadResponse(std::max<int>(1, static_cast<int>(left.count())), /*head_only=*/true)
                  .find("HTTP/1.1 200") != std::string::npos;
  }
  EXPECT_EQ(served, 200);
  // ... and the daemon still answers everything else while they wait.
  EXPECT_EQ(Call("GET", "/healthz").status, 200);
  EXPECT_EQ(Call("GET", "/api/v1/jobs").status, 200);
  CommandResult list = Tau({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(id));
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
}

TEST_F(ApiTest, ABusyDaemonIsWaitedForAndNeverReplaced) {
  const int64_t pid = DaemonPid();
  ASSERT_GT(pid, 0);
  // Stopped, it holds its lock but answers nothing.
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGSTOP), 0);
  extra_env_["TAU_CONNECT_PATIENCE"] = "1s";
  CommandResult list = Tau({"list"});
  CommandResult start = Tau({"server", "start"});
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGCONT), 0);
  EXPECT_NE(list.exit_code, 0);
  EXPECT_THAT(list.err, HasSubstr("busy"));
  EXPECT_NE(start.exit_code, 0);
  EXPECT_THAT(start.err, HasSubstr("busy"));
  std::ifstream log(home_ / "server.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_THAT(text.str(), Not(HasSubstr("another taugridd")));
  EXPECT_EQ(DaemonPid(), pid);
  // Once it answers again, the same daemon serves.
  CommandResult again = Tau({"list"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(DaemonPid(), pid);
}

// Runs `tau ARGS...` in the background with stdout and stderr to files.
pid_t SpawnTau(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
               const std::string& cwd, const std::string& out, const std::string& err) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (!env.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv = args;
  argv.insert(argv.begin(), BinPath("tau"));
  std::vector<char*> argvp;
  for (auto& s : argv) argvp.push_back(s.data());
  argvp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  if (posix_spawn(&pid, argvp[0], &actions, nullptr, argvp.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST_F(ApiTest, FollowersResumeAcrossADaemonKilledAndRestarted) {
  const std::string spec = HalfwayJob("resumed", 400, "go", 7);
  const std::string run_out = (work_ / "run.out").string(), run_err = (work_ / "run.err").string();
  pid_t run = SpawnTau({"run", "-f", spec}, Env(), work_.string(), run_out, run_err);
  ASSERT_GT(run, 0);
  // The first half is out: the job now waits for its gate.
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(run_out).find("line 200 of") != std::string::npos; })) << ReadFile(run_err);
  std::string id;
  ASSERT_TRUE(WaitUntil([&] {
    nlohmann::json jobs = nlohmann::json::parse(Tau({"list", "-o", "json"}).out, nullptr, false);
    if (jobs.is_array() && !jobs.empty()) id = jobs[0].value("id", "");
    return !id.empty();
  }));
  const std::string logs_out = (work_ / "logs.out").string(), logs_err = (work_ / "logs.err").string();
  pid_t logs = SpawnTau({"logs", "-f", id}, Env(), work_.string(), logs_out, logs_err);
  ASSERT_GT(logs, 0);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(logs_out).find("line 200 of") != std::string::npos; }));

  // kill -9 mid-stream; the second half is written while no daemon runs.
  ASSERT_EQ(::kill(static_cast<pid_t>(DaemonPid()), SIGKILL), 0);
  ASSERT_TRUE(WaitForDaemonGone());
  WriteFile("go", "");
  const TauHome home(home_);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(home.log_file(id, 1, 0)).find("line 400 of") != std::string::npos; }));
  CommandResult started = Tau({"server", "start"});
  ASSERT_EQ(started.exit_code, 0) << started.err;

  int run_status = 0, logs_status = 0;
  ASSERT_EQ(::waitpid(run, &run_status, 0), run);
  ASSERT_EQ(::waitpid(logs, &logs_status, 0), logs);
  std::string expected;
  for (int i = 1; i <= 400; ++i) expected += "line " + std::to_string(i) + " of the log\n";
  // Every line once, in order; `run -f` exits with the job's own code.
  EXPECT_EQ(ReadFile(run_out).substr(ReadFile(run_out).find("line 1 of")), expected) << ReadFile(run_err);
  EXPECT_TRUE(WIFEXITED(run_status));
  EXPECT_EQ(WEXITSTATUS(run_status), 7) << ReadFile(run_err);
  EXPECT_THAT(ReadFile(run_err), HasSubstr("reconnect"));
  EXPECT_EQ(ReadFile(logs_out), expected) << ReadFile(logs_err);
  EXPECT_TRUE(WIFEXITED(logs_status) && WEXITSTATUS(logs_status) == 0) << ReadFile(logs_err);
}

TEST_F(ApiTest, EventFollowersResumeAcrossADaemonKilledAndRestarted) {
  std::string id = Submit(HalfwayJob("evented", 4, "go", 0));
  ASSERT_TRUE(WaitForState(id, "Running"));
  const std::string out = (work_ / "events.out").string(), err = (work_ / "events.err").string();
  pid_t events = SpawnTau({"events", "-f", id}, Env(), work_.string(), out, err);
  ASSERT_GT(events, 0);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(out).find("Started") != std::string::npos; })) << ReadFile(err);

  // kill -9 under the follower; the job ends while no daemon runs, and the
  // next daemon records its end (new events) after adopting it.
  ASSERT_EQ(::kill(static_cast<pid_t>(DaemonPid()), SIGKILL), 0);
  ASSERT_TRUE(WaitForDaemonGone());
  WriteFile("go", "");
  CommandResult started = Tau({"server", "start"});
  ASSERT_EQ(started.exit_code, 0) << started.err;

  int status = 0;
  ASSERT_EQ(::waitpid(events, &status, 0), events);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(err);
  EXPECT_THAT(ReadFile(err), HasSubstr("reconnect"));
  // Every event once, in order: what a plain read of the timeline prints.
  CommandResult all = Tau({"events", id});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("Succeeded"));
  EXPECT_EQ(ReadFile(out), all.out) << ReadFile(err);
}

class StreamCapTest : public ApiTest {
 protected:
  void BeforeStart() override { extra_env_["TAU_MAX_STREAMS"] = "2"; }
};

TEST_F(StreamCapTest, AStreamPastTheCapIsRefusedWithAJsonErrorAndRetryAfter) {
  std::string id = Submit(HalfwayJob("capped", 4, "go", 0));
  ASSERT_TRUE(WaitForState(id, "Running"));
  const std::string follow = "GET /api/v1/jobs/" + id + "/logs?follow=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                             ApiToken() + "\r\n\r\n";
  std::vector<std::unique_ptr<RawHttp>> followers;
  for (int i = 0; i < 2; ++i) {
    auto f = std::make_unique<RawHttp>(ApiUrl());
    ASSERT_TRUE(f->connected());
    ASSERT_TRUE(f->Send(follow));
    ASSERT_THAT(f->ReadResponse(30000, /*head_only=*/true), HasSubstr("HTTP/1.1 200"));
    followers.push_back(std::move(f));
  }
  RawHttp refused_http(ApiUrl());
  ASSERT_TRUE(refused_http.Send(follow));
  Reply refused = Parse(refused_http.ReadResponse());
  EXPECT_JSON_ERROR(refused, 429, "ResourceExhausted");
  EXPECT_THAT(refused.head, HasSubstr("Retry-After: 5"));
  // The refused client's connection ends with the answer: it holds no
  // server thread while it waits to retry.
  EXPECT_THAT(refused.head, HasSubstr("Connection: close"));
  EXPECT_TRUE(refused_http.PeerCloses());
  EXPECT_THAT(refused.body.value("message", ""), HasSubstr("2 log and event streams are open"));
  EXPECT_JSON_ERROR(Call("GET", "/api/v1/events?follow=true"), 429, "ResourceExhausted");
  // Reads that do not follow are not streams, and the rest still answers.
  EXPECT_EQ(Call("GET", "/api/v1/jobs/" + id + "/logs").status, 200);
  EXPECT_EQ(Call("GET", "/healthz").status, 200);

  // Once the job ends its streams end, and their places are free again.
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  ASSERT_TRUE(WaitUntil([&] {
    RawHttp again(ApiUrl());
    return again.Send(follow) && again.ReadResponse(30000, /*head_only=*/true).find("HTTP/1.1 200") != std::string::npos;
  }));
}

TEST_F(ApiTest, UnknownRoutesAndWrongMethodsAreJsonErrors) {
  EXPECT_JSON_ERROR(Call("GET", "/api/v1/no-such-thing"), 404, "NotFound");
  EXPECT_JSON_ERROR(Call("GET", "/nowhere"), 404, "NotFound");
  Reply wrong = Call("DELETE", "/api/v1/queues");
  EXPECT_JSON_ERROR(wrong, 405, "InvalidArgument");
  EXPECT_THAT(wrong.head, HasSubstr("Allow: GET"));
  EXPECT_JSON_ERROR(Call("PUT", "/api/v1/jobs"), 405, "InvalidArgument");
  EXPECT_JSON_ERROR(Call("GET", "/api/v1/" + std::string(3000, 'a')), 414, "InvalidArgument");
}

TEST_F(ApiTest, BodiesThatAreNotJsonOrTooLargeAreRefused) {
  EXPECT_JSON_ERROR(Call("POST", "/api/v1/jobs", "Content-Type: application/x-www-form-urlencoded\r\n", "spec=1&snapshot=2"),
                    400, "InvalidArgument");
  EXPECT_JSON_ERROR(Call("POST", "/api/v1/jobs", "Content-Type: application/x-www-form-urlencoded\r\n",
                         std::string(20000, 'a')),
                    400, "InvalidArgument");
  EXPECT_JSON_ERROR(Call("POST", "/api/v1/jobs", "Content-Type: multipart/form-data; boundary=xx\r\n",
                         "--xx\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n--xx--\r\n"),
                    415, "InvalidArgument");
  // A body over the limit is refused from its Content-Length, unread: the
  // answer comes though the body is never sent.
  EXPECT_JSON_ERROR(Call("POST", "/api/v1/jobs", "Content-Length: 50000000\r\n"), 413, "InvalidArgument");
  // A chunked body is cut off at the limit.
  {
    RawHttp http(ApiUrl());
    ASSERT_TRUE(http.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() +
                          "\r\nTransfer-Encoding: chunked\r\n\r\n"));
    std::string chunk = std::string("100000\r\n") + std::string(0x100000, ' ') + "\r\n";
    bool sent = true;
    for (int i = 0; i < 4 && sent; ++i) sent = http.Send(chunk);  // 4 MiB, over the 1 MiB limit
    EXPECT_JSON_ERROR(Parse(http.ReadResponse()), 413, "InvalidArgument");
  }
  // Other routes take no chunked body at all.
  EXPECT_JSON_ERROR(Call("DELETE", "/api/v1/jobs/nope", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n"), 411,
                    "InvalidArgument");
  // Fields of the wrong type.
  EXPECT_JSON_ERROR(Call("POST", "/api/v1/prune", "", R"({"older_than": 5})"), 400, "InvalidArgument");
  EXPECT_JSON_ERROR(Call("POST", "/api/v1/jobs", "", R"({"spec": {}, "snapshot": 5})"), 400, "InvalidArgument");
}

TEST_F(ApiTest, ABodyWhoseFramingIsUnclearIsRefusedAtOnceAndTheConnectionClosed) {
  // Each is answered from its head alone (the body is never sent, so an
  // answer that waited for it would hit the read timeout), and closes the
  // connection: where the body would end is unknown.
  struct Case {
    std::string headers;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"Content-Length: -5\r\n", 400, "\"-5\" is not a byte count"},
      {"Content-Length: 0x10\r\n", 400, "is not a byte count"},
      {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400, "both Content-Length and Transfer-Encoding"},
      {"Content-Length: 5\r\nContent-Length: 6\r\n", 400, "2 Content-Length headers"},
      {"Content-Length: 5\r\nContent-Length: 5\r\n", 400, "2 Content-Length headers"},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400, "2 Transfer-Encoding headers"},
      {"Transfer-Encoding: gzip\r\n", 501, "\"gzip\" is not supported"},
      {"Transfer-Encoding : chunked\r\n", 400, "is malformed"},
      // Lines httplib would drop or read otherwise: checked as sent.
      {"Content-Length:\r\n", 400, "\"Content-Length\" on line 4 of the request head has no value"},
      {"Content-Length: %35\r\n", 400, "('%' in it)"},
      {"Transfer-Encoding: %63hunked\r\n", 400, "('%' in it)"},
      {"X-No-Colon\r\nContent-Length: 5\r\n", 400, "line 4 of the request head (\"X-No-Colon\") is not a header"},
      {"X-A: b\nTransfer-Encoding: chunked\r\n", 400, "line 4 of the request head ends with a bare LF"},
      {"X-A: b\r\n chunked\r\n", 400, "begins with white space (a folded header line)"},
      {std::string("Transfer-Encoding\0: chunked\r\n", 29), 400, "is malformed"},
  };
  for (const auto& c : cases) {
    RawHttp http(ApiUrl());
    ASSERT_TRUE(http.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() + "\r\n" +
                          c.headers + "\r\n"));
    Reply r = Parse(http.ReadResponse(10000));
    EXPECT_EQ(r.status, c.status) << c.headers;
    EXPECT_THAT(r.body.value("message", ""), HasSubstr(c.says)) << c.headers;
    EXPECT_THAT(r.head, HasSubstr("Connection: close")) << c.headers;
    EXPECT_TRUE(http.PeerCloses(10000)) << c.headers;
  }
}

TEST_F(ApiTest, ABodyOnAMethodThatTakesNoneIsRefusedNotReadAsTheNextRequest) {
  // httplib reads no body for these: the bytes would be served as a second
  // request (smuggled past whatever framed the first).
  const std::string inner = "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() + "\r\n\r\n";
  for (const std::string method : {"GET", "HEAD", "OPTIONS", "PATCH"}) {
    RawHttp http(ApiUrl());
    ASSERT_TRUE(http.Send(method + " /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(inner.size()) +
                          "\r\n\r\n" + inner));
    std::string raw = http.ReadResponse(10000, /*head_only=*/method == "HEAD");
    Reply r = Parse(raw);
    EXPECT_EQ(r.status, 400) << method << "\n" << raw;
    if (method != "HEAD") {
      EXPECT_THAT(r.body.value("message", ""), HasSubstr("request carries no body")) << method;
    }
    EXPECT_THAT(r.head, HasSubstr("Connection: close")) << method;
    EXPECT_TRUE(http.PeerCloses(10000)) << method;
    EXPECT_EQ(raw.find("HTTP/1.1", 1), std::string::npos) << "one answer only\n" << raw;
  }
}

TEST_F(ApiTest, ConnectionCloseInAnyCaseOrListEndsTheConnectionAfterOneAnswer) {
  const std::string next = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string option : {"Close", "CLOSE", "keep-alive, close", "foo,close"}) {
    RawHttp http(ApiUrl());
    ASSERT_TRUE(http.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: " + option + "\r\n\r\n" + next));
    std::string raw = http.ReadResponse(10000);
    EXPECT_THAT(raw, StartsWith("HTTP/1.1 200")) << option;
    EXPECT_THAT(Parse(raw).head, HasSubstr("Connection: close")) << option;
    EXPECT_TRUE(http.PeerCloses(10000)) << option << ": the request after it is not served";
  }
  // HTTP/1.0: one answer, then the end.
  RawHttp old(ApiUrl());
  ASSERT_TRUE(old.Send("GET /healthz HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n" + next));
  EXPECT_THAT(old.ReadResponse(10000), StartsWith("HTTP/1.1 200"));
  EXPECT_TRUE(old.PeerCloses(10000));
}

TEST_F(ApiTest, AnHttp11RequestWithoutOneHostIsRefused) {
  for (const std::string hosts : {"", "Host: a\r\nHost: b\r\n"}) {
    RawHttp http(ApiUrl());
    ASSERT_TRUE(http.Send("GET /healthz HTTP/1.1\r\n" + hosts + "\r\n"));
    Reply r = Parse(http.ReadResponse(10000));
    EXPECT_EQ(r.status, 400) << hosts;
    EXPECT_THAT(r.body.value("message", ""), HasSubstr("an HTTP/1.1 request has one Host header")) << hosts;
  }
}

TEST_F(ApiTest, AHeadPastItsLimitIsAnswered431WhileItIsStillComing) {
  // Header lines keep coming (8,000 bytes each); the head is refused once
  // it passes 64 KiB, not kept whole until its deadline.
  RawHttp http(ApiUrl());
  ASSERT_TRUE(http.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
  const std::string line = "X-Fill: " + std::string(8000, 'a') + "\r\n";
  for (int i = 0; i < 12; ++i) {
    if (!http.Send(line)) break;  // refused and closed: sends may fail
  }
  Reply r = Parse(http.ReadResponse(10000));
  EXPECT_EQ(r.status, 431);
  EXPECT_THAT(r.body.value("message", ""), HasSubstr("headers are over 65536 bytes"));
}

TEST_F(ApiTest, AMalformedChunkedBodyIsRefusedAsSoonAsItIsSeenAndTheConnectionClosed) {
  // Each body is left unfinished: an answer that waited for more would
  // come only at the read timeout (30 s), past the 10 s waited here.
  struct Case {
    std::string body;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"-5\r\nhello", 400, "the chunk size \"-5\" of the chunked body is not a hexadecimal number"},
      {"zz\r\n", 400, "\"zz\" of the chunked body is not a hexadecimal number"},
      {"5 x\r\nhello", 400, "is not a hexadecimal number"},
      {"5\nhello", 400, "ends with a bare LF"},
      {"2\r\n{}xx", 400, "not followed by CRLF where its size (2 bytes) says it ends"},
      {"10000000000000000\r\n", 400, "chunk size of the chunked body is too large"},
      {"ffffffff\r\n", 413, "over 1048576 bytes"},
      {"0\r\nnot a trailer\r\n", 400, "is not a header field"},
  };
  for (const auto& c : cases) {
    RawHttp http(ApiUrl());
    ASSERT_TRUE(http.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() +
                          "\r\nTransfer-Encoding: chunked\r\n\r\n" + c.body));
    Reply r = Parse(http.ReadResponse(10000));
    EXPECT_EQ(r.status, c.status) << c.body;
    EXPECT_THAT(r.body.value("message", ""), HasSubstr(c.says)) << c.body;
    EXPECT_THAT(r.head, HasSubstr("Connection: close")) << c.body;
    EXPECT_TRUE(http.PeerCloses(10000)) << c.body;
  }
}

TEST_F(ApiTest, AChunkedBodyWithExtensionsAndTrailersIsReadAndTheNextRequestFollows) {
  RawHttp http(ApiUrl());
  ASSERT_TRUE(http.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() +
                        "\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
                        "1;name=value\r\n{\r\n01 ; x\r\n}\r\n0\r\nX-Checksum: none\r\n\r\n"));
  Reply r = Parse(http.ReadResponse(10000));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body.value("message", ""), Not(HasSubstr("could not be read"))) << "the body {} was read";
  EXPECT_THAT(r.body.value("message", ""), Not(HasSubstr("chunked"))) << r.body.dump();
  ASSERT_TRUE(http.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  Reply next = Parse(http.ReadResponse(10000));
  EXPECT_EQ(next.status, 200) << "the request after the body is read from where the body ended";
}

TEST_F(ApiTest, AChunkedBodyIsReadWhateverTheCaseOfItsCoding) {
  RawHttp http(ApiUrl());
  ASSERT_TRUE(http.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() +
                        "\r\nTransfer-Encoding: \tChunked\r\nContent-Type: application/json\r\n\r\n2\r\n{}\r\n0\r\n\r\n"));
  Reply r = Parse(http.ReadResponse(10000));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body.value("message", ""), Not(HasSubstr("could not be read"))) << "the body {} was read";
}

TEST_F(ApiTest, AdminApplyTakesSeveralFilesInOneRequestAndChangesNothingWhenOneIsWrong) {
  const std::string flavor = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: two-files\n";
  const std::string queue = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: two-files\n"
                            "spec:\n  clusterQueue: default\n";
  nlohmann::json body = {{"files", {{{"file", "a.yaml"}, {"manifests", flavor}}, {{"file", "b.yaml"}, {"manifests", queue}}}},
                         {"force_conflicts", false}};
  Reply applied = Call("POST", "/api/v1/admin/apply", "", body.dump());
  ASSERT_EQ(applied.status, 200) << applied.body.dump();
  EXPECT_EQ(applied.body["changes"], nlohmann::json({"ResourceFlavor/two-files created",
                                                     "LocalQueue/default/two-files created"}));
  body["files"][0]["manifests"] = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: other\n";
  body["files"][1]["manifests"] = queue + "  colour: blue\n";
  Reply refused = Call("POST", "/api/v1/admin/apply", "", body.dump());
  EXPECT_JSON_ERROR(refused, 400, "InvalidArgument");
  EXPECT_THAT(refused.body.value("message", ""), HasSubstr("b.yaml:7:3: error: unknown field \"colour\""));
  Reply objects = Call("GET", "/api/v1/admin/objects?kind=ResourceFlavor&name=other");
  EXPECT_TRUE(objects.body["objects"].empty()) << objects.body.dump();
  // A "file" that is not a string names nothing: errors say "manifests".
  nlohmann::json unnamed = {{"manifests", queue + "  colour: blue\n"}, {"file", 7}};
  Reply anonymous = Call("POST", "/api/v1/admin/apply", "", unnamed.dump());
  EXPECT_JSON_ERROR(anonymous, 400, "InvalidArgument");
  EXPECT_THAT(anonymous.body.value("message", ""), HasSubstr("manifests:7:3: error: unknown field \"colour\""));
}

TEST_F(ApiTest, AdminObjectsOfAKindThatDoesNotExistIsRefusedNamingTheKindAndTheKindsThereAre) {
  // Not an empty list: that would read as "none of them".
  Reply bogus = Call("GET", "/api/v1/admin/objects?kind=bogus");
  EXPECT_JSON_ERROR(bogus, 400, "InvalidArgument");
  EXPECT_THAT(bogus.body.value("message", ""), HasSubstr("\"bogus\""));
  EXPECT_THAT(bogus.body.value("message", ""),
              HasSubstr("ResourceFlavor, WorkloadPriorityClass, Cohort, ClusterQueue, LocalQueue, Configuration"));
}

TEST_F(ApiTest, ARequestWithoutContentLengthOrChunksHasNoBody) {
  // `curl -X POST URL` sends neither header: the request has no body
  // (RFC 9112, 6.3), and is answered at once, not after a read timeout.
  auto bodiless = [&](const std::string& method, const std::string& target) {
    RawHttp http(ApiUrl());
    EXPECT_TRUE(http.Send(method + " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() +
                          "\r\n\r\n"));
    return Parse(http.ReadResponse(/*timeout_ms=*/20000));
  };
  EXPECT_JSON_ERROR(bodiless("POST", "/api/v1/jobs/nope/hold"), 404, "NotFound");
  EXPECT_JSON_ERROR(bodiless("POST", "/api/v1/jobs"), 400, "InvalidArgument");
  EXPECT_JSON_ERROR(bodiless("PATCH", "/api/v1/jobs"), 405, "InvalidArgument");
  EXPECT_JSON_ERROR(bodiless("PUT", "/api/v1/jobs"), 405, "InvalidArgument");
}

TEST_F(ApiTest, AUnicodeNameCutShortInAnErrorStaysValidJson) {
  std::string name;
  for (int i = 0; i < 25; ++i) name += "\xc3\xa9";  // é: cut anywhere, it could be split
  Reply r = Call("POST", "/api/v1/jobs", "",
                 R"({"spec": {"schema_version": 1, "name": ")" + name +
                     R"(", "run": {"entrypoint": "echo hi", "launcher": "command"}}, "snapshot": "sha256:)" +
                     std::string(64, '0') + "\"}");
  EXPECT_JSON_ERROR(r, 400, "InvalidArgument");
  EXPECT_THAT(r.body.dump(), Not(HasSubstr("type_error")));
}

TEST_F(ApiTest, MalformedQueryParametersAreNamed) {
  std::string id = Submit(HalfwayJob("params", 2, "go", 0));
  for (std::string bad : {"tail=-5", "tail=abc", "rank=abc", "rank=-1", "attempt=abc", "follow=yes", "from=x",
                          "from=1:abc"}) {
    Reply r = Call("GET", "/api/v1/jobs/" + id + "/logs?" + bad);
    EXPECT_JSON_ERROR(r, 400, "InvalidArgument");
    const std::string param = bad.substr(0, bad.find('='));
    EXPECT_THAT(r.body.dump(), HasSubstr("parameter " + param + "=")) << bad;
    EXPECT_EQ(r.body.is_object() && r.body.contains("details") ? r.body["details"].value("parameter", "") : "", param)
        << bad;
  }
  EXPECT_JSON_ERROR(Call("GET", "/api/v1/events?after=abc"), 400, "InvalidArgument");
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
}

TEST_F(ApiTest, EventStreamsRefuseUnknownParametersAndUnknownJobs) {
  std::string id = Submit(HalfwayJob("evparams", 2, "go", 0));
  Reply unknown = Call("GET", "/api/v1/events?jb=" + id + "&follow=true&colour=red");
  EXPECT_JSON_ERROR(unknown, 400, "InvalidArgument");
  EXPECT_THAT(unknown.body.value("message", ""), HasSubstr("unknown query parameters colour, jb"));
  EXPECT_EQ(unknown.body.value("details", nlohmann::json::object()).value("parameters", nlohmann::json::array()),
            nlohmann::json::array({"colour", "jb"}));
  // A job's own stream takes no job=.
  Reply per_job = Call("GET", "/api/v1/jobs/" + id + "/events?job=" + id);
  EXPECT_JSON_ERROR(per_job, 400, "InvalidArgument");
  EXPECT_THAT(per_job.body.value("message", ""), HasSubstr("unknown query parameter job"));
  // An unknown job is not an empty stream.
  Reply missing = Call("GET", "/api/v1/events?job=no-such-job");
  EXPECT_JSON_ERROR(missing, 404, "NotFound");
  EXPECT_THAT(missing.body.value("message", ""), HasSubstr("\"no-such-job\""));
  // A known one, by id or name, streams its events.
  for (const std::string& job : {id, std::string("evparams")}) {
    const std::string raw = Request("GET", "/api/v1/events?job=" + job, "Connection: close\r\n");
    EXPECT_THAT(raw, HasSubstr("HTTP/1.1 200")) << job;
  }
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
}

TEST_F(ApiTest, ABodyThatIsNotUtf8NamesTheByteItsOffsetAndTheField) {
  const std::string body = std::string(R"({"spec": {"schema_version": 1, "name": "x)") + "\xff" +
                           R"("}, "snapshot": "sha256:)" + std::string(64, '0') + "\"}";
  const size_t offset = body.find(static_cast<char>(0xff));
  Reply r = Call("POST", "/api/v1/jobs", "", body);
  EXPECT_JSON_ERROR(r, 400, "InvalidArgument");
  EXPECT_EQ(r.body.value("message", ""), "the request body is not valid UTF-8: byte 0xFF at offset " +
                                             std::to_string(offset) +
                                             " (in spec.name) does not begin or continue a UTF-8 character");
}

// The open files of a process: /proc/PID/fd.
size_t OpenFiles(int64_t pid) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

TEST_F(ApiTest, EventFollowersShareABoundedSetOfDatabaseConnections) {
  std::string id = Submit(HalfwayJob("fds", 4, "go", 0));
  ASSERT_TRUE(WaitForState(id, "Running"));
  const int64_t pid = DaemonPid();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(Call("GET", "/api/v1/events?job=" + id).status, 200);
  const size_t before = OpenFiles(pid);
  constexpr int kFollowers = 96;
  std::vector<std::unique_ptr<RawHttp>> followers;
  for (int i = 0; i < kFollowers; ++i) {
    auto f = std::make_unique<RawHttp>(ApiUrl());
    ASSERT_TRUE(f->connected()) << i;
    const std::string target = i % 2 ? "/api/v1/jobs/" + id + "/events?follow=true" : "/api/v1/events?follow=true";
    ASSERT_TRUE(f->Send("GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ApiToken() + "\r\n\r\n"));
    ASSERT_THAT(f->ReadResponse(30000, /*head_only=*/true), HasSubstr("HTTP/1.1 200")) << i;
    followers.push_back(std::move(f));
  }
  // Each follower holds its socket; the database's read connections (at
  // most 8, two files each) are shared by all of them.
  const size_t during = OpenFiles(pid);
  EXPECT_LE(during, before + kFollowers + 2 * 8 + 8) << before << " before, " << during << " with followers";
  // Once they leave, the files go with them.
  followers.clear();
  EXPECT_TRUE(WaitUntil([&] { return OpenFiles(pid) <= before + 2 * 8; })) << OpenFiles(pid) << " after, " << before
                                                                               << " before";
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
}

TEST_F(ApiTest, ANonStringImageIsRefusedBeforeAnythingIsCommitted) {
  // A snapshot the daemon has: the one `tau run` uploaded.
  std::string first = Submit(HalfwayJob("first", 2, "go", 0));
  const std::string snapshot = Job(first).value("snapshot", "");
  ASSERT_FALSE(snapshot.empty());
  Reply r = Call("POST", "/api/v1/jobs", "",
                 R"({"spec": {"schema_version": 1, "name": "image", "run": {"entrypoint": "true", "launcher": "command"},)"
                 R"( "compute": {"cpus": "100m", "memory": "64Mi"}, "runtime": {"image": 5}}, "snapshot": ")" +
                     snapshot + "\"}");
  EXPECT_EQ(r.status, 400) << r.head << r.body.dump();
  ASSERT_TRUE(r.body.is_object());
  EXPECT_THAT(r.body.dump(), HasSubstr("spec.runtime.image: expected a string"));
  // Nothing was committed.
  nlohmann::json jobs = nlohmann::json::parse(Tau({"list", "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(jobs.is_array());
  int images = 0;
  for (const auto& j : jobs) images += j.value("name", "") == "image";
  EXPECT_EQ(images, 0);
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(first, "Succeeded"));
}

TEST_F(ApiTest, ASubmitOfCodeNotUploadedIs412AndANameThatIsNoDigestIs400) {
  const std::string spec =
      R"({"spec": {"schema_version": 1, "name": "nocode", "run": {"entrypoint": "true", "launcher": "command"},)"
      R"( "compute": {"cpus": "100m", "memory": "64Mi"}}, "snapshot": ")";
  const std::string absent = "sha256:" + std::string(64, 'a');
  Reply missing = Call("POST", "/api/v1/jobs", "", spec + absent + "\"}");
  EXPECT_JSON_ERROR(missing, 412, "FailedPrecondition");
  EXPECT_EQ(missing.body["details"].value("missing_snapshot", ""), absent) << missing.body.dump();
  // Not a digest: no path under blobs/ is looked at, whatever it names.
  for (const std::string& bad : {std::string("../../../../../../etc/passwd"), std::string("sha256:ABC"),
                                 "sha256:" + std::string(63, 'a') + "/"}) {
    Reply r = Call("POST", "/api/v1/jobs", "", spec + bad + "\"}");
    EXPECT_JSON_ERROR(r, 400, "InvalidArgument");
    EXPECT_THAT(r.body.value("message", ""), HasSubstr("64 hex digits")) << bad;
  }
  // `tau run` of code the daemon has never seen: refused with 412 once,
  // uploaded, sent again with its request id: one job, which runs.
  std::string id = Submit(HalfwayJob("fresh", 2, "go", 0));
  WriteFile("go", "");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  nlohmann::json jobs = nlohmann::json::parse(Tau({"list", "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(jobs.is_array());
  ASSERT_EQ(jobs.size(), 1u) << jobs.dump();
  EXPECT_EQ(jobs[0].value("id", ""), id);
}

TEST_F(ApiTest, UnmatchedPathsShareOneMetricsRoute) {
  for (int i = 0; i < 20; ++i) {
    Call("GET", "/api/v1/zzz-" + std::to_string(i));
    Parse(Request("GET", "/unauthenticated-" + std::to_string(i), "", "", /*auth=*/false));
    Call("GET", "/portal/zzz-missing-" + std::to_string(i));
  }
  std::string metrics = Request("GET", "/metrics");
  EXPECT_THAT(metrics, Not(HasSubstr("zzz")));
  EXPECT_THAT(metrics, Not(HasSubstr("unauthenticated-")));
  EXPECT_THAT(metrics, HasSubstr("route=\"other\""));
  EXPECT_THAT(metrics, HasSubstr("route=\"/portal/{file}\""));
}

TEST_F(ApiTest, AFailedRequestPrintsItsTraceIdAndTheServerLogsItUnderIt) {
  CommandResult r = Tau({"status", "no-such-job"});
  EXPECT_EQ(r.exit_code, 1);
  std::smatch m;
  const std::string err = r.err;
  ASSERT_TRUE(std::regex_search(err, m, std::regex("no job with id or name .* \\(trace ([0-9a-f]{8,64})\\)\n$")))
      << err;
  const std::string trace = m[1];
  ASSERT_TRUE(WaitUntil([&] {
    std::ifstream log(home_ / "server.log");
    std::stringstream text;
    text << log.rdbuf();
    return text.str().find("trace_id=" + trace) != std::string::npos;
  })) << "the server log has no line with trace_id=" << trace;
}

}  // namespace
}  // namespace tau::testing
