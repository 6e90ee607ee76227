#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kube/kubeconfig.h"

namespace tau::kube {

// HTTP(S) to one API server over libcurl rather than the project's
// cpp-httplib (which the CLI uses because it starts faster): libcurl takes the
// kubeconfig's `*-data` PEM bytes straight from memory
// (CURLOPT_CAINFO_BLOB/SSLCERT_BLOB/SSLKEY_BLOB; no key in a temp file, no
// PEM parsing of our own into OpenSSL objects), has connect, total and TCP
// keepalive settings, and calls a progress hook about once a second even
// while a watch is silent, so another thread can stop a watch promptly;
// cpp-httplib 0.11's stream reader runs only when data arrives.
//
// Thread-safe: each request borrows an idle curl handle from a small pool
// (keeping its connection alive for the next request) or opens a new one.

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  // For Send(); a stream's limit is given per request.
  std::chrono::milliseconds request_timeout{30'000};
  std::string user_agent = "taugrid";
};

struct HttpRequest {
  std::string method = "GET";
  std::string target;        // "/api/v1/namespaces/default/configmaps?limit=10"
  std::string content_type;  // for a body
  std::string body;
  // 0: the transport's request_timeout (Send) or none (Stream).
  std::chrono::milliseconds timeout{0};
};

struct HttpResponse {
  long code = 0;
  std::string body;
};

// How a stream ended.
struct StreamEnd {
  long code = 0;           // HTTP status; 0 when no response arrived
  std::string error_body;  // the body of a non-2xx response
  bool stopped = false;    // `stop` was set, or the handler returned false
  // OK when the server ended the response cleanly; Unavailable (or
  // DeadlineExceeded) naming what broke when the connection failed or dropped.
  Status transport = Status::Ok();
};

class Transport {
 public:
  // Checks that this libcurl can do what `config` needs (TLS, in-memory
  // certificates); InvalidArgument/FailedPrecondition naming the problem.
  static Result<std::unique_ptr<Transport>> Create(KubeConfig config, TransportOptions options = {});
  ~Transport();

  // One request, the whole body buffered. Errors are transport errors only
  // (Unavailable/DeadlineExceeded/...); any HTTP status comes back as a response.
  Result<HttpResponse> Send(const HttpRequest& request);

  // One request whose 2xx body goes to `on_chunk` as it arrives (chunks split
  // anywhere); returning false from it stops the stream. Setting `*stop`
  // (may be null) from another thread ends it within about a second, even
  // while the server sends nothing.
  StreamEnd Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                   const std::atomic<bool>* stop);

  const KubeConfig& config() const { return config_; }

 private:
  struct Handle;
  Transport(KubeConfig config, TransportOptions options);
  Result<std::unique_ptr<Handle>> Acquire();
  void Release(std::unique_ptr<Handle> handle);
  Status Prepare(Handle* h, const HttpRequest& request, std::chrono::milliseconds timeout);

  KubeConfig config_;
  TransportOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_;
};

}  // namespace tau::kube
