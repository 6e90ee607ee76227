// The routes that read and write a cluster's API server when taugridd runs
// with one (docs/kubernetes.md): Kueue objects, queues and pod logs.

#include <fmt/format.h>
#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/api_body.h"
#include "server/api_http.h"
#include "server/kubernetes/kueue_objects.h"
#include "server/kubernetes/pod_logs.h"

namespace tau::server {
using nlohmann::json;

namespace {

// The pod's container that runs a rank's process.
constexpr std::string_view kRankContainer = "main";

Result<std::vector<kubernetes::ManifestFile>> ManifestFiles(const json& body) {
  std::vector<kubernetes::ManifestFile> files;
  const char* expected =
      "expected {\"manifests\": \"<YAML>\", \"file\": \"name\"} or {\"files\": [{\"manifests\": \"<YAML>\", \"file\": "
      "\"name\"}, ...]}, with \"force_conflicts\": true|false";
  if (!body.is_object()) return InvalidArgumentError(expected);
  auto one = [&](const json& f) -> Status {
    if (!f.is_object() || !f.contains("manifests") || !f["manifests"].is_string()) return InvalidArgumentError(expected);
    const json& name = f.value("file", json("manifests"));
    files.push_back({name.is_string() ? name.get<std::string>() : "manifests", f["manifests"].get<std::string>()});
    return Status::Ok();
  };
  if (body.contains("files")) {
    if (!body["files"].is_array() || body["files"].empty()) return InvalidArgumentError(expected);
    for (const json& f : body["files"]) TAU_RETURN_IF_ERROR(one(f));
  } else {
    TAU_RETURN_IF_ERROR(one(body));
  }
  if (body.contains("force_conflicts") && !body["force_conflicts"].is_boolean()) return InvalidArgumentError(expected);
  return files;
}

// One log request's streams: a streamer per rank, each on its own thread,
// handing lines to the HTTP thread that writes them.
class ClusterLogStream {
 public:
  ClusterLogStream(ApiContext ctx, ClusterContext cluster, LogQuery query)
      : ctx_(std::move(ctx)), cluster_(std::move(cluster)), q_(std::move(query)) {}
  ~ClusterLogStream() { StopAll(); }

  std::shared_ptr<void> slot;  // held while a followed stream is open

