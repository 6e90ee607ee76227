#include "kube/transport.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace tau::kube {

struct Transport::Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  ~Handle() {
    if (headers != nullptr) {
      curl_slist_free_all(headers);
    }
    if (curl != nullptr) {
      curl_easy_cleanup(curl);
    }
  }
};

namespace {

void GlobalInit() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

// What the write callback feeds: the stream handler, or a buffer.
struct Sink {
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_chunk = nullptr;  // null: buffer all
  std::string buffer;       // the whole body (Send) or a non-2xx body (Stream)
  bool handler_stopped = false;
  const std::atomic<bool>* stop = nullptr;
};

size_t Write(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t bytes = size * n;
  std::string_view chunk(data, bytes);
  if (sink->on_chunk == nullptr) {
    sink->buffer.append(chunk);
    return bytes;
  }
  long code = 0;
  curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code >= 300) {
    if (sink->buffer.size() < (1u << 20)) {
      sink->buffer.append(chunk);
    }
    return bytes;
  }
  if (!(*sink->on_chunk)(chunk)) {
    sink->handler_stopped = true;
    return CURL_WRITEFUNC_ERROR;
  }
  return bytes;
}

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* sink = static_cast<Sink*>(user);
  return (sink->stop != nullptr && sink->stop->load()) ? 1 : 0;
}

Status CurlFailure(CURLcode rc, const char* detail, const std::string& what) {
  std::string message = fmt::format("{}: {}", what, detail[0] != '\0' ? detail : curl_easy_strerror(rc));
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return DeadlineExceededError(std::move(message));
  }
  if (rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CIPHER ||
      rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_ISSUER_ERROR || rc == CURLE_URL_MALFORMAT) {
    return FailedPreconditionError(std::move(message));
  }
  return UnavailableError(std::move(message));
}

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ErrnoError(errno, "token file " + path);
  }
  std::ostringstream out;
  out << in.rdbuf();
  std::string token = out.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

}  // namespace

Transport::Transport(KubeConfig config, TransportOptions options)
    : config_(std::move(config)), options_(std::move(options)) {}

Transport::~Transport() = default;

Result<std::unique_ptr<Transport>> Transport::Create(KubeConfig config, TransportOptions options) {
  GlobalInit();
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  bool https = config.server.rfind("https://", 0) == 0;
  if (https && (info->features & CURL_VERSION_SSL) == 0) {
    return FailedPreconditionError(fmt::format("{}: this libcurl ({}) has no TLS support", config.origin,
                                               info->version));
  }
  std::unique_ptr<Transport> t(new Transport(std::move(config), std::move(options)));
  // Build one handle now so an option this libcurl lacks (in-memory
  // certificates need 7.77) is reported here, not at the first request.
  TAU_ASSIGN_OR_RETURN(auto handle, t->Acquire());
  HttpRequest probe;
  TAU_RETURN_IF_ERROR(t->Prepare(handle.get(), probe, t->options_.request_timeout));
  t->Release(std::move(handle));
  return t;
}

Result<std::unique_ptr<Transport::Handle>> Transport::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  auto h = std::make_unique<Handle>();
  h->curl = curl_easy_init();
  if (h->curl == nullptr) {
    return ResourceExhaustedError("curl_easy_init failed");
  }
  return h;
}

void Transport::Release(std::unique_ptr<Handle> handle) {
  std::lock_guard lock(mu_);
  if (idle_.size() < 8) {
    idle_.push_back(std::move(handle));
  }
}

