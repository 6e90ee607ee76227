// What the API client sends again after a lost connection, against a raw
// socket server that counts requests and drops connections on cue.

#include "cli/api_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace tau::cli {
namespace {

// Serves one request at a time; `answer(n)` decides, for the n-th request
// (from 1), whether it is answered ("{}" and the connection kept) or the
// connection is closed without a reply. Also closes a connection that
// stays idle when `close_idle` is set, like a server's keep-alive timeout.
class DroppingServer {
 public:
  explicit DroppingServer(std::function<bool(int)> answer) : answer_(std::move(answer)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(listen_fd_, 8);
    thread_ = std::thread([this] { Run(); });
  }
  ~DroppingServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  int closed() const { return closed_; }
  // Closes the current connection after its next answer.
  void CloseAfterAnswer() { close_after_answer_ = true; }

 private:
  void Run() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Serve(fd);
      ::close(fd);
      ++closed_;
    }
  }
  void Serve(int fd) {
    std::string buffer;
    while (!stop_) {
      size_t end;
      while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) {
          if (stop_) return;
          continue;
        }
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        buffer.append(buf, static_cast<size_t>(n));
      }
      size_t length = 0;
      if (size_t at = buffer.find("Content-Length: "); at != std::string::npos && at < end) {
        length = std::stoul(buffer.substr(at + 16));
      }
      while (buffer.size() < end + 4 + length) {
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        buffer.append(buf, static_cast<size_t>(n));
      }
      buffer.erase(0, end + 4 + length);
      const int n = ++requests_;
      if (!answer_(n)) return;  // dropped: the request arrived, no reply
      std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
      ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      if (close_after_answer_.exchange(false)) return;
    }
  }

  std::function<bool(int)> answer_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> closed_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> close_after_answer_{false};
  std::thread thread_;
};

TEST(ApiClientTest, APostWhoseConnectionDropsIsNotSentAgain) {
  // The first request is answered; the POST reaches the server, which
  // drops the connection without answering (it may have acted on it).
  DroppingServer server([](int n) { return n == 1; });
  ApiClient client({server.url(), "t"});
  ASSERT_TRUE(client.Get("/api/v1/info").ok());
  auto posted = client.Post("/api/v1/jobs/j_x/cancel", nlohmann::json::object());
  ASSERT_FALSE(posted.ok());
  EXPECT_EQ(posted.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(posted.error().message().find("it may have been carried out"), std::string::npos)
      << posted.error().message();
  EXPECT_EQ(server.requests(), 2) << "the POST was sent twice";
}

TEST(ApiClientTest, ADeleteWhoseConnectionDropsIsNotSentAgain) {
  DroppingServer server([](int n) { return n == 1; });
  ApiClient client({server.url(), "t"});
  ASSERT_TRUE(client.Get("/api/v1/info").ok());
  EXPECT_FALSE(client.Delete("/api/v1/jobs/j_x").ok());
  EXPECT_EQ(server.requests(), 2);
}

TEST(ApiClientTest, ASubmitWithARequestIdIsSentAgain) {
  DroppingServer server([](int n) { return n != 2; });
  ApiClient client({server.url(), "t"});
  ASSERT_TRUE(client.Get("/api/v1/info").ok());
  auto posted = client.Post("/api/v1/jobs", {{"request_id", "r_1"}}, ApiClient::Resend::kSafe);
  EXPECT_TRUE(posted.ok()) << posted.status().ToString();
  EXPECT_EQ(server.requests(), 3);
}

TEST(ApiClientTest, AKeptAliveConnectionTheServerClosedIsReplacedBeforeAPost) {
  // Every request is answered, but the server closes the connection after
  // the first answer (its keep-alive timeout): the POST goes on a new one.
  DroppingServer server([](int) { return true; });
  server.CloseAfterAnswer();
  ApiClient client({server.url(), "t"});
  ASSERT_TRUE(client.Get("/api/v1/info").ok());
  // Once the server has closed it, loopback has delivered the FIN.
  for (int i = 0; i < 6000 && server.closed() < 1; ++i) ::usleep(10000);  // a hang guard
  ASSERT_EQ(server.closed(), 1);
  auto posted = client.Post("/api/v1/jobs/j_x/cancel", nlohmann::json::object());
  EXPECT_TRUE(posted.ok()) << posted.status().ToString();
  EXPECT_EQ(server.requests(), 2);
}

}  // namespace
}  // namespace tau::cli
