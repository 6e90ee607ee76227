#pragma once

// Shared by the api_*.cc files, the only ones that include cpp-httplib
// (declared here, not included, to keep this header light).

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/tau_home.h"
#include "common/status.h"
#include "server/control_loop.h"
#include "server/job_manager.h"
#include "server/state_view.h"

namespace httplib {
struct Request;
struct Response;
class Server;
}  // namespace httplib

namespace tau::server {

int HttpStatusFor(StatusCode code);
// {"code": "NotFound", "message": "..."} with the matching HTTP status.
void SendError(httplib::Response& res, const Status& st);
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

// /api/v1/gpus and /api/v1/admin/gpus/UUID/clear|drain|undrain (api_gpu_routes.cc).
void AddGpuRoutes(httplib::Server& server, const ApiContext& ctx);

}  // namespace tau::server
