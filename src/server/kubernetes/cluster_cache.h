#pragma once

// What the Kubernetes backend follows of the cluster: one kube::Reflector
// per kind, each on a thread of its own, every change posted onto the
// control loop (the domain code stays single-threaded):
//   Jobs, RayJobs and Pods labelled app.kubernetes.io/managed-by=taugrid,
//   Kueue's Workloads, LocalQueues, ClusterQueues and
//   WorkloadPriorityClasses (all of them), and Nodes when asked.
// The reflectors relist and back off on their own, so the cache survives
// an API server restart.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/reflector.h"

namespace tau::server::kubernetes {

class ClusterCache {
 public:
  using Handler = std::function<void(kube::ReflectorEventType, const nlohmann::json&)>;
  struct Handlers {
    Handler jobs, rayjobs, pods, workloads, local_queues, cluster_queues, priority_classes;
    // Nodes (all of them), followed when set: GPU health from node agents.
    Handler nodes;
  };

  // `client` must outlive this; `post` runs a task on the control loop.
  ClusterCache(kube::KubeClient* client, std::function<void(std::function<void()>)> post, Handlers handlers);
  ~ClusterCache();
  ClusterCache(const ClusterCache&) = delete;
  ClusterCache& operator=(const ClusterCache&) = delete;

  // Starts the reflectors' threads.
  void Start();
  // Waits until every reflector has listed its collection once (their
  // events posted before), or `timeout`: then Unavailable naming the kinds
  // not listed yet.
  Status WaitSynced(std::chrono::milliseconds timeout);
  // Stops the reflectors and joins their threads (within about a second).
  void Stop();

 private:
  struct Source {
    std::string kind;
    std::unique_ptr<kube::ClientListerWatcher> lister;
    std::unique_ptr<kube::Reflector> reflector;
    std::atomic<bool> synced{false};
    std::thread thread;
  };
  kube::KubeClient* client_;
  std::function<void(std::function<void()>)> post_;
  std::vector<std::unique_ptr<Source>> sources_;
};

}  // namespace tau::server::kubernetes
