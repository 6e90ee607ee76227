#include "kube/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace tau::kube {
namespace {

using ::testing::HasSubstr;

TEST(ResourcePathTest, CoreGroupedNamespacedClusterScopedAndSubresources) {
  EXPECT_EQ(ResourcePath({"", "v1", "configmaps", "default", "x", ""}), "/api/v1/namespaces/default/configmaps/x");
  EXPECT_EQ(ResourcePath({"batch", "v1", "jobs", "team-a", "", ""}), "/apis/batch/v1/namespaces/team-a/jobs");
  EXPECT_EQ(ResourcePath({"kueue.x-k8s.io", "v1beta1", "clusterqueues", "", "cq", ""}),
            "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq");
  EXPECT_EQ(ResourcePath({"kueue.x-k8s.io", "v1beta1", "workloads", "ns", "w", "status"}),
            "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/w/status");
  // A subresource needs a name; a collection ignores it.
  EXPECT_EQ(ResourcePath({"", "v1", "pods", "ns", "", "status"}), "/api/v1/namespaces/ns/pods");
  EXPECT_EQ(ResourcePath({"", "v1", "configmaps", "ns", "a/b c", ""}), "/api/v1/namespaces/ns/configmaps/a%2Fb%20c");
}

TEST(UrlEscapeTest, KeepsUnreservedOnly) {
  EXPECT_EQ(UrlEscape("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(UrlEscape("a=b,c!=d"), "a%3Db%2Cc%21%3Dd");
  EXPECT_EQ(UrlEscape("\xc3\xa9"), "%C3%A9");
}

TEST(ApiErrorTest, ReadsTheServersStatusObject) {
  ApiError e = ParseApiError(
      409, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
           R"("message":"configmaps \"x\" already exists","reason":"AlreadyExists",)"
           R"("details":{"name":"x","kind":"configmaps"},"code":409})");
  EXPECT_EQ(e.http_code, 409);
  EXPECT_EQ(e.reason, "AlreadyExists");
  EXPECT_EQ(e.message, "configmaps \"x\" already exists");
  Status s = ToStatus(e, "POST /api/v1/namespaces/default/configmaps");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "POST /api/v1/namespaces/default/configmaps: HTTP 409 AlreadyExists: configmaps \"x\" already exists");
}

TEST(ApiErrorTest, NonStatusBodiesKeepTheirStartAndTheHttpReason) {
  ApiError e = ParseApiError(503, "upstream connect error\n");
  EXPECT_EQ(e.reason, "ServiceUnavailable");
  EXPECT_EQ(e.message, "upstream connect error");
  e = ParseApiError(404, "");
  EXPECT_EQ(e.reason, "NotFound");
  EXPECT_EQ(e.message, "(no body)");
}

TEST(ApiErrorTest, AShortenedBodyNeverEndsInsideACharacter) {
  // 299 ASCII bytes, then a euro sign (3 bytes) that the 300-byte cut
  // would split.
  ApiError e = ParseApiError(502, std::string(299, 'x') + "\u20ac and more");
  EXPECT_EQ(e.message, std::string(299, 'x'));
}

TEST(ApiErrorTest, MapsReasonsToStatusCodes) {
  struct Case {
    long code;
    const char* reason;
    StatusCode want;
  };
  const std::vector<Case> cases = {
      {400, "BadRequest", StatusCode::kInvalidArgument},    {422, "Invalid", StatusCode::kInvalidArgument},
      {415, "UnsupportedMediaType", StatusCode::kInvalidArgument},
      {401, "Unauthorized", StatusCode::kUnauthenticated},  {403, "Forbidden", StatusCode::kPermissionDenied},
      {404, "NotFound", StatusCode::kNotFound},             {409, "AlreadyExists", StatusCode::kAlreadyExists},
      {409, "Conflict", StatusCode::kAborted},              {410, "Gone", StatusCode::kFailedPrecondition},
      {410, "Expired", StatusCode::kFailedPrecondition},    {429, "TooManyRequests", StatusCode::kResourceExhausted},
      {504, "Timeout", StatusCode::kDeadlineExceeded},      {500, "InternalError", StatusCode::kUnavailable},
      {503, "ServiceUnavailable", StatusCode::kUnavailable},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(StatusCodeFor(ApiError{c.code, c.reason, "m"}), c.want) << c.code << " " << c.reason;
  }
}

KubeConfig LocalConfig(int port) {
  KubeConfig c;
  c.server = "https://127.0.0.1:" + std::to_string(port);
  c.origin = "test";
  return c;
}

TEST(TransportTest, InMemoryCertificatesAreAcceptedByThisLibcurl) {
  KubeConfig c = LocalConfig(1);
  c.ca_data = "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n";
  c.client_cert_data = c.ca_data;
  c.client_key_data = "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n";
  c.token = "t";
  Result<std::unique_ptr<KubeClient>> client = KubeClient::Create(c);
  EXPECT_TRUE(client.ok()) << client.error().ToString();
}

TEST(TransportTest, MissingTokenFileFailsNamingIt) {
  KubeConfig c = LocalConfig(1);
  c.token_file = "/nonexistent/token";
  Result<std::unique_ptr<KubeClient>> client = KubeClient::Create(c);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(client.error().message(), HasSubstr("/nonexistent/token"));
}

// A port nothing listens on: bound, never listened to, so connecting is refused.
TEST(TransportTest, RefusedConnectionIsUnavailableNamingTheRequest) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int port = ntohs(addr.sin_port);

  auto client = KubeClient::Create(LocalConfig(port));
  ASSERT_TRUE(client.ok()) << client.error().ToString();
  Result<nlohmann::json> got = (*client)->Get({"", "v1", "configmaps", "default", "x", ""});
  ::close(fd);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(got.error().message(),
              HasSubstr("GET https://127.0.0.1:" + std::to_string(port) + "/api/v1/namespaces/default/configmaps/x"));
}

TEST(ClientTest, ApplyNeedsAFieldManager) {
  auto client = KubeClient::Create(LocalConfig(1));
  ASSERT_TRUE(client.ok());
  Result<nlohmann::json> r = (*client)->Apply({"", "v1", "configmaps", "default", "x", ""}, nlohmann::json::object(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("field manager"));
}

}  // namespace
}  // namespace tau::kube
