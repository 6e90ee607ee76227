// The API's connections: clients that trickle their request heads or bodies
// are cut off at the head or body deadline, so they cannot hold the API's
// threads.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/api_server.h"

namespace tau::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Everything the server sends until it closes the connection, or until
// nothing came for `guard_ms` (a hang guard, not a timing assertion).
std::string ReadUntilClosed(int fd, int guard_ms = 60000) {
  std::string in;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, guard_ms) != 1) return in;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return in;
    in.append(buf, static_cast<size_t>(n));
  }
}

// An ApiServer on a free loopback port with two threads and a short head
// deadline; /healthz needs neither jobs nor a control loop.
class ApiConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::temp_directory_path() / ("tau-api-conn-" + std::to_string(::getpid()));
    std::filesystem::create_directories(home_);
    ApiServerOptions options;
    options.token = "token";
    options.min_threads = 2;
    options.max_threads = 2;
    options.request_head_timeout = head_timeout();
    options.request_body_timeout = std::chrono::milliseconds(300);
    options.max_connections = max_connections();
    server_ = std::make_unique<ApiServer>(TauHome(home_), nullptr, nullptr, nullptr, options);
    auto port = server_->Bind();
    ASSERT_TRUE(port.ok()) << port.error().ToString();
    port_ = *port;
    serving_ = std::thread([this] { server_->Serve(); });
  }
  virtual std::chrono::milliseconds head_timeout() const { return std::chrono::milliseconds(300); }
  virtual int64_t max_connections() const { return 0; }
  void TearDown() override {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }

  std::filesystem::path home_;
  std::unique_ptr<ApiServer> server_;
  int port_ = 0;
  std::thread serving_;
};

constexpr const char* kSlowHead = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
// A whole head that declares a body far longer than the trickle sends.
constexpr const char* kSlowBody = "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";

// A client that sends `start` (by default a request line and the start of
// a header), then one byte every 20 ms for as long as the server reads it.
class Trickler {
 public:
  explicit Trickler(int port, std::string start = kSlowHead) : fd_(Connect(port)), start_(std::move(start)) {
    started_ = std::thread([this] {
      bool ok = fd_ >= 0 && SendAll(fd_, start_);
      first_sent_.set_value();
      while (ok && !stop_) {
        ok = SendAll(fd_, "a");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    first_sent_.get_future().wait();
  }
  ~Trickler() {
    stop_ = true;
    started_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string start_;
  std::atomic<bool> stop_{false};
  std::promise<void> first_sent_;
  std::thread started_;
};

TEST_F(ApiConnectionTest, ClientsTricklingHeadersDoNotHoldTheApi) {
  // Twice as many trickling clients as the API has threads: without a head
  // deadline they would hold both threads for as long as they trickle.
  std::vector<std::unique_ptr<Trickler>> slow;
  for (int i = 0; i < 4; ++i) slow.push_back(std::make_unique<Trickler>(port_));
  int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
}

TEST_F(ApiConnectionTest, AHeadPastItsDeadlineIsAnswered408AndTheConnectionClosed) {
  Trickler slow(port_);
  std::string answer = ReadUntilClosed(slow.fd());
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 408"));
  EXPECT_THAT(answer, HasSubstr("Connection: close"));
  size_t body = answer.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  auto json = nlohmann::json::parse(answer.substr(body + 4), nullptr, false);
  ASSERT_TRUE(json.is_object()) << answer;
  EXPECT_EQ(json.value("code", ""), "DeadlineExceeded");
  EXPECT_THAT(json.value("message", ""), HasSubstr("did not all arrive within 300 ms"));
}

TEST_F(ApiConnectionTest, ABodyPastItsDeadlineIsAnswered408AndTheConnectionClosed) {
  // Each byte comes well within the read timeout; only the body deadline
  // ends it before the declared length has come (some 20,000 s away).
  Trickler slow(port_, kSlowBody);
  std::string answer = ReadUntilClosed(slow.fd());
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 408"));
  EXPECT_THAT(answer, HasSubstr("Connection: close"));
  size_t body = answer.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  auto json = nlohmann::json::parse(answer.substr(body + 4), nullptr, false);
  ASSERT_TRUE(json.is_object()) << answer;
  EXPECT_EQ(json.value("code", ""), "DeadlineExceeded");
  EXPECT_THAT(json.value("message", ""), HasSubstr("body did not all arrive within 300 ms"));
}

TEST_F(ApiConnectionTest, ClientsTricklingBodiesDoNotHoldTheApi) {
  std::vector<std::unique_ptr<Trickler>> slow;
  for (int i = 0; i < 4; ++i) slow.push_back(std::make_unique<Trickler>(port_, kSlowBody));
  int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
}

TEST_F(ApiConnectionTest, AKeptAliveConnectionServesRequestsOneAfterAnother) {
  int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  // Two requests in one write (pipelined), then a third that closes.
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                          "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer = ReadUntilClosed(fd);
  ::close(fd);
  size_t answers = 0;
  for (size_t at = answer.find("HTTP/1.1 200"); at != std::string::npos; at = answer.find("HTTP/1.1 200", at + 1)) {
    ++answers;
  }
  EXPECT_EQ(answers, 3u) << answer;
}

// With a head deadline far off, as in production (10 s).
class ApiConnectionLongHeadTest : public ApiConnectionTest {
 protected:
  std::chrono::milliseconds head_timeout() const override { return std::chrono::minutes(10); }
};

TEST_F(ApiConnectionLongHeadTest, HalfSentHeadsDoNotHoldTheApisThreads) {
  // Slowloris: many more clients than the API has threads send half a
  // head and stop. They wait without a thread, so the API answers at once
  // (the guard only catches a hang: their deadline is minutes away).
  std::vector<int> slow;
  for (int i = 0; i < 64; ++i) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, kSlowHead));
    slow.push_back(fd);
  }
  for (int i = 0; i < 3; ++i) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    std::string answer = ReadUntilClosed(fd, 20000);
    ::close(fd);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200")) << "request " << i;
  }
  // The half-sent heads are still waiting, not answered or closed.
  for (int fd : slow) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0);
    ::close(fd);
  }
}

