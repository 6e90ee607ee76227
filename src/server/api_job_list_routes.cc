// GET /api/v1/jobs: the job list, newest first, one page at a time
// (docs/api.md#list-jobs). Jobs the loop holds come from the published
// view; ended ones from the database.

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "server/api_http.h"
#include "server/job_history.h"
#include "server/job_json.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace tau::server {
namespace {

constexpr int kDefaultLimit = 100;
constexpr int kMaxLimit = 1000;

Status BadParameter(const std::string& name, const std::string& why) {
  return InvalidArgumentError(fmt::format("parameter {}: {}", name, why));
}

// The query of a list request; InvalidArgument names the first bad
// parameter.
Result<JobListQuery> ParseListQuery(const httplib::Request& req) {
  static const std::set<std::string> kKnown = {"state", "workspace", "name", "project", "tag", "limit", "continue"};
  for (const auto& [key, value] : req.params) {
    if (!kKnown.count(key)) {
      return BadParameter(key, "unknown; the job list takes state, workspace, name, project, tag, limit and continue");
    }
    if (key != "tag" && req.get_param_value_count(key) > 1) return BadParameter(key, "given more than once");
  }
  JobListQuery q;
  if (req.has_param("state")) {
    std::string state = req.get_param_value("state");
    auto parsed = store::ParseJobState(state);
    if (!parsed) {
      return BadParameter("state", fmt::format("\"{}\" is not a job state (Queued, Admitted, Running, Retrying, "
                                               "Succeeded, Failed, Cancelled)", state));
    }
    q.filter.state = *parsed;
  }
  for (const char* key : {"workspace", "name", "project"}) {
    if (req.has_param(key) && req.get_param_value(key).empty()) return BadParameter(key, "is empty");
  }
  q.filter.workspace = req.get_param_value("workspace");
  q.filter.name = req.get_param_value("name");
  q.filter.project = req.get_param_value("project");
  for (size_t i = 0; i < req.get_param_value_count("tag"); ++i) {
    std::string t = req.get_param_value("tag", i);
    auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) return BadParameter("tag", fmt::format("\"{}\" is not KEY=VALUE", t));
    q.filter.tags.emplace_back(t.substr(0, eq), t.substr(eq + 1));
  }
  q.limit = kDefaultLimit;
  if (req.has_param("limit")) {
    std::string text = req.get_param_value("limit");
    int limit = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || limit < 1 || limit > kMaxLimit) {
      return BadParameter("limit", fmt::format("\"{}\" is not a whole number from 1 to {}", text, kMaxLimit));
    }
    q.limit = limit;
  }
  if (req.has_param("continue")) {
    q.continue_token = req.get_param_value("continue");
    if (auto parsed = ParseContinueToken(q.continue_token); !parsed.ok()) {
      return BadParameter("continue", parsed.status().message());
    }
  }
  return q;
}

}  // namespace

void AddJobListRoutes(httplib::Server& server, const ApiContext& ctx) {
  server.Get("/api/v1/jobs", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto query = ParseListQuery(req);
    if (!query.ok()) return SendError(res, query.status());
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
