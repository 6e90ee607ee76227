#pragma once

#include <string>
#include <vector>

namespace tau::sched {

// Kubernetes taints and tolerations (core/v1), as Kueue's flavor assigner
// reads a ResourceFlavor's nodeTaints and tolerations and a pod's
// tolerations.

struct Taint {
  std::string key, value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

struct Toleration {
  std::string key;
  std::string op = "Equal";  // Equal | Exists ("" reads as Equal)
  std::string value;
  std::string effect;  // "" matches every effect
};

// Kubernetes' Toleration.ToleratesTaint: an effect, when set, must be the
// taint's; a key, when set, must be the taint's (an empty key with Exists
// tolerates every taint); Equal needs the same value, Exists any value.
bool ToleratesTaint(const Toleration& toleration, const Taint& taint);

// The first taint that keeps pods off a flavor — effect NoSchedule or
// NoExecute (PreferNoSchedule only steers the kube-scheduler) — that none
// of `tolerations` tolerates; nullptr when every such taint is tolerated.
// Kueue's FindMatchingUntoleratedTaint with its flavor-assignment filter.
const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints, const std::vector<Toleration>& tolerations);

// "key=value:Effect" (or "key:Effect" without a value), as kubectl prints a taint.
std::string Describe(const Taint& taint);

}  // namespace tau::sched