  // The content provider: writes what the ranks produced, moves on to the
  // next attempt (attempt=all), ends when there is no more.
  bool Pump(StreamGate* gate, httplib::DataSink& sink) {
    while (true) {
      if (gate->stopping || !sink.is_writable()) return false;
      if (attempt_done_) {
        // The attempt's logs are all out: the next attempt (attempt=all),
        // once there is one, or the end.
        auto job = ctx_.publisher->Current()->Resolve(q_.id);
        if (job && q_.all_attempts && q_.attempt < job->job.attempt) {
          ++q_.attempt;
          q_.tail = -1;
          q_.offsets.clear();
          attempt_done_ = false;
          continue;
        }
        if (job && q_.all_attempts && q_.follow && !store::IsTerminal(job->job.state)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          continue;
        }
        sink.done();
        return true;
      }
      if (threads_.empty()) Start();
      std::string out;
      bool drained;
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return !pending_.empty() || running_ == 0; });
        while (!pending_.empty()) {
          auto [i, text] = std::move(pending_.front());
          pending_.pop_front();
          offsets_[i] += static_cast<int64_t>(text.size());
          if (q_.prefix) {
            out += fmt::format("[rank {}] ", q_.ranks[i]);
            out += text;
            if (text.empty() || text.back() != '\n') out += '\n';
          } else {
            out += text;
          }
        }
        drained = running_ == 0;
      }
      if (!out.empty()) return Send(sink, out);
      if (!drained) {
        ForceEndAfterAttempt();
        continue;
      }
      StopAll();
      attempt_done_ = true;
      if (!errors_.empty()) {
        // Headers are long gone: the stream says what went wrong, last.
        std::string text;
        for (const std::string& e : errors_) text += e + "\n";
        errors_.clear();
        if (!Send(sink, text)) return false;
      }
    }
  }

 private:
  bool Send(httplib::DataSink& sink, const std::string& text) {
    if (!q_.positions) return sink.write(text.data(), text.size());
    std::string frame = fmt::format("{} {}:", text.size(), q_.attempt);
    for (size_t i = 0; i < offsets_.size(); ++i) frame += fmt::format("{}{}", i ? "," : "", offsets_[i]);
    frame += '\n';
    frame += text;
    return sink.write(frame.data(), frame.size());
  }

  // A streamer per rank of the attempt q_.attempt.
  void Start() {
    offsets_.assign(q_.ranks.size(), 0);
    if (q_.offsets.size() == q_.ranks.size()) offsets_ = q_.offsets;
    over_since_.reset();
    running_ = static_cast<int>(q_.ranks.size());
    for (size_t i = 0; i < q_.ranks.size(); ++i) {
      kubernetes::PodLogOptions options;
      options.container = std::string(kRankContainer);
      options.follow = q_.follow;
      // `from` says where to resume; tail is then ignored (as in embedded mode).
      if (q_.tail >= 0 && q_.offsets.empty()) options.tail_lines = q_.tail;
      options.skip_bytes = offsets_[i];
      const int64_t attempt = q_.attempt;
      StatePublisher* publisher = ctx_.publisher;
      const std::string id = q_.id;
      // Wait for the pod while the attempt may still run.
      options.keep_waiting = [publisher, id, attempt] {
        auto job = publisher->Current()->Resolve(id);
        return job && !(attempt <= job->job.attempt && AttemptOver(*job, attempt));
      };
      const int rank = q_.ranks[i];
      kubernetes::RankPodLookup lookup = cluster_.rank_pod;
      streamers_.push_back(std::make_unique<kubernetes::PodLogStreamer>(
          kubernetes::StreamOf(*cluster_.client), [lookup, id, attempt, rank] { return lookup(id, attempt, rank); },
          options));
    }
    for (size_t i = 0; i < streamers_.size(); ++i) {
      threads_.emplace_back([this, i] {
        Result<kubernetes::LogEnd> end = streamers_[i]->Run([this, i](std::string_view text) {
          std::lock_guard lock(mu_);
          pending_.emplace_back(i, std::string(text));
          cv_.notify_all();
          return true;
        });
        std::lock_guard lock(mu_);
        if (!end.ok()) {
          errors_.push_back(fmt::format("taugridd: cannot read the log of rank {} of attempt {}: {}", q_.ranks[i],
                                        q_.attempt, end.error().message()));
        }
        --running_;
        cv_.notify_all();
      });
    }
  }

  // A container that ended closes its followed log; a stream that stays
  // open 10 s after the attempt is over is ended here.
  void ForceEndAfterAttempt() {
    if (!q_.follow) return;
    auto job = ctx_.publisher->Current()->Resolve(q_.id);
    if (job && !(q_.attempt <= job->job.attempt && AttemptOver(*job, q_.attempt))) return;
    auto now = std::chrono::steady_clock::now();
    if (!over_since_) over_since_ = now;
    if (now - *over_since_ < std::chrono::seconds(10)) return;
    for (auto& s : streamers_) s->Stop();
  }

  void StopAll() {
    for (auto& s : streamers_) s->Stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
    streamers_.clear();
  }

  ApiContext ctx_;
  ClusterContext cluster_;
  LogQuery q_;
  std::vector<std::unique_ptr<kubernetes::PodLogStreamer>> streamers_;
  std::vector<std::thread> threads_;
  std::vector<int64_t> offsets_;  // per rank: bytes of its log streamed (from= included)
  std::optional<std::chrono::steady_clock::time_point> over_since_;
  bool attempt_done_ = false;  // every rank of q_.attempt has ended and was written
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<size_t, std::string>> pending_;  // rank index, text
  int running_ = 0;
  std::vector<std::string> errors_;
};

}  // namespace

