#include "cli/api_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tau::cli {
namespace {

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};

void EnsureCurl() { static CurlGlobal global; }

size_t AppendToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct StreamState {
  const std::function<bool(std::string_view)>* on_data;
  std::string error_body;
  long status = 0;
  CURL* curl = nullptr;
  bool stopped = false;
};

size_t StreamWrite(char* data, size_t size, size_t n, void* arg) {
  auto* s = static_cast<StreamState*>(arg);
  if (s->status == 0) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status >= 400) {
    s->error_body.append(data, size * n);
    return size * n;
  }
  if (!(*s->on_data)(std::string_view(data, size * n))) {
    s->stopped = true;
    return 0;  // makes curl stop
  }
  return size * n;
}

StatusCode CodeFromName(const std::string& name) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    if (StatusCodeName(static_cast<StatusCode>(c)) == name) return static_cast<StatusCode>(c);
  }
  return StatusCode::kInternal;
}

Status ErrorFromBody(long http_status, const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("code") && j.contains("message")) {
    return Status(CodeFromName(j.value("code", "Internal")), j.value("message", ""));
  }
  return InternalError(fmt::format("the server answered HTTP {}: {}", http_status, body.substr(0, 200)));
}

curl_slist* Headers(const std::string& token, const char* content_type) {
  curl_slist* h = nullptr;
  h = curl_slist_append(h, ("Authorization: Bearer " + token).c_str());
  if (content_type) h = curl_slist_append(h, (std::string("Content-Type: ") + content_type).c_str());
  return h;
}

}  // namespace

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

Result<nlohmann::json> ApiClient::Request(const char* method, std::string_view path,
                                          std::string_view body, const char* content_type) {
  EnsureCurl();
  CURL* curl = curl_easy_init();
  std::string url = endpoint_.url + std::string(path);
  std::string response;
  curl_slist* headers = Headers(endpoint_.token, content_type);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendToString);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (!body.empty() || std::string_view(method) == "POST" || std::string_view(method) == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  CURLcode rc = curl_easy_perform(curl);
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return UnavailableError(fmt::format("cannot reach taugridd at {}: {}", endpoint_.url, curl_easy_strerror(rc)));
  }
  if (http_status >= 400) return ErrorFromBody(http_status, response);
  if (response.empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(response, nullptr, false);
  if (j.is_discarded()) return InternalError("the server's answer is not JSON");
  return j;
}

Result<nlohmann::json> ApiClient::Get(std::string_view path) { return Request("GET", path, "", nullptr); }

Result<nlohmann::json> ApiClient::Post(std::string_view path, const nlohmann::json& body) {
  std::string text = body.dump();
  return Request("POST", path, text, "application/json");
}

Status ApiClient::Delete(std::string_view path) {
  return Request("DELETE", path, "", nullptr).status();
}

Status ApiClient::PutBlob(std::string_view digest, std::string_view data) {
  return Request("PUT", fmt::format("/api/v1/blobs/{}", digest), data, "application/octet-stream").status();
}

Status ApiClient::Stream(std::string_view path, const std::function<bool(std::string_view)>& on_data) {
  EnsureCurl();
  CURL* curl = curl_easy_init();
  std::string url = endpoint_.url + std::string(path);
  curl_slist* headers = Headers(endpoint_.token, nullptr);
  StreamState state{&on_data, "", 0, curl, false};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, StreamWrite);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl);
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (state.stopped) return Status::Ok();
  if (rc != CURLE_OK) {
    return UnavailableError(fmt::format("lost the connection to taugridd at {}: {}", endpoint_.url,
                                        curl_easy_strerror(rc)));
  }
  if (http_status >= 400) return ErrorFromBody(http_status, state.error_body);
  return Status::Ok();
}

bool ServerAnswers(const std::string& url) {
  EnsureCurl();
  CURL* curl = curl_easy_init();
  std::string response;
  std::string full = url + "/healthz";
  curl_easy_setopt(curl, CURLOPT_URL, full.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendToString);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl);
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  curl_easy_cleanup(curl);
  return rc == CURLE_OK && http_status == 200;
}

}  // namespace tau::cli
