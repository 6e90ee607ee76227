#pragma once

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kube/kubeconfig.h"
#include "kube/transport.h"

namespace tau::kube {

// Names any Kubernetes resource without generated types: the core group is
// group "" (ConfigMap: {"", "v1", "configmaps", "default", "x"}); an empty
// namespace means a cluster-scoped resource or, for List/Watch, all
// namespaces; an empty name means the collection. `subresource` ("status",
// "scale") addresses that subresource of the named object.
struct ResourceRef {
  std::string group;
  std::string version;
  std::string resource;  // plural, lower case: "jobs", "workloads"
  std::string namespace_;
  std::string name;
  std::string subresource;
};

// "/api/v1/namespaces/default/configmaps/x" or
// "/apis/batch/v1/namespaces/default/jobs" (each segment %-escaped).
std::string ResourcePath(const ResourceRef& ref);

// %-escapes one path segment or query value (RFC 3986 unreserved kept).
std::string UrlEscape(std::string_view text);

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" = most recent
  int64_t limit = 0;             // 0 = no paging
  std::string continue_token;
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::optional<int64_t> grace_period_seconds;
  // Deletes only the object at this resourceVersion (a conflict otherwise).
  std::string precondition_resource_version;
};

struct ApplyOptions {
  std::string field_manager;  // required by the API server
  bool force = false;         // take over fields other managers own
};

// How an API error reaches callers: a Status whose code follows the
// API server's reason and whose message carries the HTTP code, the reason
// and the server's message: "POST /api/v1/...: HTTP 409 AlreadyExists:
// configmaps \"x\" already exists".
//   400 BadRequest, 422 Invalid, 415  -> InvalidArgument
//   401 Unauthorized                  -> Unauthenticated
//   403 Forbidden                     -> PermissionDenied
//   404 NotFound                      -> NotFound
//   409 AlreadyExists                 -> AlreadyExists
//   409 Conflict                      -> Aborted (re-read and retry)
//   410 Gone / Expired                -> FailedPrecondition (re-list)
//   429 TooManyRequests               -> ResourceExhausted
//   504 Timeout, 408                  -> DeadlineExceeded
//   other 5xx                         -> Unavailable
// Transport failures (connection refused, TLS) are Unavailable,
// DeadlineExceeded or FailedPrecondition, naming the URL.
struct ApiError {
  long http_code = 0;
  std::string reason;   // the Status object's reason ("AlreadyExists"), or the HTTP status text
  std::string message;  // the Status object's message, or the start of the body
};
// Reads an API server error response (a Status object, or anything else).
ApiError ParseApiError(long http_code, std::string_view body);
StatusCode StatusCodeFor(const ApiError& error);
Status ToStatus(const ApiError& error, std::string_view what);

// A client for one API server: typed by ResourceRef, bodies as JSON.
// Thread-safe; calls block the calling thread. Objects are
// nlohmann::json (include <nlohmann/json.hpp> to use them; this header
// only forward-declares it).
class KubeClient {
 public:
  static Result<std::unique_ptr<KubeClient>> Create(KubeConfig config, TransportOptions options = {});
  ~KubeClient();

  Result<nlohmann::json> Get(const ResourceRef& ref);
  // The list object ({"items": [...], "metadata": {"resourceVersion", "continue"}}).
  Result<nlohmann::json> List(const ResourceRef& ref, const ListOptions& options = {});
  // POSTs `object` to the collection of `ref` (ref.name is ignored).
  Result<nlohmann::json> Create(const ResourceRef& ref, const nlohmann::json& object);
  // PUTs `object` (with its metadata.resourceVersion for optimistic concurrency).
  Result<nlohmann::json> Replace(const ResourceRef& ref, const nlohmann::json& object);
  // The API server's answer: the object being deleted or a Status.
  Result<nlohmann::json> Delete(const ResourceRef& ref, const DeleteOptions& options = {});
  // JSON merge patch (RFC 7386).
  Result<nlohmann::json> MergePatch(const ResourceRef& ref, const nlohmann::json& patch);
  // Strategic merge patch (built-in kinds only): lists with a merge key,
  // such as a Node's status.conditions, merge entry by entry.
  Result<nlohmann::json> StrategicMergePatch(const ResourceRef& ref, const nlohmann::json& patch);
  // Server-side apply: PATCH application/apply-patch+yaml (the object as
  // JSON, which is YAML) with fieldManager and force.
  Result<nlohmann::json> Apply(const ResourceRef& ref, const nlohmann::json& object, const ApplyOptions& options);

  Transport& transport() { return *transport_; }
  const KubeConfig& config() const { return transport_->config(); }

 private:
  explicit KubeClient(std::unique_ptr<Transport> transport);
  Result<nlohmann::json> Call(const std::string& method, const std::string& target, const std::string& content_type,
                              std::string body);

  std::unique_ptr<Transport> transport_;
};

}  // namespace tau::kube
