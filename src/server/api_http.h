#pragma once

// Shared by the api_*.cc files, the only ones that include cpp-httplib
// (declared here, not included, to keep this header light).

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/tau_home.h"
#include "common/status.h"
#include "server/control_loop.h"
#include "server/job_manager.h"
#include "server/kubernetes/pod_logs.h"
#include "server/state_view.h"

namespace httplib {
struct Request;
struct Response;
class Server;
}  // namespace httplib

namespace tau::server {

int HttpStatusFor(StatusCode code);
// The JSON text of `value`; never throws (bytes that are not UTF-8 become
// U+FFFD).
std::string DumpJson(const nlohmann::json& value);
// {"code": "NotFound", "message": "...", "details": {...}} with the HTTP
// status that matches the code, or `http_status` when it is not 0.
// `details` (an object) is left out when empty.
void SendError(httplib::Response& res, const Status& st);
void SendError(httplib::Response& res, const Status& st, const nlohmann::json& details, int http_status = 0);
// Whether `st` is a full disk: ENOSPC or EDQUOT from a file write, SQLite's
// SQLITE_FULL, or a submit refused in the DiskFull condition (all
// ResourceExhausted). A submit refused so is answered 507.
bool IsDiskFull(const Status& st);
// SendError, with 507 Insufficient Storage when IsDiskFull(st).
void SendSubmitError(httplib::Response& res, const Status& st);
void SendJson(httplib::Response& res, const nlohmann::json& body, int status = 200);

// What route handlers reach: the home, the loop (for changes) and the
// published view (for reads).
struct ApiContext {
  TauHome home;
  ControlLoop* loop;
  JobManager* jobs;
  StatePublisher* publisher;
};

// /api/v1/jobs/ID/evidence, /evidence/export and /outputs (api_evidence_routes.cc).
void AddEvidenceRoutes(httplib::Server& server, const ApiContext& ctx);
// The portal (api_portal_routes.cc, docs/portal.md): `/`, its static files
// under /portal/, and /login?token=… which exchanges the API token for an
// HttpOnly, SameSite=Strict session cookie.
void AddPortalRoutes(httplib::Server& server, const std::string& token);
// The session cookie's value for a token, and the value of the tau_session
// cookie in a Cookie header ("" when absent).
std::string PortalSession(const std::string& token);
std::string SessionCookieOf(const std::string& cookie_header);

// Makes the answer being written its connection's last: it says
// Connection: close, and the connection is closed once the answer is out.
void EndConnectionAfterAnswer(httplib::Response& res);
// Whether the request this thread serves asked for that; reset before each
// request (by the API's connection loop).
bool ConnectionEndRequested();
void ResetConnectionEnd();

// A decimal count from a query parameter or header: digits only.
std::optional<int64_t> ParseCount(const std::string& text);

// The open log and event streams that follow (follow=true): each holds
// a connection and a thread until it ends.
struct StreamGate {
  std::atomic<int64_t> open{0};
  int64_t max = 0;
  // Set when the server stops: every stream ends at its next check.
  std::atomic<bool> stopping{false};
  // A slot for one more stream, released with the pointer; nullptr when
  // `max` are open.
  std::shared_ptr<void> Acquire();
};

// Answers a followed stream past the gate's cap: 429 with the API's JSON
// error and Retry-After (streams end when their clients leave).
void RefuseStream(httplib::Response& res, const StreamGate& gate);

// The query of GET /api/v1/jobs/ID/logs (docs/api.md): which attempt(s),
// which ranks, follow, tail, positions and from.
struct LogQuery {
  std::string id;
  int64_t attempt = 0;  // the (first) attempt streamed
  bool all_attempts = false;
  bool follow = false;
  bool positions = false;
  std::vector<int> ranks;
  bool prefix = false;           // lines prefixed "[rank R] " (several ranks)
  int64_t tail = -1;             // -1: the whole log
  std::vector<int64_t> offsets;  // from=: one byte offset per rank; empty: absent
};
// Reads the query for `job`; false after answering the request with the
// error (400 naming the parameter, 404 for a rank or attempt it lacks).
bool ParseLogQuery(const JobView& job, const httplib::Request& req, httplib::Response& res, LogQuery* q);
// Whether `attempt` of `job` can write no more: the job ended, moved on to
// a later attempt, or waits in the queue for its next one.
bool AttemptOver(const JobView& job, int64_t attempt);

// GET /api/v1/jobs/ID/logs and the event streams (api_stream_routes.cc).
void ServeLogs(const ApiContext& ctx, StreamGate* gate, const httplib::Request& req, httplib::Response& res);
// `route_job`: the job of /api/v1/jobs/ID/events (resolved); absent for
// /api/v1/events, whose `job=` parameter names one (404 when unknown).
// Unknown parameters are refused (400, naming them).
void ServeEvents(const ApiContext& ctx, StreamGate* gate, const httplib::Request& req, httplib::Response& res,
                 std::optional<std::string> route_job);

// PUT /api/v1/blobs/sha256:HEX (api_blob_routes.cc): the bytes must have
// that digest; written to a temporary file and renamed into TAU_HOME's
// blobs, 507 on a full disk as a refused submit.
void ServeBlobUpload(const TauHome& home, const httplib::Request& req, httplib::Response& res);

// The Kueue configuration of embedded mode (api_kueue_routes.cc):
// POST /api/v1/admin/apply (the body at most 4 MiB, checked by the caller),
// GET /api/v1/admin/objects?kind=K&name=N, DELETE
// /api/v1/admin/objects/KIND/NAME?namespace=W and GET /api/v1/queues.
void ServeKueueApply(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
void ServeKueueObjects(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
void ServeKueueDelete(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
void ServeQueues(const ApiContext& ctx, httplib::Response& res);

// With a cluster (api_cluster_routes.cc, docs/kubernetes.md): the Kueue
// objects, queues and logs come from its API server instead of the store,
// the embedded engine and the log files.
struct ClusterContext {
  kube::KubeClient* client = nullptr;
  kubernetes::RankPodLookup rank_pod;
};
// POST /api/v1/admin/apply: validated as embedded mode does, then applied
// with server-side apply; a failure lists what was applied and what not.
void ServeClusterApply(const ClusterContext& cluster, const httplib::Request& req, httplib::Response& res);
// GET /api/v1/admin/objects?kind=K&name=N: the objects with their status.
void ServeClusterObjects(const ClusterContext& cluster, const httplib::Request& req, httplib::Response& res);
// DELETE /api/v1/admin/objects/KIND/NAME?namespace=W
void ServeClusterDelete(const ClusterContext& cluster, const httplib::Request& req, httplib::Response& res);
// GET /api/v1/queues from Kueue's status.
void ServeClusterQueues(const ClusterContext& cluster, httplib::Response& res);
// GET /api/v1/jobs/ID/logs from the pods' logs (same query, same response).
void ServeClusterLogs(const ApiContext& ctx, const ClusterContext& cluster, StreamGate* gate,
                      const httplib::Request& req, httplib::Response& res);

// GET /api/v1/jobs, paged (api_job_list_routes.cc).
void AddJobListRoutes(httplib::Server& server, const ApiContext& ctx);

// /api/v1/gpus and /api/v1/admin/gpus/UUID/clear|drain|undrain (api_gpu_routes.cc).
// `cluster_nodes`: on a cluster, what GET /api/v1/gpus answers (the nodes
// and their agents' GPU health) instead of this machine's GPUs.
void AddGpuRoutes(httplib::Server& server, const ApiContext& ctx, std::function<std::string()> cluster_nodes);

}  // namespace tau::server
