// The HTTP API. cpp-httplib is included only by the api_*.cc files.

#include "server/api_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/beneath.h"
#include "common/names.h"
#include "common/duration.h"
#include "common/log.h"
#include "evidence/snapshot.h"
#include "render/kueue_config.h"
#include "server/api_http.h"
#include "server/job_json.h"
#include "store/job_store.h"

namespace tau::server {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kMaxJsonBody = 1 << 20;
constexpr size_t kMaxBlobBody = (size_t{100} << 20) + (1 << 20);
constexpr char kVersion[] = "0.1.0";

// When the request this thread serves arrived (httplib serves a request
// on one thread from routing to logging).
thread_local std::chrono::steady_clock::time_point request_started;
thread_local std::optional<log::TraceScope> request_trace;

// The route of a path, for metrics: ids, names, digests and UUIDs become
// placeholders so the label has few values.
std::string RouteOf(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() >= 4 && parts[0] == "api" && parts[1] == "v1") {
    if (parts[2] == "jobs") parts[3] = "{job}";
    else if (parts[2] == "blobs") parts[3] = "{digest}";
    else if (parts[2] == "admin" && parts.size() >= 5 && parts[3] == "gpus") parts[4] = "{uuid}";
    else if (parts[2] == "admin" && parts.size() >= 6 && parts[3] == "objects") {
      parts[4] = "{kind}";
      parts[5] = "{name}";
    }
    if (parts[2] == "jobs" && parts.size() > 5 && parts[4] == "outputs") {
      parts.resize(5);
      parts.push_back("{path}");  // one label for every output file
    }
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// Reads up to `max` bytes from `offset` of a file under `root`, opened
// beneath it without following links (a job may replace its log by a
// link to a secret: that reads as empty).
std::string ReadChunk(const fs::path& root, const fs::path& path, int64_t offset, size_t max) {
  auto fd = OpenPathBeneath(root, path);
  if (!fd.ok()) return "";
  std::string buf(max, '\0');
  ssize_t n = ::pread(fd->get(), buf.data(), max, offset);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buf;
}

// Offset where the last `lines` lines of the file start.
int64_t TailOffset(const fs::path& root, const fs::path& path, int64_t lines) {
  auto fd = OpenPathBeneath(root, path);
  struct stat st;
  if (!fd.ok() || ::fstat(fd->get(), &st) != 0) return 0;
  int64_t size = static_cast<int64_t>(st.st_size);
  if (lines <= 0) return size;
  int64_t pos = size;
  int64_t newlines = 0;
  // A trailing newline ends the last line; it does not start a new one.
  bool skip_last = true;
  while (pos > 0) {
    int64_t start = std::max<int64_t>(0, pos - 65536);
    std::string block = ReadChunk(root, path, start, static_cast<size_t>(pos - start));
    for (int64_t i = static_cast<int64_t>(block.size()) - 1; i >= 0; --i) {
      if (block[static_cast<size_t>(i)] != '\n') continue;
      if (skip_last && start + i == size - 1) {
        skip_last = false;
        continue;
      }
      if (++newlines == lines) return start + i + 1;
    }
    pos = start;
  }
  return 0;
}

}  // namespace

class ApiServer::Impl {
 public:
  Impl(TauHome home, ControlLoop* loop, JobManager* jobs, StatePublisher* publisher,
       ApiServerOptions options)
      : home_(std::move(home)), loop_(loop), jobs_(jobs), publisher_(publisher), options_(std::move(options)) {
    const int threads = options_.worker_threads;
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    server_.set_payload_max_length(kMaxBlobBody);
    server_.set_read_timeout(30, 0);
    server_.set_write_timeout(30, 0);
    server_.set_keep_alive_max_count(1000);
    server_.set_tcp_nodelay(true);
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      request_started = std::chrono::steady_clock::now();
      // A trace id per request: in the response header and in every log
      // line written for it, on this thread and on the control loop.
      std::string trace = req.get_header_value("X-Trace-Id");
      if (trace.empty() || trace.size() > 64) trace = log::NewTraceId();
      request_trace.emplace(trace);
      res.set_header("X-Trace-Id", trace);
      // The portal's pages and sign-in are public (they hold no data); the
      // API and /metrics take the token, or the portal's session cookie.
      if (req.path == "/healthz" || req.path == "/" || req.path == "/login" || req.path.rfind("/portal/", 0) == 0) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      std::string auth = req.get_header_value("Authorization");
      const bool cookie_ok = ConstantTimeEquals(SessionCookieOf(req.get_header_value("Cookie")), PortalSession(options_.token));
      if (!cookie_ok && !ConstantTimeEquals(auth, "Bearer " + options_.token)) {
        SendError(res, UnauthenticatedError(
                           "missing or wrong token: send Authorization: Bearer <TAU_HOME/token>"));
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unexpected error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      SendError(res, InternalError(what));
    });
    Routes();
  }

