// Evidence and outputs over HTTP: the capsule, a portable bundle of it, and
// the files a job wrote to TAU_OUTPUT_DIR.

#include <fmt/format.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "common/names.h"
#include "evidence/file_list.h"
#include "evidence/snapshot.h"
#include "server/api_http.h"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include "server/job_json.h"

namespace tau::server {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::shared_ptr<const JobView> FindJob(const ApiContext& ctx, const std::string& id, httplib::Response& res) {
  auto job = ctx.publisher->Current()->Resolve(id);
  if (!job) SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", id)));
  return job;
}

// A relative path inside the outputs folder: no "..", not absolute.
Result<fs::path> OutputPath(const fs::path& root, const std::string& relative) {
  fs::path rel = fs::path(relative).lexically_normal();
  if (relative.empty() || rel.is_absolute() || rel.empty() || *rel.begin() == "..") {
    return InvalidArgumentError(fmt::format("\"{}\" is not a path inside the job's outputs", relative));
  }
  return root / rel;
}

// Stages the bundle's files in `dir`: capsule.json, the logs of every
// attempt and rank, the metrics file and the checkpoint index (checkpoints
// themselves by reference).
Status StageBundle(const ApiContext& ctx, const JobView& job, const std::string& capsule, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir / "logs", ec);
  if (ec) return ErrnoError(ec.value(), "creating the bundle's folder");
  std::ofstream(dir / "capsule.json") << capsule;
  for (const auto& a : job.attempts) {
    for (int64_t r = 0; r < job.ranks; ++r) {
      fs::path log = ctx.home.log_file(job.job.id, a.number, static_cast<int>(r));
      if (!fs::exists(log, ec)) continue;
      fs::path to = dir / "logs" / fmt::format("attempt-{}-rank-{}.log", a.number, r);
      fs::create_hard_link(log, to, ec);
      if (ec) fs::copy_file(log, to, ec);
      if (ec) return ErrnoError(ec.value(), fmt::format("copying {}", log.string()));
    }
  }
  fs::path metrics = ctx.home.metrics_file(job.job.id);
  if (fs::exists(metrics, ec)) fs::copy_file(metrics, dir / "metrics.jsonl", ec);
  json index = json::array();
  json capsule_json = json::parse(capsule, nullptr, false);
  if (capsule_json.is_object() && capsule_json.contains("checkpoints")) index = capsule_json["checkpoints"];
  std::ofstream(dir / "checkpoints.json") << json{{"checkpoint_dir", ctx.home.checkpoint_dir(job.job.id).string()},
                                                  {"checkpoints", index}}
                                                 .dump(2);
  return Status::Ok();
}

}  // namespace

void AddEvidenceRoutes(httplib::Server& server, const ApiContext& ctx) {
  server.Get(R"(/api/v1/jobs/([^/]+)/evidence)", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    auto text = ctx.loop->Call([&] { return ctx.jobs->EvidenceJson(id); });
    if (!text.ok()) return SendError(res, text.error());
    res.status = 200;
    res.set_content(*text, "application/json");
  });

  server.Post(R"(/api/v1/jobs/([^/]+)/reproduce)", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    json body = json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return SendError(res, InvalidArgumentError("request body is not a JSON object"));
    std::vector<std::string> overrides;
    if (body.contains("set")) {
      if (!body["set"].is_array()) return SendError(res, InvalidArgumentError("\"set\" is a list of PATH=VALUE strings"));
      for (const json& s : body["set"]) {
        if (!s.is_string()) return SendError(res, InvalidArgumentError("\"set\" is a list of PATH=VALUE strings"));
        overrides.push_back(s.get<std::string>());
      }
    }
    std::string command = body.value("submit_command", "tau reproduce " + id);
    if (body.contains("request_id") && !body["request_id"].is_string()) {
      return SendError(res, InvalidArgumentError("\"request_id\" is a string"));
    }
    std::string request_id = body.value("request_id", "");
    if (body.contains("request_id")) {
      if (Status st = CheckRequestId(request_id); !st.ok()) return SendError(res, st);
    }
    auto job = ctx.loop->Call([&] { return ctx.jobs->Reproduce(id, overrides, command, request_id); });
    if (!job.ok()) return SendError(res, job.error());
    SendJson(res, JobToJson(**job), 201);
  });

  server.Get(R"(/api/v1/jobs/([^/]+)/evidence/export)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    auto capsule = ctx.loop->Call([&] { return ctx.jobs->EvidenceJson(job->job.id); });
    if (!capsule.ok()) return SendError(res, capsule.error());
    fs::path dir = ctx.home.root() / "tmp" / fmt::format("bundle-{}-{}-{}", job->job.id, ::getpid(), ::gettid());
    std::error_code ec;
    fs::remove_all(dir, ec);
    Status st = StageBundle(ctx, *job, *capsule, dir / job->job.id);
    Result<evidence::Snapshot> bundle = st.ok() ? evidence::PackSnapshot(dir, {.exclude = {}, .max_bytes = int64_t{4} << 30})
                                                : Result<evidence::Snapshot>(st);
    fs::remove_all(dir, ec);
    if (!bundle.ok()) return SendError(res, bundle.status().WithContext("packing the evidence bundle"));
    res.status = 200;
    res.set_header("Content-Disposition", fmt::format("attachment; filename=\"{}-evidence.tar.zst\"", job->job.id));
    res.set_content(std::move(bundle->blob), "application/zstd");
  });

  // The series of TAU_METRICS_FILE (its last 5,000 JSON lines), for charts.
  server.Get(R"(/api/v1/jobs/([^/]+)/metrics)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    std::ifstream in(ctx.home.metrics_file(job->job.id));
    std::deque<json> points;
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_object()) continue;
      points.push_back(std::move(j));
      if (points.size() > 5000) points.pop_front();
    }
    json list = json::array();
    for (auto& p : points) list.push_back(std::move(p));
    SendJson(res, {{"job", job->job.id}, {"points", list}});
  });

  server.Get(R"(/api/v1/jobs/([^/]+)/outputs)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    fs::path root = ctx.home.output_dir(job->job.id);
    auto files = evidence::ListFileDigests(root);
    if (!files.ok()) return SendError(res, files.error());
    json list = json::array();
    for (const auto& f : *files) list.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
    SendJson(res, {{"job", job->job.id}, {"output_dir", root.string()}, {"files", list}});
  });

  server.Get(R"(/api/v1/jobs/([^/]+)/outputs/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    auto path = OutputPath(ctx.home.output_dir(job->job.id), req.matches[2]);
    if (!path.ok()) return SendError(res, path.error());
    std::error_code ec;
    if (!fs::is_regular_file(*path, ec) || fs::is_symlink(*path, ec)) {
      return SendError(res, NotFoundError(fmt::format("job {} has no output file \"{}\"", job->job.id,
                                                      std::string(req.matches[2]))));
    }
    std::ifstream in(*path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    res.status = 200;
    res.set_content(std::move(data), "application/octet-stream");
  });
}

}  // namespace tau::server
