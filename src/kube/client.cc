#include "kube/client.h"

#include "common/strings.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tau::kube {

std::string UrlEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string ResourcePath(const ResourceRef& ref) {
  std::string path = ref.group.empty() ? fmt::format("/api/{}", UrlEscape(ref.version))
                                       : fmt::format("/apis/{}/{}", UrlEscape(ref.group), UrlEscape(ref.version));
  if (!ref.namespace_.empty()) {
    path += "/namespaces/" + UrlEscape(ref.namespace_);
  }
  path += "/" + UrlEscape(ref.resource);
  if (!ref.name.empty()) {
    path += "/" + UrlEscape(ref.name);
    if (!ref.subresource.empty()) {
      path += "/" + UrlEscape(ref.subresource);
    }
  }
  return path;
}

ApiError ParseApiError(long http_code, std::string_view body) {
  ApiError e;
  e.http_code = http_code;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("kind", "") == "Status") {
    if (j.contains("reason") && j["reason"].is_string()) {
      e.reason = j["reason"].get<std::string>();
    }
    if (j.contains("message") && j["message"].is_string()) {
      e.message = j["message"].get<std::string>();
    }
  }
  if (e.message.empty()) {
    std::string_view head = Utf8Prefix(body, 300);  // never half a character
    while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) {
      head.remove_suffix(1);
    }
    e.message = head.empty() ? "(no body)" : std::string(head);
  }
  if (e.reason.empty()) {
    switch (http_code) {
      case 400: e.reason = "BadRequest"; break;
      case 401: e.reason = "Unauthorized"; break;
      case 403: e.reason = "Forbidden"; break;
      case 404: e.reason = "NotFound"; break;
      case 405: e.reason = "MethodNotAllowed"; break;
      case 409: e.reason = "Conflict"; break;
      case 410: e.reason = "Gone"; break;
      case 415: e.reason = "UnsupportedMediaType"; break;
      case 422: e.reason = "Invalid"; break;
      case 429: e.reason = "TooManyRequests"; break;
      case 500: e.reason = "InternalError"; break;
      case 503: e.reason = "ServiceUnavailable"; break;
      case 504: e.reason = "Timeout"; break;
      default: e.reason = fmt::format("HTTP{}", http_code); break;
    }
  }
  return e;
}

StatusCode StatusCodeFor(const ApiError& e) {
  if (e.reason == "AlreadyExists") {
    return StatusCode::kAlreadyExists;
  }
  if (e.reason == "Conflict") {
    return StatusCode::kAborted;
  }
  switch (e.http_code) {
    case 400: case 405: case 406: case 413: case 415: case 422: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthenticated;
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 409: return StatusCode::kAborted;
    case 410: return StatusCode::kFailedPrecondition;
    case 429: return StatusCode::kResourceExhausted;
    case 408: case 504: return StatusCode::kDeadlineExceeded;
    default: break;
  }
  if (e.http_code >= 500) {
    return StatusCode::kUnavailable;
  }
  return StatusCode::kInternal;
}

Status ToStatus(const ApiError& e, std::string_view what) {
  return Status(StatusCodeFor(e), fmt::format("{}: HTTP {} {}: {}", what, e.http_code, e.reason, e.message));
}

KubeClient::KubeClient(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}
KubeClient::~KubeClient() = default;

Result<std::unique_ptr<KubeClient>> KubeClient::Create(KubeConfig config, TransportOptions options) {
  TAU_ASSIGN_OR_RETURN(auto transport, Transport::Create(std::move(config), std::move(options)));
  return std::unique_ptr<KubeClient>(new KubeClient(std::move(transport)));
}

Result<nlohmann::json> KubeClient::Call(const std::string& method, const std::string& target,
                                        const std::string& content_type, std::string body) {
  HttpRequest request;
  request.method = method;
  request.target = target;
  request.content_type = content_type;
  request.body = std::move(body);
  TAU_ASSIGN_OR_RETURN(HttpResponse response, transport_->Send(request));
  std::string what = fmt::format("{} {}", method, target);
  if (response.code < 200 || response.code >= 300) {
    return ToStatus(ParseApiError(response.code, response.body), what);
  }
  nlohmann::json j = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InternalError(fmt::format("{}: HTTP {} with a body that is not JSON: {}", what, response.code,
                                     Utf8Prefix(response.body, 200)));
  }
  return j;
}

Result<nlohmann::json> KubeClient::Get(const ResourceRef& ref) {
  return Call("GET", ResourcePath(ref), "", "");
}

Result<nlohmann::json> KubeClient::List(const ResourceRef& ref, const ListOptions& options) {
  ResourceRef collection = ref;
  collection.name.clear();
  collection.subresource.clear();
  std::string target = ResourcePath(collection);
  char sep = '?';
  auto param = [&](std::string_view key, std::string_view value) {
    if (!value.empty()) {
      target += fmt::format("{}{}={}", sep, key, UrlEscape(value));
      sep = '&';
    }
  };
  param("labelSelector", options.label_selector);
  param("fieldSelector", options.field_selector);
  param("resourceVersion", options.resource_version);
  if (options.limit > 0) {
    param("limit", std::to_string(options.limit));
  }
  param("continue", options.continue_token);
  return Call("GET", target, "", "");
}

Result<nlohmann::json> KubeClient::Create(const ResourceRef& ref, const nlohmann::json& object) {
  ResourceRef collection = ref;
  collection.name.clear();
  collection.subresource.clear();
  return Call("POST", ResourcePath(collection), "application/json", object.dump());
}

Result<nlohmann::json> KubeClient::Replace(const ResourceRef& ref, const nlohmann::json& object) {
  return Call("PUT", ResourcePath(ref), "application/json", object.dump());
}

Result<nlohmann::json> KubeClient::Delete(const ResourceRef& ref, const DeleteOptions& options) {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  if (options.grace_period_seconds) {
    body["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"] = {{"resourceVersion", options.precondition_resource_version}};
  }
  return Call("DELETE", ResourcePath(ref), "application/json", body.dump());
}

Result<nlohmann::json> KubeClient::MergePatch(const ResourceRef& ref, const nlohmann::json& patch) {
  return Call("PATCH", ResourcePath(ref), "application/merge-patch+json", patch.dump());
}

Result<nlohmann::json> KubeClient::StrategicMergePatch(const ResourceRef& ref, const nlohmann::json& patch) {
  return Call("PATCH", ResourcePath(ref), "application/strategic-merge-patch+json", patch.dump());
}

Result<nlohmann::json> KubeClient::Apply(const ResourceRef& ref, const nlohmann::json& object,
                                         const ApplyOptions& options) {
  if (options.field_manager.empty()) {
    return InvalidArgumentError("server-side apply needs a field manager");
  }
  std::string target = fmt::format("{}?fieldManager={}", ResourcePath(ref), UrlEscape(options.field_manager));
  if (options.force) {
    target += "&force=true";
  }
  return Call("PATCH", target, "application/apply-patch+yaml", object.dump());
}

}  // namespace tau::kube
