#pragma once

// One agent reports for a node at a time: a coordination.k8s.io/v1 Lease
// per node (`taugrid-agent-<node>`), as kube's leader election keeps one.
// Two agents on one node (a second DaemonSet, one run by hand) would
// otherwise overwrite each other's condition and taint without a word.
//
// The holder renews the lease every third of its duration and deletes it
// when it stops. Another agent takes it when there is none, when it has no
// holder, or when its record has not changed for the whole duration as
// this agent saw it: time on this agent's own clock, so clocks that differ
// between machines do not matter (client-go's rule). An agent that
// restarts under the same identity (its pod's name) takes its lease back
// at once.

#include <chrono>
#include <string>

#include "common/result.h"
#include "kube/client.h"

namespace tau::agent {

struct NodeLeaseOptions {
  std::string name_space;
  std::string node;
  // Who this agent is: its pod's name, or host and pid.
  std::string identity;
  std::chrono::seconds duration{30};
};

class NodeLease {
 public:
  using Steady = std::chrono::steady_clock;
  NodeLease(kube::KubeClient* api, NodeLeaseOptions options);

  // One look at the lease at `now` (this agent's steady clock), taking or
  // renewing it where the rules above allow. True: this agent holds it
  // now. An error: the API server could not be asked (the caller keeps
  // what it had until the lease would have run out).
  Result<bool> Step(Steady::time_point now);

  // Gives the lease up (deletes it), when this agent holds it, so that a
  // successor need not wait for it to run out.
  Status Release();

  // When this agent last saw another agent's record of the lease change
  // (a renewal, a take) or the lease it held go (given up): that agent was
  // alive then. The epoch when it never did.
  Steady::time_point others_renewal_seen() const { return others_renewal_seen_; }
  // The lease's holder as last read ("" when none).
  const std::string& holder() const { return holder_; }
  std::string lease_name() const { return "taugrid-agent-" + options_.node; }
  std::chrono::seconds duration() const { return options_.duration; }

 private:
  kube::ResourceRef Ref() const;

  kube::KubeClient* api_;
  const NodeLeaseOptions options_;
  std::string observed_record_;
  Steady::time_point observed_at_{};
  Steady::time_point others_renewal_seen_{};
  std::string holder_;
  std::string written_version_;  // the resourceVersion of the lease as this agent last wrote it
  bool held_ = false;
};

// RFC 3339 with microseconds, as a Lease's MicroTime fields take it.
std::string MicroTimeNow();

}  // namespace tau::agent