  Result<int> Bind() {
    int port = options_.port == 0 ? server_.bind_to_any_port(options_.bind_address)
                                  : (server_.bind_to_port(options_.bind_address, options_.port) ? options_.port : -1);
    if (port < 0) {
      return UnavailableError(fmt::format("cannot listen on {}:{}", options_.bind_address, options_.port));
    }
    return port;
  }
  void Serve() { server_.listen_after_bind(); }
  void Stop() { server_.stop(); }

 private:
  template <typename T>
  static Result<T> Run(ControlLoop* loop, std::function<Result<T>()> fn) {
    return loop->Call(std::move(fn));
  }

  Result<json> ParseBody(const httplib::Request& req) {
    if (req.body.size() > kMaxJsonBody) {
      return InvalidArgumentError(fmt::format("request body is {} bytes; at most {} are accepted",
                                              req.body.size(), kMaxJsonBody));
    }
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) {
      return InvalidArgumentError("request body is not a JSON object");
    }
    return body;
  }

  void Routes() {
    if (options_.metrics) {
      server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - request_started).count();
        log::Debug("api", "request", {{"method", req.method}, {"path", req.path}, {"status", std::to_string(res.status)},
                                      {"ms", fmt::format("{:.1f}", seconds * 1000)}});
        request_trace.reset();
        options_.metrics->Observe("taugrid_api_request_duration_seconds",
                                  {{"route", RouteOf(req.path)}, {"method", req.method}, {"code", std::to_string(res.status)}},
                                  seconds);
      });
      server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        // Collected and written on the loop, so two scrapes never see each
        // other's half-refreshed gauges.
        std::string text = loop_->Call([&] {
          jobs_->CollectMetrics();
          return options_.metrics->Expose();
        });
        res.status = 200;
        res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
      });
    }
    AddEvidenceRoutes(server_, ApiContext{home_, loop_, jobs_, publisher_});
    AddGpuRoutes(server_, ApiContext{home_, loop_, jobs_, publisher_});
    AddPortalRoutes(server_, options_.token);
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      SendJson(res, {{"status", "ok"}, {"version", kVersion}});
    });

    server_.Get("/api/v1/info", [this](const httplib::Request&, httplib::Response& res) {
      SendJson(res, {{"version", kVersion},
                     {"pid", ::getpid()},
                     {"capacity",
                      {{"cpus", Quantity::FromMilli(options_.capacity.cpus_milli).ToString()},
                       {"memory", Quantity::FromUnits(options_.capacity.memory_bytes, Quantity::Format::kBinary).ToString()},
                       {"gpus", options_.capacity.gpus}}}});
    });

    // Code snapshots are uploaded before the job that uses them.
    server_.Put(R"(/api/v1/blobs/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      std::string digest = req.matches[1];
      if (evidence::BlobDigest(req.body) != digest) {
        SendError(res, InvalidArgumentError("the uploaded bytes do not match the digest in the path"));
        return;
      }
      fs::path path = home_.blob(digest);
      std::error_code ec;
      fs::create_directories(path.parent_path(), ec);
      fs::path tmp = path.string() + fmt::format(".tmp{}", ::gettid());
      {
        std::ofstream out(tmp, std::ios::binary);
        out.write(req.body.data(), static_cast<std::streamsize>(req.body.size()));
        out.flush();
        if (!out) {
          fs::remove(tmp, ec);
          SendError(res, ResourceExhaustedError(fmt::format("cannot store the snapshot in {}: disk full?",
                                                            path.parent_path().string())));
          return;
        }
      }
      fs::rename(tmp, path, ec);
      if (ec) {
        SendError(res, ErrnoError(ec.value(), "store the snapshot"));
        return;
      }
      SendJson(res, {{"digest", digest}, {"size", req.body.size()}}, 201);
    });
    server_.Get(R"(/api/v1/blobs/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      std::error_code ec;
      if (fs::exists(home_.blob(req.matches[1]), ec)) SendJson(res, {{"digest", std::string(req.matches[1])}});
      else SendError(res, NotFoundError("no such snapshot"));
    });

    server_.Post("/api/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      auto body = ParseBody(req);
      if (!body.ok()) return SendError(res, body.error());
      SubmitRequest submit;
      try {
        submit.spec_json = body->at("spec").dump();
        submit.snapshot_digest = body->at("snapshot").get<std::string>();
        submit.submit_command = body->value("submit_command", "");
        if (body->contains("evidence") && (*body)["evidence"].is_object()) {
          submit.client_evidence_json = (*body)["evidence"].dump();
        }
        submit.reproduces = body->value("reproduces", "");
        if (body->contains("request_id")) {
          if (!body->at("request_id").is_string()) {
            return SendError(res, InvalidArgumentError("\"request_id\" is a string"));
          }
          submit.request_id = body->at("request_id").get<std::string>();
          if (Status st = CheckRequestId(submit.request_id); !st.ok()) return SendError(res, st);
        }
        if (body->contains("secret_env")) {
          for (auto it = (*body)["secret_env"].begin(); it != (*body)["secret_env"].end(); ++it) {
            submit.secret_env.emplace_back(it.key(), it.value().get<std::string>());
          }
        }
      } catch (const json::exception&) {
        return SendError(res, InvalidArgumentError("expected {\"spec\": {...}, \"snapshot\": \"sha256:...\"}"));
      }
      auto result = loop_->Call([&] { return jobs_->Submit(submit); });
      if (!result.ok()) return SendError(res, result.error());
      json reply = JobToJson(**result);
      const json& spec = (*body)["spec"];
      json warnings = json::array();
      if (spec.contains("runtime") && spec["runtime"].contains("image")) {
        warnings.push_back(fmt::format(
            "runtime.image \"{}\" is recorded but not used: the local executor runs jobs in this "
            "machine's own environment",
            spec["runtime"]["image"].get<std::string>()));
      }
      if (!warnings.empty()) reply["warnings"] = std::move(warnings);
      SendJson(res, reply, 201);
    });

    server_.Get("/api/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      auto view = publisher_->Current();
      std::string state = req.get_param_value("state");
      std::string workspace = req.get_param_value("workspace");
      std::string name = req.get_param_value("name");
      std::string project = req.get_param_value("project");
      // tag=k=v, repeatable: every one must match.
      std::vector<std::pair<std::string, std::string>> tag_filters;
      for (size_t i = 0; i < req.get_param_value_count("tag"); ++i) {
        std::string t = req.get_param_value("tag", i);
        auto eq = t.find('=');
        if (eq == std::string::npos) return SendError(res, InvalidArgumentError(fmt::format("tag \"{}\" is not KEY=VALUE", t)));
        tag_filters.emplace_back(t.substr(0, eq), t.substr(eq + 1));
      }
      int64_t limit = 0;
      if (req.has_param("limit")) limit = std::atoll(req.get_param_value("limit").c_str());
      json jobs = json::array();
      for (auto it = view->jobs.rbegin(); it != view->jobs.rend(); ++it) {
        const JobView& j = **it;
        if (!state.empty() && store::JobStateName(j.job.state) != state) continue;
        if (!workspace.empty() && j.job.workspace != workspace) continue;
        if (!name.empty() && j.job.name != name) continue;
        if (!project.empty() && j.project != project) continue;
        bool tags_match = true;
        for (const auto& [k, v] : tag_filters) {
          bool found = false;
          for (const auto& [tk, tv] : j.tags) found = found || (tk == k && tv == v);
          tags_match = tags_match && found;
        }
        if (!tags_match) continue;
        jobs.push_back(JobToJson(j));
        if (limit > 0 && static_cast<int64_t>(jobs.size()) >= limit) break;
      }
      SendJson(res, {{"jobs", jobs}});
    });

    server_.Get(R"(/api/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = publisher_->Current()->Resolve(req.matches[1]);
      if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
      SendJson(res, JobToJson(*job));
    });

    server_.Post(R"(/api/v1/jobs/([^/]+)/resume)", [this](const httplib::Request& req, httplib::Response& res) {
      std::string id = req.matches[1];
      auto body = ParseBody(req);
      if (!body.ok()) return SendError(res, body.error());
      std::string from = body->value("from", "");
      auto result = loop_->Call([&] { return jobs_->Resume(id, from); });
      if (!result.ok()) return SendError(res, result.error());
      SendJson(res, JobToJson(**result));
    });

    server_.Get(R"(/api/v1/jobs/([^/]+)/checkpoints)", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = publisher_->Current()->Resolve(req.matches[1]);
      if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
      json full = JobToJson(*job);
      SendJson(res, {{"job", full["id"]}, {"checkpoint_dir", full["checkpoint_dir"]},
                     {"keep", full["checkpoint_keep"]}, {"checkpoints", full["checkpoints"]}});
    });

    server_.Post(R"(/api/v1/jobs/([^/]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
      std::string id = req.matches[1];
      auto result = loop_->Call([&] { return jobs_->Cancel(id); });
      if (!result.ok()) return SendError(res, result.error());
      SendJson(res, JobToJson(**result));
    });

    server_.Delete(R"(/api/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::string id = req.matches[1];
      Status st = loop_->Call([&] { return jobs_->Remove(id); });
      if (!st.ok()) return SendError(res, st);
      res.status = 204;
    });

    server_.Post("/api/v1/prune", [this](const httplib::Request& req, httplib::Response& res) {
      auto body = ParseBody(req);
      if (!body.ok()) return SendError(res, body.error());
      auto age = ParseDuration(body->value("older_than", ""));
      if (!age.ok()) return SendError(res, age.error());
      auto removed = loop_->Call([&] { return jobs_->Prune(*age); });
      if (!removed.ok()) return SendError(res, removed.error());
      SendJson(res, {{"removed", *removed}});
    });

    // Kueue configuration.
    server_.Post("/api/v1/admin/apply", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.body.size() > (size_t{4} << 20)) return SendError(res, InvalidArgumentError("manifests larger than 4 MiB"));
      json body = json::parse(req.body, nullptr, false);
      if (!body.is_object() || !body.contains("manifests") || !body["manifests"].is_string()) {
        return SendError(res, InvalidArgumentError("expected {\"manifests\": \"<YAML>\", \"file\": \"name\"}"));
      }
      std::string text = body["manifests"].get<std::string>();
      std::string file = body.value("file", "manifests");
      // Decode here first so errors name the user's file and positions.
      render::DecodedKueueConfig decoded;
      spec::Diagnostics diags;
      bool ok = render::DecodeKueueManifests(text, file, &decoded, &diags);
      json warnings = json::array();
      for (const auto& d : diags.Sorted()) {
        if (d.severity == spec::Severity::kWarning) warnings.push_back(spec::FormatDiagnostic(d));
      }
      if (!ok) return SendError(res, InvalidArgumentError(diags.Format()));
      auto changes = loop_->Call([&] { return jobs_->ApplyKueue(text, {}); });
      if (!changes.ok()) return SendError(res, changes.error());
      SendJson(res, {{"changes", *changes}, {"warnings", warnings}});
    });
    server_.Get("/api/v1/admin/objects", [this](const httplib::Request& req, httplib::Response& res) {
      auto objects = loop_->Call([&] { return jobs_->KueueObjects(); });
      std::string kind = req.get_param_value("kind"), name = req.get_param_value("name");
      json out = json::array();
      for (const auto& o : objects) {
        if (!kind.empty() && o.kind != kind) continue;
        if (!name.empty() && o.name != name) continue;
        out.push_back(json::parse(o.json));
      }
      SendJson(res, {{"objects", out}});
    });
    server_.Delete(R"(/api/v1/admin/objects/([^/]+)/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      KueueObjectKey key{req.matches[1], req.get_param_value("namespace"), req.matches[2]};
      auto changes = loop_->Call([&] { return jobs_->ApplyKueue("", {key}); });
      if (!changes.ok()) return SendError(res, changes.error());
      SendJson(res, {{"changes", *changes}});
    });
    server_.Post(R"(/api/v1/jobs/([^/]+)/priority)", [this](const httplib::Request& req, httplib::Response& res) {
      auto body = ParseBody(req);
      if (!body.ok()) return SendError(res, body.error());
      std::string id = req.matches[1];
      std::string cls = body->value("priority_class", "");
      if (cls.empty()) return SendError(res, InvalidArgumentError("expected {\"priority_class\": \"NAME\"}"));
      auto job = loop_->Call([&] { return jobs_->SetPriority(id, cls); });
      if (!job.ok()) return SendError(res, job.error());
      SendJson(res, JobToJson(**job));
    });
    server_.Get(R"(/api/v1/jobs/([^/]+)/why)", [this](const httplib::Request& req, httplib::Response& res) {
      std::string id = req.matches[1];
      auto text = loop_->Call([&] { return jobs_->WhyJson(id); });
      if (!text.ok()) return SendError(res, text.error());
      res.status = 200;
      res.set_content(*text, "application/json");
    });
    server_.Get("/api/v1/queues", [this](const httplib::Request&, httplib::Response& res) {
      std::string text = loop_->Call([&] { return jobs_->QueuesJson(); });
      res.status = 200;
      res.set_content(text, "application/json");
    });
    for (const char* action : {"hold", "release"}) {
      const bool hold = std::string(action) == "hold";
      server_.Post(std::string(R"(/api/v1/jobs/([^/]+)/)") + action,
                   [this, hold](const httplib::Request& req, httplib::Response& res) {
                     std::string id = req.matches[1];
                     auto job = loop_->Call([&] { return jobs_->SetHeld(id, hold); });
                     if (!job.ok()) return SendError(res, job.error());
                     SendJson(res, JobToJson(**job));
                   });
    }

    server_.Get(R"(/api/v1/jobs/([^/]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) { Logs(req, res); });
    server_.Get("/api/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
      Events(req, res, req.get_param_value("job"));
    });
    server_.Get(R"(/api/v1/jobs/([^/]+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = publisher_->Current()->Resolve(req.matches[1]);
      if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
      Events(req, res, job->job.id);
    });
  }

  // Streams a job's log. attempt: a number, "last" (default) or "all"
  // (every attempt in turn, following new ones). rank: a number (default
  // 0) or "all" (every rank, each line prefixed "[rank R] " when the job has
  // several). With follow=true the stream ends only when the job has ended
  // and every log is drained.
  void Logs(const httplib::Request& req, httplib::Response& res) {
    auto job = publisher_->Current()->Resolve(req.matches[1]);
    if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
    struct Cursor {
      std::string id;
      int64_t attempt = 0;
      bool all_attempts = false;
      bool follow = false;
      std::vector<int> ranks;
      bool prefix = false;
      std::vector<int64_t> offsets;  // per rank; empty: not positioned yet
      std::vector<std::string> partial;  // per rank, when prefixing
      int64_t tail = -1;
    };
    auto cur = std::make_shared<Cursor>();
    cur->id = job->job.id;
    cur->follow = req.get_param_value("follow") == "true";
    std::string rank = req.get_param_value("rank");
    if (rank == "all") {
      for (int r = 0; r < job->ranks; ++r) cur->ranks.push_back(r);
      cur->prefix = job->ranks > 1;
    } else {
      int r = std::atoi(rank.c_str());
      if (r < 0 || r >= job->ranks) {
        return SendError(res, NotFoundError(fmt::format("job {} has no rank {} (it has {})", cur->id, rank, job->ranks)));
      }
      cur->ranks.push_back(r);
    }
    if (req.has_param("tail")) cur->tail = std::atoll(req.get_param_value("tail").c_str());
    std::string attempt = req.get_param_value("attempt");
    if (attempt == "all") {
      cur->all_attempts = true;
      cur->attempt = 1;
    } else if (attempt.empty() || attempt == "last") {
      cur->attempt = std::max<int64_t>(1, job->job.attempt);
    } else {
      cur->attempt = std::atoll(attempt.c_str());
      if (cur->attempt < 1 || cur->attempt > std::max<int64_t>(1, job->job.attempt)) {
        return SendError(res, NotFoundError(fmt::format("job {} has no attempt {}", cur->id, attempt)));
      }
    }
    // A followed stream is sent as application/octet-stream (UTF-8 text all
    // the same): httplib compresses text/* for browsers, and its compressor
    // holds data back until the end, so lines would not arrive as written.
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_chunked_content_provider(cur->follow ? "application/octet-stream" : "text/plain; charset=utf-8",
                                     [this, cur](size_t, httplib::DataSink& sink) {
      while (true) {
        if (!sink.is_writable()) return false;
        // Read the state before the files: if the attempt had ended then,
        // everything it wrote is in them now, so EOF means drained.
        auto view = publisher_->Current();
        auto job = view->Resolve(cur->id);
        if (!job) {
          sink.done();
          return true;
        }
        bool attempt_over = store::IsTerminal(job->job.state) || cur->attempt < job->job.attempt ||
                            job->job.state == store::JobState::kQueued ||
                            job->job.state == store::JobState::kRetrying;
        bool exists = cur->attempt <= job->job.attempt;
        std::string out;
        if (exists) {
          if (cur->offsets.empty()) {
            for (int r : cur->ranks) {
              fs::path path = home_.log_file(cur->id, cur->attempt, r);
              cur->offsets.push_back(cur->tail >= 0 ? TailOffset(home_.root(), path, cur->tail) : 0);
              cur->partial.emplace_back();
            }
          }
          for (size_t i = 0; i < cur->ranks.size(); ++i) {
            std::string chunk = ReadChunk(home_.root(), home_.log_file(cur->id, cur->attempt, cur->ranks[i]), cur->offsets[i], 64 * 1024);
            cur->offsets[i] += static_cast<int64_t>(chunk.size());
            if (!cur->prefix) {
              out += chunk;
              continue;
            }
            cur->partial[i] += chunk;
            size_t start = 0, nl;
            while ((nl = cur->partial[i].find('\n', start)) != std::string::npos) {
              out += fmt::format("[rank {}] ", cur->ranks[i]);
              out.append(cur->partial[i], start, nl - start + 1);
              start = nl + 1;
            }
            cur->partial[i].erase(0, start);
          }
        }
        if (!out.empty()) return sink.write(out.data(), out.size());
        if (exists && attempt_over) {
          // Drained: a last line without a newline still shows.
          for (size_t i = 0; i < cur->partial.size(); ++i) {
            if (!cur->partial[i].empty()) out += fmt::format("[rank {}] {}\n", cur->ranks[i], cur->partial[i]);
          }
          bool more = cur->all_attempts && cur->attempt < job->job.attempt;
          bool may_come = cur->all_attempts && cur->follow && !store::IsTerminal(job->job.state);
          if (more) {
            ++cur->attempt;
            cur->offsets.clear();
            cur->partial.clear();
            cur->tail = -1;
          }
          if (!out.empty() && !sink.write(out.data(), out.size())) return false;
          if (more) continue;
          if (!may_come) {
            sink.done();
            return true;
          }
        }
        if (!cur->follow && exists) {
          sink.done();
          return true;
        }
        publisher_->WaitNewer(view->version, std::chrono::milliseconds(100));
      }
    });
  }

  // Events as JSON lines, oldest first; follow=true keeps the stream open
  // (for one job: until it has ended and its events are all sent).
  void Events(const httplib::Request& req, httplib::Response& res, std::string job_id) {
    auto store = store::JobStore::Open(home_.database().string());
    if (!store.ok()) return SendError(res, store.error());
    struct Cursor {
      std::shared_ptr<store::JobStore> store;
      std::string job_id;
      int64_t after = 0;
      bool follow = false;
    };
    auto cur = std::make_shared<Cursor>();
    cur->store = std::shared_ptr<store::JobStore>(std::move(*store));
    cur->job_id = std::move(job_id);
    cur->after = std::atoll(req.get_param_value("after").c_str());
    cur->follow = req.get_param_value("follow") == "true";
    res.set_chunked_content_provider("application/x-ndjson", [this, cur](size_t, httplib::DataSink& sink) {
      while (true) {
        if (!sink.is_writable()) return false;
        auto view = publisher_->Current();
        auto events = cur->store->LoadEvents(cur->job_id, cur->after, 500);
        if (!events.ok()) {
          sink.done();
          return true;
        }
        if (!events->empty()) {
          std::string out;
          for (const auto& e : *events) {
            out += EventToJson(e).dump();
            out += '\n';
            cur->after = e.id;
          }
          return sink.write(out.data(), out.size());
        }
        bool ended = false;
        if (!cur->job_id.empty()) {
          auto job = view->Resolve(cur->job_id);
          ended = !job || store::IsTerminal(job->job.state);
        }
        // The view was read before the events: a job that had ended then has
        // every event of its in the batch just read.
        if (!cur->follow || ended) {
          sink.done();
          return true;
        }
        publisher_->WaitNewer(view->version, std::chrono::milliseconds(500));
      }
    });
  }

  TauHome home_;
  ControlLoop* loop_;
  JobManager* jobs_;
  StatePublisher* publisher_;
  ApiServerOptions options_;
  httplib::Server server_;
};

ApiServer::ApiServer(TauHome home, ControlLoop* loop, JobManager* jobs, StatePublisher* publisher,
                     ApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(home), loop, jobs, publisher, std::move(options))) {}
ApiServer::~ApiServer() = default;
Result<int> ApiServer::Bind() { return impl_->Bind(); }
void ApiServer::Serve() { impl_->Serve(); }
void ApiServer::Stop() { impl_->Stop(); }

}  // namespace tau::server
