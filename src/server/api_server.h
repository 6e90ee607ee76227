#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/tau_home.h"
#include "metrics/registry.h"
#include "sched/resources.h"
#include "server/control_loop.h"
#include "server/job_manager.h"
#include "server/kubernetes/pod_logs.h"
#include "server/state_view.h"

namespace tau::server {

struct ApiServerOptions {
  std::string bind_address = "127.0.0.1";
  int port = 0;  // 0: any free port
  std::string token;
  // Accepted for GET /metrics only (TAU_HOME/metrics-token), so a scrape
  // configuration holds no key to the API; "" : none.
  std::string metrics_token;
  // Every connection has a thread of its own while it is open (a followed
  // log holds one until it ends): at least min_threads are kept, at most
  // max_threads run; past that, connections wait for a free one.
  int min_threads = 8;
  int max_threads = 4096;
  // Followed log and event streams served at once (0: max_threads - 64,
  // and no more than half the open-file limit less 256 allows); more are
  // refused with 429.
  int max_streams = 0;
  // Connections open at once (0: the open-file limit less a quarter of it,
  // at least 1,024, kept for the daemon's own files); one more is closed
  // as soon as it is accepted.
  int64_t max_connections = 0;
  // From a request's first byte to the end of its headers: a client
  // slower than that gets 408 and its connection closed (so clients that
  // trickle headers cannot hold the API's threads).
  std::chrono::milliseconds request_head_timeout{10000};
  // From the end of a request's headers to the end of its body: a slower
  // body gets 408 and its connection closed (so clients that trickle
  // bodies cannot hold the API's threads either).
  std::chrono::milliseconds request_body_timeout{60000};
  sched::Resources capacity;
  // Served at /metrics (with the API token), nullptr: no /metrics.
  metrics::Registry* metrics = nullptr;
  // The cluster's API server when taugridd runs with a Kubernetes backend;
  // nullptr in embedded mode. With it, the Kueue objects (admin
  // apply/get/delete), /api/v1/queues and job logs are the cluster's
  // (docs/kubernetes.md). Not owned; outlives the server.
  kube::KubeClient* cluster = nullptr;
  // With `cluster`: the pod of a job's rank (the backend names them);
  // without it, logs answer FailedPrecondition.
  kubernetes::RankPodLookup rank_pod;
  // With `cluster`: the cluster's nodes and their GPU health as JSON
  // (GET /api/v1/gpus, tau nodes), called on the control loop.
  std::function<std::string()> cluster_nodes;
};

// The HTTP/JSON API under /api/v1 (docs/openapi.yaml) plus /healthz. Reads
// come from the published StateView; changes go through the control loop.
// cpp-httplib is used only inside api_server.cc.
class ApiServer {
 public:
  ApiServer(TauHome home, ControlLoop* loop, JobManager* jobs, StatePublisher* publisher,
            ApiServerOptions options);
  ~ApiServer();

  // Binds the socket; returns the port it listens on.
  Result<int> Bind();
  // Serves requests until Stop (blocks the calling thread).
  void Serve();
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tau::server
