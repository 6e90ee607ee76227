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

}  // namespace
}  // namespace tau::cli
