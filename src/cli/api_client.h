#pragma once

#include <nlohmann/json_fwd.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tau::cli {

// Where a server is and how to authenticate to it.
struct ServerEndpoint {
  std::string url;    // "http://127.0.0.1:PORT"
  std::string token;
};

// A small JSON-over-HTTP client for /api/v1. API errors come back as the
// Status the server named ({"code": "NotFound", ...}); a server that does
// not answer is Unavailable. One connection is kept alive across calls.
// (cpp-httplib underneath, used only in api_client.cc: libcurl's dependency
// tree costs several milliseconds at every start of `tau`.)
class ApiClient {
 public:
  explicit ApiClient(ServerEndpoint endpoint);
  ~ApiClient();
  ApiClient(ApiClient&&) noexcept;
  ApiClient& operator=(ApiClient&&) noexcept;

  // Whether a request may be sent again when the connection is lost after
  // it was sent (the server may have carried it out).
  enum class Resend {
    kNever,  // it changes something each time: the loss is an error that says so
    kSafe,   // repeating it changes nothing more (a GET, a content-addressed
             // upload, a body with a request_id the server deduplicates)
  };

  // GETs and blob uploads are resent once over a fresh connection when a
  // kept-alive one turns out to be closed.
  Result<nlohmann::json> Get(std::string_view path);
  Result<nlohmann::json> Post(std::string_view path, const nlohmann::json& body, Resend resend = Resend::kNever);
  // As Post; `*http_status` is set to the answer's HTTP status (0 when
  // none came), so a caller can act on one the Status does not name
  // (412: a submit's snapshot is not uploaded yet).
  Result<nlohmann::json> Post(std::string_view path, const nlohmann::json& body, Resend resend, int* http_status);
  Status Delete(std::string_view path);
  Status PutBlob(std::string_view digest, std::string_view data);
  // GET `path` and hand each chunk of the body to `on_data` as it arrives;
  // returning false from it stops the stream (not an error).
  Status Stream(std::string_view path, const std::function<bool(std::string_view)>& on_data);

  const ServerEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Connection;
  ServerEndpoint endpoint_;
  std::unique_ptr<Connection> connection_;
};

// Checks /healthz with a short timeout. The connection that answered is
// kept for the next ApiClient of the same url, so a command pays for one
// connection, not two.
bool ServerAnswers(const std::string& url);

// "%2F"-style escaping of one URL path or query component.
std::string UrlEscape(std::string_view text);

}  // namespace tau::cli
