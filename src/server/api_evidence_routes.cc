// Evidence and outputs over HTTP: the capsule, a portable bundle of it, and
// the files a job wrote to TAU_OUTPUT_DIR.

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>

#include "common/beneath.h"
#include "common/log.h"
#include "common/names.h"
#include "evidence/file_list.h"
#include "evidence/tar_stream.h"
#include "server/api_body.h"
#include "server/api_http.h"
#include "server/evidence_capsule.h"
#include "server/evidence_off_loop.h"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include "server/job_json.h"
#include "server/submit_off_loop.h"

namespace tau::server {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::shared_ptr<const JobView> FindJob(const ApiContext& ctx, const std::string& id, httplib::Response& res) {
  auto job = ctx.publisher->Current()->Resolve(id);
  if (!job) SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", id)));
  return job;
}

constexpr size_t kFileChunk = size_t{1} << 20;

// The job's outputs folder, opened beneath TAU_HOME without following links.
Result<UniqueFd> OpenOutputs(const ApiContext& ctx, const std::string& id) {
  return OpenPathBeneath(ctx.home.root(), ctx.home.output_dir(id), BeneathKind::kDirectory);
}

// One file of the evidence bundle: `bytes`, or the job's file at `path`
// (opened only when its turn comes, so a job with many attempts and ranks
// holds one descriptor at a time).
struct BundlePart {
  std::string name;
  std::string bytes;
  fs::path path;
};

// The bundle's files, in order: capsule.json, checkpoints.json (the
// index; checkpoints themselves by reference), the log of every attempt
// and rank, metrics.jsonl.
std::vector<BundlePart> BundleParts(const ApiContext& ctx, const JobView& job, const std::string& capsule) {
  const std::string& id = job.job.id;
  std::vector<BundlePart> parts;
  parts.push_back({id + "/capsule.json", capsule, {}});
  json index = json::array();
  json capsule_json = json::parse(capsule, nullptr, false);
  if (capsule_json.is_object() && capsule_json.contains("checkpoints")) index = capsule_json["checkpoints"];
  parts.push_back({id + "/checkpoints.json",
                   json{{"checkpoint_dir", ctx.home.checkpoint_dir(id).string()}, {"checkpoints", index}}.dump(2), {}});
  for (const auto& a : job.attempts) {
    for (int64_t r = 0; r < job.ranks; ++r) {
      parts.push_back({fmt::format("{}/logs/attempt-{}-rank-{}.log", id, a.number, r), "",
                       ctx.home.log_file(id, a.number, static_cast<int>(r))});
    }
  }
  parts.push_back({id + "/metrics.jsonl", "", ctx.home.metrics_file(id)});
  return parts;
}

// Adds one part to the bundle. A job's file is opened beneath TAU_HOME
// without following links and sent up to its size when opened (a log
// grows while the job runs); missing, it is left out; refused (a link, a
// fifo), it is left out and logged.
Status AddPart(const fs::path& root, const std::string& job_id, const BundlePart& part, evidence::TarZstStream& stream) {
  if (part.path.empty()) return stream.AddBytes(part.name, part.bytes);
  auto fd = OpenPathBeneath(root, part.path);
  struct stat st;
  if (fd.ok() && ::fstat(fd->get(), &st) == 0) return stream.AddFile(part.name, fd->get(), static_cast<int64_t>(st.st_size));
  if (!fd.ok() && fd.error().code() == StatusCode::kNotFound) return Status::Ok();
  log::Warn("api", "a file is left out of the evidence bundle",
            {{"job", job_id}, {"file", part.path.string()}, {"error", fd.ok() ? "fstat failed" : fd.error().ToString()}});
  return Status::Ok();
}

// Calls `line` for each line of the file open at `fd`, read in chunks.
// Lines longer than 1 MiB are skipped, so memory stays bounded.
void ForEachLine(int fd, const std::function<void(std::string_view)>& line) {
  constexpr size_t kMaxLine = size_t{1} << 20;
  std::string buf(64 * 1024, '\0');
  std::string partial;
  bool skipping = false;  // inside a line over kMaxLine
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf.data(), static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      if (!skipping) line(std::string_view(partial).substr(start, nl - start));
      skipping = false;
      start = nl + 1;
    }
    partial.erase(0, start);
    if (partial.size() > kMaxLine) {
      partial.clear();
      skipping = true;
    }
  }
  if (!partial.empty() && !skipping) line(partial);
}

}  // namespace

