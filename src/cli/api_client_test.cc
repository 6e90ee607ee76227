// What the API client sends again after a lost connection, against a raw
// socket server that counts requests and drops connections on cue.

#include "cli/api_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/dropping_server.h"

namespace tau::cli {
namespace {

using ::tau::testing::DroppingServer;

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

// Answers every request with HTTP 404, the given API error message and
// trace id 4f2a9c0e1b7d3a55, then closes the connection.
class RefusingServer {
 public:
  explicit RefusingServer(std::string message)
      : body_(nlohmann::json{{"code", "NotFound"}, {"message", std::move(message)}}.dump()),
        listener_([this](int fd) { Serve(fd); }) {}
  std::string url() const { return listener_.url(); }

 private:
  void Serve(int fd) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        return;
      }
      request.append(buf, static_cast<size_t>(n));
    }
    std::string answer = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nX-Trace-Id: 4f2a9c0e1b7d3a55\r\n"
                         "Connection: close\r\nContent-Length: " + std::to_string(body_.size()) + "\r\n\r\n" + body_;
    for (size_t off = 0; off < answer.size();) {
      ssize_t n = ::write(fd, answer.data() + off, answer.size() - off);
      if (n <= 0) {
        return;
      }
      off += static_cast<size_t>(n);
    }
  }

  std::string body_;
  ::tau::testing::LoopbackListener listener_;
};

TEST(ApiClientTest, AnErrorEndsWithItsRequestsTraceId) {
  RefusingServer server("no job with id or name \"x\"");
  ApiClient client({server.url(), "t"});
  auto got = client.Get("/api/v1/jobs/x");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.error().message(), "no job with id or name \"x\" (trace 4f2a9c0e1b7d3a55)");
}

TEST(ApiClientTest, AnErrorOfSeveralLinesGetsTheTraceIdOnALineOfItsOwn) {
  RefusingServer server("a.yaml:1:1: error: one\na.yaml:2:1: error: two\n");
  ApiClient client({server.url(), "t"});
  Status st = client.Delete("/api/v1/admin/objects/ClusterQueue/x");
  EXPECT_EQ(st.message(), "a.yaml:1:1: error: one\na.yaml:2:1: error: two\n(trace 4f2a9c0e1b7d3a55)\n");
}

}  // namespace
}  // namespace tau::cli
