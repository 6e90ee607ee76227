#include "cli/api_client.h"

#include <fmt/format.h>
#include <mutex>
#include <optional>

#include "cli/http_connection.h"
#include "common/strings.h"

#include <nlohmann/json.hpp>

namespace tau::cli {

constexpr int kConnectTimeoutMs = 5000;
constexpr int kReadTimeoutMs = 300 * 1000;
// A followed log may be quiet for hours; only a closed connection ends it.
constexpr int kStreamReadTimeoutMs = 24 * 3600 * 1000;

// The connection is opened on first use and reopened when the server
// closed it.
struct ApiClient::Connection {
  std::optional<HttpConnection> http;
};

namespace {

// The connection that last answered /healthz, and its server's url.
struct AnsweredConnection {
  std::mutex mu;
  std::string url;
  std::optional<HttpConnection> http;
};
AnsweredConnection& Answered() {
  static AnsweredConnection answered;
  return answered;
}

// The /healthz connection to `url`, if one is kept (taken: used once).
std::optional<HttpConnection> TakeAnsweredConnection(const std::string& url) {
  AnsweredConnection& a = Answered();
  std::lock_guard lock(a.mu);
  if (a.url != url || !a.http) return std::nullopt;
  std::optional<HttpConnection> taken = std::move(a.http);
  a.http.reset();
  return taken;
}

StatusCode CodeFromName(const std::string& name) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    if (StatusCodeName(static_cast<StatusCode>(c)) == name) return static_cast<StatusCode>(c);
  }
  return StatusCode::kInternal;
}

Status ErrorFromBody(int http_status, const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("code") && j.contains("message")) {
    return Status(CodeFromName(j.value("code", "Internal")), j.value("message", ""));
  }
  return InternalError(fmt::format("the server answered HTTP {}: {}", http_status, ShortenUtf8(body, 200)));
}

// The error a failed response stands for, its message ending with the
// request's trace id ("... (trace 4f2a...)") so it can be found in the
// server's log; a message of several lines gets it on a line of its own.
Status ErrorFromResponse(const HttpConnection::Response& res) {
  Status st = ErrorFromBody(res.status, res.body);
  if (res.trace_id.empty()) return st;
  const std::string trace = fmt::format("(trace {})", ShortenUtf8(res.trace_id, 64));
  const std::string& m = st.message();
  return Status(st.code(), m.ends_with("\n") ? m + trace + "\n" : m + " " + trace);
}

Result<nlohmann::json> ToJson(const HttpConnection::Response& res) {
  if (res.status >= 400) return ErrorFromResponse(res);
  if (res.body.empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(res.body, nullptr, false);
  if (j.is_discarded()) return InternalError("the server's answer is not JSON");
  return j;
}

}  // namespace

ApiClient::ApiClient(ServerEndpoint endpoint)
    : endpoint_(std::move(endpoint)), connection_(std::make_unique<Connection>()) {}
ApiClient::~ApiClient() = default;
ApiClient::ApiClient(ApiClient&&) noexcept = default;
ApiClient& ApiClient::operator=(ApiClient&&) noexcept = default;

std::string UrlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

namespace {

std::map<std::string, std::string> Headers(const std::string& token, const char* content_type) {
  std::map<std::string, std::string> h = {{"Authorization", "Bearer " + token}};
  if (content_type) h["Content-Type"] = content_type;
  return h;
}

}  // namespace