void AddEvidenceRoutes(httplib::Server& server, const ApiContext& ctx) {
  server.Get(R"(/api/v1/jobs/([^/]+)/evidence)", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    auto text = EvidenceOffLoop(*ctx.loop, *ctx.jobs, id);
    if (!text.ok()) return SendError(res, text.error());
    res.status = 200;
    res.set_content(RedactCapsule(*text), "application/json");
  });

  server.Post(R"(/api/v1/jobs/([^/]+)/reproduce)", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    auto parsed = ParseJsonObjectBody(req.body.empty() ? "{}" : req.body);
    if (!parsed.ok()) return SendError(res, parsed.error());
    json body = std::move(*parsed);
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
    auto request = ctx.loop->Call([&] { return ctx.jobs->ReproduceRequest(id, overrides, command, request_id); });
    if (!request.ok()) return SendError(res, request.error());
    auto job = SubmitOffLoop(*ctx.loop, *ctx.jobs, *request, ctx.publisher->Current()->history.get());
    if (!job.ok()) return SendSubmitError(res, job.error());
    SendJson(res, JobToJson(**job), 201);
  });

  server.Get(R"(/api/v1/jobs/([^/]+)/evidence/export)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    auto capsule = EvidenceOffLoop(*ctx.loop, *ctx.jobs, job->job.id);
    if (!capsule.ok()) return SendError(res, capsule.error());
    // Streamed as it is packed: a few MiB of memory whatever the size of
    // the logs. A failure after the first byte can only cut the stream
    // short, which the client sees as a lost connection.
    auto parts = std::make_shared<std::vector<BundlePart>>(BundleParts(ctx, *job, RedactCapsule(*capsule)));
    res.status = 200;
    res.set_header("Content-Disposition", fmt::format("attachment; filename=\"{}-evidence.tar.zst\"", job->job.id));
    res.set_chunked_content_provider("application/zstd", [parts, id = job->job.id,
                                                          root = ctx.home.root()](size_t, httplib::DataSink& sink) {
      auto stream = evidence::TarZstStream::Create(
          [&sink](std::string_view data) { return sink.write(data.data(), data.size()); });
      Status st = stream.status();
      for (size_t i = 0; st.ok() && i < parts->size(); ++i) st = AddPart(root, id, (*parts)[i], **stream);
      if (st.ok()) st = (*stream)->Finish();
      if (!st.ok()) {
        if (st.code() != StatusCode::kAborted || sink.is_writable()) {
          log::Warn("api", "the evidence bundle was cut short", {{"job", id}, {"error", st.ToString()}});
        }
        return false;
      }
      sink.done();
      return true;
    });
  });

  // The series of TAU_METRICS_FILE (its last 5,000 JSON lines), for charts.
  server.Get(R"(/api/v1/jobs/([^/]+)/metrics)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    std::deque<json> points;
    auto fd = OpenPathBeneath(ctx.home.root(), ctx.home.metrics_file(job->job.id));
    if (fd.ok()) {
      ForEachLine(fd->get(), [&](std::string_view line) {
        json j = json::parse(line, nullptr, false);
        if (!j.is_object()) return;
        points.push_back(std::move(j));
        if (points.size() > 5000) points.pop_front();
      });
    } else if (fd.error().code() != StatusCode::kNotFound) {
      return SendError(res, fd.error().WithContext(fmt::format("job {}'s metrics file", job->job.id)));
    }
    json list = json::array();
    for (auto& p : points) list.push_back(std::move(p));
    SendJson(res, {{"job", job->job.id}, {"points", list}});
  });

  server.Get(R"(/api/v1/jobs/([^/]+)/outputs)", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    fs::path root = ctx.home.output_dir(job->job.id);
    json list = json::array();
    auto dir = OpenOutputs(ctx, job->job.id);
    if (!dir.ok() && dir.error().code() != StatusCode::kNotFound) {
      return SendError(res, dir.error().WithContext(fmt::format("job {}'s outputs", job->job.id)));
    }
    if (dir.ok()) {
      auto files = evidence::ListFileDigestsAt(dir->get());
      if (!files.ok()) return SendError(res, files.error().WithContext(fmt::format("job {}'s outputs", job->job.id)));
      for (const auto& f : *files) list.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
    }
    SendJson(res, {{"job", job->job.id}, {"output_dir", root.string()}, {"files", list}});
  });

  server.Get(R"(/api/v1/jobs/([^/]+)/outputs/([\s\S]+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    auto job = FindJob(ctx, req.matches[1], res);
    if (!job) return;
    const std::string rel = req.matches[2];
    // Every component is opened beneath TAU_HOME without following links:
    // a job's `ln -s /etc outputs/etc` serves nothing.
    auto dir = OpenOutputs(ctx, job->job.id);
    Result<UniqueFd> fd = dir.ok() ? OpenBeneathAt(dir->get(), rel) : Result<UniqueFd>(dir.error());
    if (!fd.ok()) {
      switch (fd.error().code()) {
        case StatusCode::kNotFound:
          return SendError(res, NotFoundError(fmt::format("job {} has no output file \"{}\"", job->job.id, rel)));
        case StatusCode::kInvalidArgument:
          return SendError(res, InvalidArgumentError(fmt::format("\"{}\" is not a path inside the job's outputs: {}", rel,
                                                                 fd.error().message())));
        default:
          return SendError(res, fd.error().WithContext(fmt::format("job {}'s output", job->job.id)));
      }
    }
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return SendError(res, ErrnoError(errno, fmt::format("output \"{}\"", rel)));
    // Sent in chunks of at most 1 MiB straight from the file. A file that
    // shrinks meanwhile cuts the response short (the client sees it).
    auto file = std::make_shared<UniqueFd>(std::move(*fd));
    // No status set: httplib answers 200, or 206 for a Range request.
    res.set_content_provider(static_cast<size_t>(st.st_size), "application/octet-stream",
                             [file](size_t offset, size_t length, httplib::DataSink& sink) {
                               std::string buf(std::min(length, kFileChunk), '\0');
                               ssize_t n;
                               do {
                                 n = ::pread(file->get(), buf.data(), buf.size(), static_cast<off_t>(offset));
                               } while (n < 0 && errno == EINTR);
                               if (n <= 0) return false;
                               return sink.write(buf.data(), static_cast<size_t>(n));
                             });
  });
}

}  // namespace tau::server
