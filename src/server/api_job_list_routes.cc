// GET /api/v1/jobs: the job list, newest first, one page at a time
// (docs/api.md#list-jobs). Jobs the loop holds come from the published
// view; ended ones from the database.

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_http.h"
#include "server/job_history.h"
#include "server/job_json.h"
#include "server/page_build_gate.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace tau::server {
namespace {

constexpr int kDefaultLimit = 100;
constexpr int kMaxLimit = 1000;

Status BadParameter(const std::string& name, const std::string& why) {
  return InvalidArgumentError(fmt::format("parameter {}: {}", name, why));
}

// The pairs of a request's query, in order, each split at its first '='
// and percent-decoded. httplib's own parse keeps only what follows a
// value's last '=', so `tag=team=vision` would read as "vision".
std::vector<std::pair<std::string, std::string>> QueryPairs(const httplib::Request& req) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const auto mark = req.target.find('?');
  if (mark == std::string::npos) return pairs;
  const std::string_view query = std::string_view(req.target).substr(mark + 1);
  size_t at = 0;
  while (at <= query.size()) {
    size_t end = query.find('&', at);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view piece = query.substr(at, end - at);
    if (!piece.empty()) {
      const size_t eq = piece.find('=');
      std::string key(piece.substr(0, eq));
      std::string value(eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1));
      pairs.emplace_back(httplib::detail::decode_url(key, true), httplib::detail::decode_url(value, true));
    }
    at = end + 1;
  }
  return pairs;
}

// The query of a list request; InvalidArgument names the first bad
// parameter.
Result<JobListQuery> ParseListQuery(const httplib::Request& req) {
  static const std::set<std::string> kKnown = {"state", "workspace", "name", "project", "tag", "limit", "continue"};
  std::map<std::string, std::string> single;
  std::vector<std::string> tags;
  for (auto& [key, value] : QueryPairs(req)) {
    if (!kKnown.count(key)) {
      return BadParameter(key, "unknown; the job list takes state, workspace, name, project, tag, limit and continue");
    }
    if (key == "tag") {
      tags.push_back(std::move(value));
    } else if (!single.emplace(key, std::move(value)).second) {
      return BadParameter(key, "given more than once");
    }
  }
  auto param = [&](const char* key) -> const std::string* {
    auto it = single.find(key);
    return it == single.end() ? nullptr : &it->second;
  };
  JobListQuery q;
  if (const std::string* state = param("state")) {
    auto parsed = store::ParseJobState(*state);
    if (!parsed) {
      return BadParameter("state", fmt::format("\"{}\" is not a job state (Queued, Admitted, Running, Retrying, "
                                               "Succeeded, Failed, Cancelled)", *state));
    }
    q.filter.state = *parsed;
  }
  for (const char* key : {"workspace", "name", "project"}) {
    if (const std::string* v = param(key); v && v->empty()) return BadParameter(key, "is empty");
  }
  if (const std::string* v = param("workspace")) q.filter.workspace = *v;
  if (const std::string* v = param("name")) q.filter.name = *v;
  if (const std::string* v = param("project")) q.filter.project = *v;
  for (const std::string& t : tags) {
    auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) return BadParameter("tag", fmt::format("\"{}\" is not KEY=VALUE", t));
    q.filter.tags.emplace_back(t.substr(0, eq), t.substr(eq + 1));
  }
  q.limit = kDefaultLimit;
  if (const std::string* v = param("limit")) {
    const std::string& text = *v;
    int limit = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || limit < 1 || limit > kMaxLimit) {
      return BadParameter("limit", fmt::format("\"{}\" is not a whole number from 1 to {}", text, kMaxLimit));
    }
    q.limit = limit;
  }
  if (const std::string* v = param("continue")) {
    q.continue_token = *v;
    if (auto parsed = ParseContinueToken(q.continue_token); !parsed.ok()) {
      return BadParameter("continue", parsed.status().message());
    }
  }
  return q;
}

}  // namespace

void AddJobListRoutes(httplib::Server& server, const ApiContext& ctx) {
  // One gate for the process: a page of 1,000 jobs takes about 1.7 MB
  // while it is built, so 200 concurrent requests took the daemon near
  // 700 MB, kept after the burst. Measured (docs/performance.md#job-history):
  // the gate with a heap trim when the last build ends brought that to
  // about 95 MB; with malloc's arenas also capped at the daemon's start
  // (daemon_main.cc), about 50 MB.
  static PageBuildGate gate(PageBuildGate::DefaultBound(), TrimHeap);
  server.Get("/api/v1/jobs", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto query = ParseListQuery(req);
    if (!query.ok()) {
      // BadParameter's message begins "parameter NAME: ": the name goes in
      // details.parameter, as for the other routes' query parameters.
      const std::string message = query.status().message();
      if (message.rfind("parameter ", 0) == 0 && message.find(':') != std::string::npos) {
        return SendError(res, query.status(), {{"parameter", message.substr(10, message.find(':') - 10)}});
      }
      return SendError(res, query.status());
    }
    // Held until the body is serialized; what is left is one string.
    PageBuildGate::Slot slot = gate.Enter();
    auto view = ctx.publisher->Current();
    if (!view->history) return SendError(res, UnavailableError("the job history is not open yet"));
    auto page = view->history->List(*query, *view);
    if (!page.ok()) return SendError(res, page.status());
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& j : page->jobs) jobs.push_back(JobToJson(*j));
    nlohmann::json body = {{"jobs", std::move(jobs)}, {"next", page->next.empty() ? nlohmann::json(nullptr) : nlohmann::json(page->next)}};
    SendJson(res, body);
  });
}

}  // namespace tau::server