void ServeClusterApply(const ClusterContext& cluster, const httplib::Request& req, httplib::Response& res) {
  auto parsed = ParseJsonObjectBody(req.body);
  if (!parsed.ok()) return SendError(res, parsed.error());
  const json body = std::move(*parsed);
  auto files = ManifestFiles(body);
  if (!files.ok()) return SendError(res, files.error());
  auto decoded = kubernetes::DecodeForCluster(*files);
  if (!decoded.ok()) return SendError(res, decoded.error());
  auto api = kubernetes::KueueClusterOf(*cluster.client);
  kubernetes::ApplyReport report =
      kubernetes::ApplyKueueObjects(*api, decoded->objects, body.value("force_conflicts", false));
  if (!report.ok()) {
    StatusCode code = report.precondition.code();
    json not_applied = json::array();
    for (const auto& o : report.objects) {
      if (o.state == kubernetes::ApplyState::kFailed) code = o.error.code();
      if (o.state == kubernetes::ApplyState::kFailed || o.state == kubernetes::ApplyState::kNotApplied) {
        not_applied.push_back(o.label);
      }
    }
    return SendError(res, Status(code, report.FailureMessage()),
                     {{"changes", report.Changes()}, {"not_applied", not_applied}});
  }
  SendJson(res, {{"changes", report.Changes()}, {"warnings", decoded->warnings}});
}

void ServeClusterObjects(const ClusterContext& cluster, const httplib::Request& req, httplib::Response& res) {
  auto api = kubernetes::KueueClusterOf(*cluster.client);
  auto objects = kubernetes::GetKueueObjects(*api, req.get_param_value("kind"), req.get_param_value("name"));
  if (!objects.ok()) return SendError(res, objects.error());
  SendJson(res, {{"objects", *objects}});
}

void ServeClusterDelete(const ClusterContext& cluster, const httplib::Request& req, httplib::Response& res) {
  auto api = kubernetes::KueueClusterOf(*cluster.client);
  auto change = kubernetes::DeleteKueueObject(*api, req.matches[1], req.get_param_value("namespace"), req.matches[2]);
  if (!change.ok()) return SendError(res, change.error());
  SendJson(res, {{"changes", json::array({*change})}});
}

void ServeClusterQueues(const ClusterContext& cluster, httplib::Response& res) {
  auto api = kubernetes::KueueClusterOf(*cluster.client);
  auto queues = kubernetes::QueuesJsonFromCluster(*api);
  if (!queues.ok()) return SendError(res, queues.error());
  SendJson(res, *queues);
}

void ServeClusterLogs(const ApiContext& ctx, const ClusterContext& cluster, StreamGate* gate,
                      const httplib::Request& req, httplib::Response& res) {
  auto job = ctx.publisher->Current()->Resolve(req.matches[1]);
  if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
  if (!cluster.rank_pod) {
    return SendError(res, FailedPreconditionError("this taugridd reads logs from a cluster but has no way to find a "
                                                  "job's pods"));
  }
  LogQuery query;
  if (!ParseLogQuery(*job, req, res, &query)) return;
  const bool follow = query.follow, positions = query.positions;
  auto stream = std::make_shared<ClusterLogStream>(ctx, cluster, std::move(query));
  if (follow) {
    stream->slot = gate->Acquire();
    if (!stream->slot) return RefuseStream(res, *gate);
  }
  res.set_header("X-Content-Type-Options", "nosniff");
  const std::string type = positions ? "application/vnd.taugrid.log-frames"
                           : follow  ? "application/octet-stream"
                                     : "text/plain; charset=utf-8";
  res.set_chunked_content_provider(type, [gate, stream](size_t, httplib::DataSink& sink) {
    return stream->Pump(gate, sink);
  });
}

}  // namespace tau::server