TEST_F(ApiConnectionLongHeadTest, IdleKeptAliveConnectionsDoNotHoldTheApisThreads) {
  // Clients that keep their connections open after an answer: between
  // requests they hold no thread, and each is served again when it asks.
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string answer;  // the head and the JSON body of /healthz
    while (answer.empty() || answer.back() != '}') {
      char buf[4096];
      pollfd p{fd, POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, 20000), 1);
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      ASSERT_GT(n, 0);
      answer.append(buf, static_cast<size_t>(n));
    }
    idle.push_back(fd);
  }
  int fd = Connect(port_);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_THAT(ReadUntilClosed(fd, 20000), StartsWith("HTTP/1.1 200"));
  ::close(fd);
  for (int kept : idle) {
    ASSERT_TRUE(SendAll(kept, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    EXPECT_THAT(ReadUntilClosed(kept, 20000), StartsWith("HTTP/1.1 200"));
    ::close(kept);
  }
}

TEST_F(ApiConnectionTest, AClientThatClosesItsSideAfterTheRequestGetsTheAnswer) {
  int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  ::shutdown(fd, SHUT_WR);
  EXPECT_THAT(ReadUntilClosed(fd), StartsWith("HTTP/1.1 200"));
  ::close(fd);
}

TEST_F(ApiConnectionTest, AMalformedRequestIsAnsweredOnceAndItsConnectionClosed) {
  // What follows a request httplib cannot read is not read as more
  // requests: one answer, then the connection ends.
  int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GARBAGE\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer = ReadUntilClosed(fd, 20000);
  ::close(fd);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400"));
  EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << answer;
}

TEST_F(ApiConnectionTest, AHeaderNameThatIsNotATokenIsRefused) {
  for (const char* header : {"Transfer-Encoding : chunked", "X-Bad\x01: a"}) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, std::string("POST /healthz HTTP/1.1\r\nHost: x\r\n") + header + "\r\n\r\n2\r\n{}\r\n0\r\n\r\n"));
    std::string answer = ReadUntilClosed(fd, 20000);
    ::close(fd);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 400")) << header;
    EXPECT_THAT(answer, HasSubstr("is malformed")) << header;
    EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << answer;
  }
}

// A cap of four connections.
class ApiConnectionCapTest : public ApiConnectionTest {
 protected:
  int64_t max_connections() const override { return 4; }
};

TEST_F(ApiConnectionCapTest, ConnectionsPastTheCapAreClosedAndTheCapFreesAsTheyGo) {
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, kSlowHead));  // waiting in the gate, each an open file
    held.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all four accepted
  int over = Connect(port_);
  ASSERT_GE(over, 0);
  SendAll(over, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ReadUntilClosed(over, 20000), "") << "closed unanswered";
  ::close(over);
  for (int fd : held) ::close(fd);
  std::string answer;
  for (int i = 0; i < 100 && answer.find("HTTP/1.1 200") != 0; ++i) {  // the gate sees them close
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int fd = Connect(port_);
    SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    answer = ReadUntilClosed(fd, 20000);
    ::close(fd);
  }
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
}

}  // namespace
}  // namespace tau::server