Status Transport::Prepare(Handle* h, const HttpRequest& request, std::chrono::milliseconds timeout) {
  CURL* c = h->curl;
  curl_easy_reset(c);
  if (h->headers != nullptr) {
    curl_slist_free_all(h->headers);
    h->headers = nullptr;
  }
  h->error[0] = '\0';
  CURLcode rc = CURLE_OK;
  auto set = [&](CURLoption opt, auto value, const char* name) {
    if (rc == CURLE_OK) {
      rc = curl_easy_setopt(c, opt, value);
      if (rc != CURLE_OK) {
        h->error[0] = '\0';
        fmt::format_to_n(h->error, sizeof(h->error) - 1, "{}: {}", name, curl_easy_strerror(rc));
      }
    }
  };
  std::string url = config_.server + request.target;
  set(CURLOPT_URL, url.c_str(), "URL");
  set(CURLOPT_ERRORBUFFER, h->error, "CURLOPT_ERRORBUFFER");
  set(CURLOPT_NOSIGNAL, 1L, "CURLOPT_NOSIGNAL");
  set(CURLOPT_TCP_KEEPALIVE, 1L, "CURLOPT_TCP_KEEPALIVE");
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()), "CURLOPT_CONNECTTIMEOUT_MS");
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()), "CURLOPT_TIMEOUT_MS");
  set(CURLOPT_USERAGENT, options_.user_agent.c_str(), "CURLOPT_USERAGENT");
  set(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR");
  if (request.method == "GET") {
    set(CURLOPT_HTTPGET, 1L, "CURLOPT_HTTPGET");
  } else {
    set(CURLOPT_CUSTOMREQUEST, request.method.c_str(), "CURLOPT_CUSTOMREQUEST");
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
    set(CURLOPT_POSTFIELDS, request.body.data(), "CURLOPT_POSTFIELDS");
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()), "CURLOPT_POSTFIELDSIZE");
  }
  // TLS.
  if (config_.insecure_skip_tls_verify) {
    set(CURLOPT_SSL_VERIFYPEER, 0L, "CURLOPT_SSL_VERIFYPEER");
    set(CURLOPT_SSL_VERIFYHOST, 0L, "CURLOPT_SSL_VERIFYHOST");
  }
  if (!config_.ca_data.empty()) {
    curl_blob blob{const_cast<char*>(config_.ca_data.data()), config_.ca_data.size(), CURL_BLOB_COPY};
    set(CURLOPT_CAINFO_BLOB, &blob, "certificate-authority-data (CURLOPT_CAINFO_BLOB)");
  } else if (!config_.ca_file.empty()) {
    set(CURLOPT_CAINFO, config_.ca_file.c_str(), "CURLOPT_CAINFO");
  }
  if (!config_.client_cert_data.empty()) {
    curl_blob blob{const_cast<char*>(config_.client_cert_data.data()), config_.client_cert_data.size(),
                   CURL_BLOB_COPY};
    set(CURLOPT_SSLCERT_BLOB, &blob, "client-certificate-data (CURLOPT_SSLCERT_BLOB)");
    set(CURLOPT_SSLCERTTYPE, "PEM", "CURLOPT_SSLCERTTYPE");
  } else if (!config_.client_cert_file.empty()) {
    set(CURLOPT_SSLCERT, config_.client_cert_file.c_str(), "CURLOPT_SSLCERT");
  }
  if (!config_.client_key_data.empty()) {
    curl_blob blob{const_cast<char*>(config_.client_key_data.data()), config_.client_key_data.size(),
                   CURL_BLOB_COPY};
    set(CURLOPT_SSLKEY_BLOB, &blob, "client-key-data (CURLOPT_SSLKEY_BLOB)");
    set(CURLOPT_SSLKEYTYPE, "PEM", "CURLOPT_SSLKEYTYPE");
  } else if (!config_.client_key_file.empty()) {
    set(CURLOPT_SSLKEY, config_.client_key_file.c_str(), "CURLOPT_SSLKEY");
  }
  if (rc != CURLE_OK) {
    return FailedPreconditionError(fmt::format("{}: this libcurl cannot set {}", config_.origin, h->error));
  }
  // Headers.
  auto add = [&](const std::string& line) { h->headers = curl_slist_append(h->headers, line.c_str()); };
  add("Accept: application/json");
  if (!request.content_type.empty()) {
    add("Content-Type: " + request.content_type);
  }
  add("Expect:");  // no 100-continue round trip for large bodies
  std::string token = config_.token;
  if (token.empty() && !config_.token_file.empty()) {
    TAU_ASSIGN_OR_RETURN(token, ReadToken(config_.token_file));
  }
  if (!token.empty()) {
    add("Authorization: Bearer " + token);
  }
  set(CURLOPT_HTTPHEADER, h->headers, "CURLOPT_HTTPHEADER");
  if (rc != CURLE_OK) {
    return InternalError(h->error);
  }
  return Status::Ok();
}

Result<HttpResponse> Transport::Send(const HttpRequest& request) {
  TAU_ASSIGN_OR_RETURN(auto h, Acquire());
  auto timeout = request.timeout.count() > 0 ? request.timeout : options_.request_timeout;
  TAU_RETURN_IF_ERROR(Prepare(h.get(), request, timeout));
  Sink sink;
  sink.curl = h->curl;
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, Write);
  curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &sink);
  CURLcode rc = curl_easy_perform(h->curl);
  if (rc != CURLE_OK) {
    Status s = CurlFailure(rc, h->error, fmt::format("{} {}{}", request.method, config_.server, request.target));
    return s;  // the handle is dropped: its connection is suspect
  }
  HttpResponse response;
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &response.code);
  response.body = std::move(sink.buffer);
  Release(std::move(h));
  return response;
}

StreamEnd Transport::Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                            const std::atomic<bool>* stop) {
  StreamEnd end;
  auto acquired = Acquire();
  if (!acquired.ok()) {
    end.transport = acquired.error();
    return end;
  }
  std::unique_ptr<Handle> h = std::move(*acquired);
  Status prepared = Prepare(h.get(), request, request.timeout);
  if (!prepared.ok()) {
    end.transport = prepared;
    return end;
  }
  Sink sink;
  sink.curl = h->curl;
  sink.on_chunk = &on_chunk;
  sink.stop = stop;
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, Write);
  curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, &sink);
  CURLcode rc = curl_easy_perform(h->curl);
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &end.code);
  if (sink.handler_stopped || rc == CURLE_ABORTED_BY_CALLBACK) {
    end.stopped = true;
    return end;  // the connection was cut mid-response: not reusable
  }
  if (rc != CURLE_OK) {
    end.transport = CurlFailure(rc, h->error, fmt::format("{} {}{}", request.method, config_.server, request.target));
    return end;
  }
  if (end.code < 200 || end.code >= 300) {
    end.error_body = std::move(sink.buffer);
  }
  Release(std::move(h));
  return end;
}

}  // namespace tau::kube
