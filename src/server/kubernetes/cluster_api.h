#pragma once

// The calls the Kubernetes backend makes to the API server, behind an
// interface so that its decisions are tested against a scripted cluster.
// KubeClientApi is the real one (kube::KubeClient).

#include <nlohmann/json_fwd.hpp>

#include "kube/client.h"

namespace tau::server::kubernetes {

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  virtual Result<nlohmann::json> Get(const kube::ResourceRef& ref) = 0;
  virtual Result<nlohmann::json> List(const kube::ResourceRef& ref, const kube::ListOptions& options) = 0;
  virtual Result<nlohmann::json> Create(const kube::ResourceRef& ref, const nlohmann::json& object) = 0;
  virtual Result<nlohmann::json> Delete(const kube::ResourceRef& ref, const kube::DeleteOptions& options) = 0;
};

class KubeClientApi final : public ClusterApi {
 public:
  explicit KubeClientApi(kube::KubeClient* client) : client_(client) {}
  Result<nlohmann::json> Get(const kube::ResourceRef& ref) override;
  Result<nlohmann::json> List(const kube::ResourceRef& ref, const kube::ListOptions& options) override;
  Result<nlohmann::json> Create(const kube::ResourceRef& ref, const nlohmann::json& object) override;
  Result<nlohmann::json> Delete(const kube::ResourceRef& ref, const kube::DeleteOptions& options) override;

 private:
  kube::KubeClient* client_;
};

// The resources the backend follows and makes.
inline kube::ResourceRef JobsRef(std::string ns = "") { return {"batch", "v1", "jobs", std::move(ns), "", ""}; }
inline kube::ResourceRef RayJobsRef(std::string ns = "") { return {"ray.io", "v1", "rayjobs", std::move(ns), "", ""}; }
inline kube::ResourceRef PodsRef(std::string ns = "") { return {"", "v1", "pods", std::move(ns), "", ""}; }
inline kube::ResourceRef NodesRef() { return {"", "v1", "nodes", "", "", ""}; }
inline kube::ResourceRef ServicesRef(std::string ns = "") { return {"", "v1", "services", std::move(ns), "", ""}; }
inline kube::ResourceRef ConfigMapsRef(std::string ns = "") { return {"", "v1", "configmaps", std::move(ns), "", ""}; }
inline kube::ResourceRef SecretsRef(std::string ns = "") { return {"", "v1", "secrets", std::move(ns), "", ""}; }
inline kube::ResourceRef WorkloadsRef(std::string ns = "") {
  return {"kueue.x-k8s.io", "v1beta2", "workloads", std::move(ns), "", ""};
}
inline kube::ResourceRef LocalQueuesRef(std::string ns = "") {
  return {"kueue.x-k8s.io", "v1beta2", "localqueues", std::move(ns), "", ""};
}
inline kube::ResourceRef ClusterQueuesRef() { return {"kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "", ""}; }
inline kube::ResourceRef PriorityClassesRef() {
  return {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "", "", ""};
}

}  // namespace tau::server::kubernetes