// Sends one request. A kept-alive connection the server has closed
// meanwhile is replaced before a request that may not be resent; when the
// connection closes under a resendable request, it is sent once more over a
// fresh one. A request that may not be resent is never sent twice: losing
// the connection after sending it is an error that says its outcome is
// unknown.
static Result<HttpConnection::Response> Send(const ServerEndpoint& ep, std::optional<HttpConnection>* conn,
                                             std::string_view method, std::string_view path,
                                             std::string_view body, const char* content_type,
                                             ApiClient::Resend resend) {
  const bool safe = resend == ApiClient::Resend::kSafe;
  if (!conn->has_value()) *conn = TakeAnsweredConnection(ep.url);
  for (int tries = 0; tries < 2; ++tries) {
    if (conn->has_value() && !safe && (*conn)->PeerClosed()) conn->reset();
    bool reused = conn->has_value();
    if (!reused) {
      auto opened = HttpConnection::Open(ep.url, kConnectTimeoutMs);
      if (!opened.ok()) {
        return UnavailableError(fmt::format("cannot reach taugridd at {}: {}", ep.url, opened.error().message()));
      }
      conn->emplace(std::move(*opened));
    }
    auto res = (*conn)->Request(method, path, Headers(ep.token, content_type), body, kReadTimeoutMs);
    if (res.ok()) return res;
    conn->reset();
    if (!safe) {
      return UnavailableError(fmt::format(
          "lost the connection to taugridd at {} during {} {} ({}); it may have been carried out, so it was not "
          "sent again: check (tau list, tau status) before repeating it",
          ep.url, method, path, res.error().message()));
    }
    // A resendable request goes once more over a fresh connection when the
    // connection closed under it (not when the server was too slow).
    if (!reused && res.error().code() != StatusCode::kUnavailable) return res.error();
    if (tries == 1) return res.error();
  }
  return UnavailableError("unreachable");
}

Result<nlohmann::json> ApiClient::Get(std::string_view path) {
  TAU_ASSIGN_OR_RETURN(auto res, Send(endpoint_, &connection_->http, "GET", path, "", nullptr, Resend::kSafe));
  return ToJson(res);
}

Result<nlohmann::json> ApiClient::Post(std::string_view path, const nlohmann::json& body, Resend resend) {
  return Post(path, body, resend, nullptr);
}

Result<nlohmann::json> ApiClient::Post(std::string_view path, const nlohmann::json& body, Resend resend,
                                       int* http_status) {
  if (http_status) *http_status = 0;
  std::string text = body.dump();
  TAU_ASSIGN_OR_RETURN(auto res, Send(endpoint_, &connection_->http, "POST", path, text, "application/json", resend));
  if (http_status) *http_status = res.status;
  return ToJson(res);
}

Status ApiClient::Delete(std::string_view path) {
  TAU_ASSIGN_OR_RETURN(auto res, Send(endpoint_, &connection_->http, "DELETE", path, "", nullptr, Resend::kNever));
  return ToJson(res).status();
}

Status ApiClient::PutBlob(std::string_view digest, std::string_view data) {
  TAU_ASSIGN_OR_RETURN(auto res, Send(endpoint_, &connection_->http, "PUT", fmt::format("/api/v1/blobs/{}", digest),
                                      data, "application/octet-stream", Resend::kSafe));
  return ToJson(res).status();
}

Status ApiClient::Stream(std::string_view path, const std::function<bool(std::string_view)>& on_data) {
  // A fresh connection: a kept-alive one may have been closed meanwhile,
  // and a stream cannot be retried once it has delivered data.
  auto conn = HttpConnection::Open(endpoint_.url, kConnectTimeoutMs);
  if (!conn.ok()) return UnavailableError(fmt::format("cannot reach taugridd at {}: {}", endpoint_.url, conn.error().message()));
  auto res = conn->Stream(path, Headers(endpoint_.token, nullptr), on_data, kStreamReadTimeoutMs);
  if (!res.ok()) {
    return UnavailableError(fmt::format("lost the connection to taugridd at {}: {}", endpoint_.url, res.error().message()));
  }
  if (res->status >= 400) return ErrorFromResponse(*res);
  return Status::Ok();
}

bool ServerAnswers(const std::string& url) {
  auto conn = HttpConnection::Open(url, 2000);
  if (!conn.ok()) return false;
  auto res = conn->Request("GET", "/healthz", {}, "", 2000);
  if (!res.ok() || res->status != 200) return false;
  AnsweredConnection& a = Answered();
  std::lock_guard lock(a.mu);
  a.url = url;
  a.http.emplace(std::move(*conn));
  return true;
}

}  // namespace tau::cli
