#pragma once

// Kueue objects on a cluster: what `tau admin apply/get/delete` and
// `tau queues` do when taugridd runs with a Kubernetes API server. Objects
// are whole JSON documents (include <nlohmann/json.hpp> to use them; this
// header only forward-declares it).

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kube/client.h"
#include "render/kueue_config.h"

namespace tau::server::kubernetes {

// The field manager TauGrid applies Kueue objects with.
inline constexpr std::string_view kFieldManager = "taugrid";

// The kinds `tau admin apply` takes on a cluster, in the order they are
// applied: what others refer to first (flavors and priority classes before
// the ClusterQueues that name them, ClusterQueues before the LocalQueues
// that point at them).
const std::vector<std::string>& KueueKindsInApplyOrder();

// The API resource of a Kueue object (kueue.x-k8s.io/v1beta2): a
// LocalQueue is namespaced, the other kinds are cluster-scoped (`ns` is
// then ignored). InvalidArgument naming the kinds for any other kind.
Result<kube::ResourceRef> KueueResource(std::string_view kind, const std::string& ns, const std::string& name);

struct ManifestFile {
  std::string file;  // the name errors give
  std::string text;
};

struct ClusterManifests {
  std::vector<render::AppliedObject> objects;  // in apply order; file order within a kind
  std::vector<std::string> warnings;           // positioned, as embedded mode words them
};

// Decodes manifests exactly as embedded mode does (the same errors at
// FILE:LINE:COL), then refuses what is not an API object on a cluster: a
// Kueue Configuration is the controller's own configuration, set where
// Kueue is deployed. InvalidArgument listing every error.
Result<ClusterManifests> DecodeForCluster(const std::vector<ManifestFile>& files);

// A field another field manager owns, from a server-side apply conflict.
struct FieldConflict {
  std::string manager;
  std::string field;  // ".spec.queueingStrategy"
};
// The conflicts of a 409 answer to an apply (its Status object's
// details.causes of type FieldManagerConflict).
std::vector<FieldConflict> ApplyConflictsOf(const nlohmann::json& status);

// What the Kueue operations need of a cluster. KueueClusterOf() is the
// API server; tests script one.
class KueueCluster {
 public:
  virtual ~KueueCluster() = default;
  // NotFound when the object does not exist.
  virtual Result<nlohmann::json> Get(const kube::ResourceRef& ref) = 0;
  // The items of the collection (every page).
  virtual Result<std::vector<nlohmann::json>> List(const kube::ResourceRef& ref) = 0;
  // Server-side apply with kFieldManager. On a conflict: Aborted, and
  // `conflicts` says which fields and managers.
  virtual Result<nlohmann::json> Apply(const kube::ResourceRef& ref, const nlohmann::json& object, bool force,
                                       std::vector<FieldConflict>* conflicts) = 0;
  virtual Status Delete(const kube::ResourceRef& ref) = 0;
};
std::unique_ptr<KueueCluster> KueueClusterOf(kube::KubeClient& client);

enum class ApplyState { kCreated, kConfigured, kUnchanged, kFailed, kNotApplied };

struct ObjectOutcome {
  std::string label;  // "ClusterQueue/team-a", "LocalQueue/ns/name" (as embedded mode)
  ApplyState state = ApplyState::kNotApplied;
  Status error;       // kFailed
  std::vector<FieldConflict> conflicts;
};

// What an apply did to each object. Applying stops at the first object the
// cluster refuses: later objects may depend on it, and every object is
// accounted for as applied, failed or not applied.
struct ApplyReport {
  Status precondition;  // not OK: nothing was applied (a LocalQueue's namespace is missing, ...)
  std::vector<ObjectOutcome> objects;

  bool ok() const;
  // "ClusterQueue/x created|configured|unchanged" for each object applied.
  std::vector<std::string> Changes() const;
  // For a failed apply: what failed and why (conflicts name each field and
  // its manager and suggest --force-conflicts), then what was applied and
  // what was not.
  std::string FailureMessage() const;
};

// Applies `objects` (from DecodeForCluster) with server-side apply, in
// order. Namespaces are not created: every LocalQueue's namespace must
// exist, or nothing is applied. `force` takes over fields other managers
// own (--force-conflicts).
ApplyReport ApplyKueueObjects(KueueCluster& cluster, const std::vector<render::AppliedObject>& objects, bool force);

// The objects of `kind` (every Kueue kind when empty) named `name` (all
// when empty), with their status, without server bookkeeping (managedFields,
// uid, resourceVersion, generation); kinds in apply order, then by
// namespace and name. InvalidArgument for a kind that is not a Kueue kind.
Result<std::vector<nlohmann::json>> GetKueueObjects(KueueCluster& cluster, const std::string& kind,
                                                    const std::string& name);

// Deletes one object; "KIND/NAME deleted", or NotFound "no KIND named
// \"NAME\"" as embedded mode says. A LocalQueue's namespace defaults to
// "default".
Result<std::string> DeleteKueueObject(KueueCluster& cluster, const std::string& kind, const std::string& ns,
                                      const std::string& name);

// GET /api/v1/queues from the cluster's objects: the same document embedded
// mode serves, with counts and usage from Kueue's status
// (pendingWorkloads, admittedWorkloads, flavorsUsage) and shares from
// status.fairSharing (fair_sharing is true when Kueue reports shares).
nlohmann::json QueuesJson(const std::vector<nlohmann::json>& cluster_queues,
                          const std::vector<nlohmann::json>& local_queues, const std::vector<nlohmann::json>& cohorts);
Result<nlohmann::json> QueuesJsonFromCluster(KueueCluster& cluster);

}  // namespace tau::server::kubernetes
