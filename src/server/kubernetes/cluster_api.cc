#include "server/kubernetes/cluster_api.h"

#include <nlohmann/json.hpp>

namespace tau::server::kubernetes {

Result<nlohmann::json> KubeClientApi::Get(const kube::ResourceRef& ref) { return client_->Get(ref); }

Result<nlohmann::json> KubeClientApi::List(const kube::ResourceRef& ref, const kube::ListOptions& options) {
  return client_->List(ref, options);
}

Result<nlohmann::json> KubeClientApi::Create(const kube::ResourceRef& ref, const nlohmann::json& object) {
  return client_->Create(ref, object);
}

Result<nlohmann::json> KubeClientApi::Delete(const kube::ResourceRef& ref, const kube::DeleteOptions& options) {
  return client_->Delete(ref, options);
}

}  // namespace tau::server::kubernetes
