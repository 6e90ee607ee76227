#include "server/admission/embedded_admission.h"

#include "sched/fair_sharing.h"

namespace tau::server {

std::optional<Admission::Usage> EmbeddedAdmission::ClusterQueueUsage(const std::string& cluster_queue,
                                                                     const sched::FlavorResource& resource) const {
  auto node = engine_.ClusterQueueNode(cluster_queue);
  if (!node) return std::nullopt;
  return Usage{engine_.quota().Usage(*node, resource), engine_.quota().Borrowed(*node, resource)};
}

std::optional<int64_t> EmbeddedAdmission::ClusterQueueShare(const std::string& name) const {
  auto node = engine_.ClusterQueueNode(name);
  if (!node || !engine_.FairSharing()) return std::nullopt;
  return sched::ReportedWeightedShare(engine_.WeightedShareOf(*node));
}

std::optional<int64_t> EmbeddedAdmission::CohortShare(const std::string& name) const {
  auto node = engine_.CohortNode(name);
  if (!node || !engine_.FairSharing()) return std::nullopt;
  return sched::ReportedWeightedShare(engine_.WeightedShareOf(*node));
}

}  // namespace tau::server
