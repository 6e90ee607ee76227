#include "server/api_http.h"

#include <httplib.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tau::server {
using nlohmann::json;

namespace {
thread_local bool end_connection = false;
}  // namespace

void EndConnectionAfterAnswer(httplib::Response& res) {
  res.set_header("Connection", "close");
  end_connection = true;
}
bool ConnectionEndRequested() { return end_connection; }
void ResetConnectionEnd() { end_connection = false; }

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kFailedPrecondition: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kAborted: return 409;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

std::string DumpJson(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

void SendError(httplib::Response& res, const Status& st) { SendError(res, st, json::object()); }

void SendError(httplib::Response& res, const Status& st, const json& details, int http_status) {
  res.status = http_status != 0 ? http_status : HttpStatusFor(st.code());
  json body = {{"code", StatusCodeName(st.code())}, {"message", st.message()}};
  if (details.is_object() && !details.empty()) body["details"] = details;
  res.set_content(DumpJson(body), "application/json");
}

bool IsDiskFull(const Status& st) {
  if (st.code() != StatusCode::kResourceExhausted) return false;
  const std::string& m = st.message();
  return m.find(std::strerror(ENOSPC)) != std::string::npos || m.find(std::strerror(EDQUOT)) != std::string::npos ||
         m.find("disk is full") != std::string::npos;
}

void SendSubmitError(httplib::Response& res, const Status& st) {
  SendError(res, st, json::object(), IsDiskFull(st) ? 507 : 0);
}

void SendJson(httplib::Response& res, const json& body, int status) {
  res.status = status;
  res.set_content(DumpJson(body), "application/json");
}

}  // namespace tau::server
