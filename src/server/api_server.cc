// The HTTP API. cpp-httplib is included only by the api_*.cc files.

#include "server/api_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/crypto.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <atomic>
#include <limits>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "cli/version.h"
#include "common/names.h"
#include "common/duration.h"
#include "common/log.h"
#include "common/strings.h"
#include "evidence/snapshot.h"
#include "server/api_body.h"
#include "server/api_request_head.h"
#include "server/api_connection.h"
#include "server/api_http.h"
#include "server/api_http_server.h"
#include "server/elastic_pool.h"
#include "server/job_history.h"
#include "spec/json_types.h"
#include "server/job_json.h"
#include "server/submit_off_loop.h"
#include "store/job_store.h"

namespace tau::server {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Longer paths are refused before routing: no route takes one, and the
// route regexes recurse once per byte (see ElasticPoolOptions::stack_bytes).
constexpr size_t kMaxPathBytes = 2048;
// Threads kept for requests beyond the streams' limit.
constexpr int kThreadsBesideStreams = 64;
// The build's version (project() in the top CMakeLists.txt).
using cli::kVersion;
// The metrics label of every request no route handled.
constexpr char kOtherRoute[] = "other";

thread_local std::optional<log::TraceScope> request_trace;
// Set when the request this thread serves was answered without reaching a
// route's handler (refused before routing, or no route matched).
thread_local bool request_unrouted = false;
uint16_t PortOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

// The socket of the connection that carried `req` (httplib does not hand
// it to handlers), or -1.
int SocketOf(const httplib::Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd", ec)) {
    int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        PortOf(local) != req.local_port) {
      continue;
    }
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0 && PortOf(peer) == req.remote_port) {
      return fd;
    }
  }
  return -1;
}

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
  if (parts.size() == 2 && parts[0] == "portal") parts[1] = "{file}";
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// {"condition": "Ok" | "DiskFull", "message": ...}: whether the database
// commits changes.
json StoreJson(const StateView& view) {
  if (view.store_condition.empty()) return {{"condition", "Ok"}};
  return {{"condition", view.store_condition}, {"message", view.store_message}};
}

}  // namespace

class ApiServer::Impl {
 public:
  Impl(TauHome home, ControlLoop* loop, JobManager* jobs, StatePublisher* publisher,
       ApiServerOptions options)
      : home_(std::move(home)), loop_(loop), jobs_(jobs), publisher_(publisher), options_(std::move(options)) {
    ElasticPoolOptions pool;
    pool.min_threads = static_cast<size_t>(std::max(1, options_.min_threads));
    pool.max_threads = static_cast<size_t>(std::max(options_.min_threads, options_.max_threads));
    streams_.max = options_.max_streams > 0 ? options_.max_streams
                                            : std::max(1, options_.max_threads - kThreadsBesideStreams);
    // Each stream holds a socket (and an event stream a database
    // connection): keep clear of the open-file limit.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
      server_.LimitConnections(static_cast<int64_t>(files.rlim_cur));
      streams_.max = std::min<int64_t>(streams_.max, std::max<int64_t>(1, (static_cast<int64_t>(files.rlim_cur) - 256) / 2));
    }
    if (options_.max_connections > 0) server_.SetMaxConnections(options_.max_connections);
    {
      // The 408 the head gate sends itself, as SendError words it.
      const auto ms = options_.request_head_timeout.count();
      const std::string body =
          json{{"code", "DeadlineExceeded"},
               {"message", fmt::format("the request's headers did not all arrive within {} ms of its first byte", ms)},
               {"details", {{"head_timeout_ms", ms}}}}
              .dump();
      server_.SetLateAnswer(fmt::format("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: "
                                        "application/json\r\nContent-Length: {}\r\n\r\n{}",
                                        body.size(), body));
    }
    server_.new_task_queue = [this, pool] { return server_.NewTaskQueue(pool); };
    server_.set_payload_max_length(kMaxBlobBody);
    ConnectionTimeouts timeouts;
    timeouts.head_timeout = options_.request_head_timeout;
    timeouts.body_timeout = options_.request_body_timeout;
    server_.set_connection_timeouts(timeouts);
    server_.set_keep_alive_max_count(1000);
    server_.set_tcp_nodelay(true);
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      MarkRequestStarted();
      request_unrouted = false;
      (void)TakeCloseAfterAnswer();
      // A trace id per request: in the response header and in every log
      // line written for it, on this thread and on the control loop.
      std::string trace = req.get_header_value("X-Trace-Id");
      if (trace.empty() || trace.size() > 64) trace = log::NewTraceId();
      request_trace.emplace(trace);
      res.set_header("X-Trace-Id", trace);
      // A request with neither Content-Length nor Transfer-Encoding has no
      // body (RFC 9112, 6.3); httplib would read one until the client
      // closes, so a bare `curl -X POST` would wait for the read timeout.
      if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
        // httplib hands the request over as const; it is its own object.
        const_cast<httplib::Request&>(req).headers.emplace("Content-Length", "0");
      }
      if (Refuse(req, res)) {
        request_unrouted = true;
        return httplib::Server::HandlerResponse::Handled;
      }
      // The portal's pages and sign-in are public (they hold no data); the
      // API and /metrics take the token, or the portal's session cookie.
      if (req.path == "/healthz" || req.path == "/" || req.path == "/login" || req.path.rfind("/portal/", 0) == 0) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      std::string auth = req.get_header_value("Authorization");
      const bool cookie_ok = ConstantTimeEquals(SessionCookieOf(req.get_header_value("Cookie")), PortalSession(options_.token));
      // The metrics token opens /metrics and nothing else.
      const bool scrape_ok = req.path == "/metrics" && !options_.metrics_token.empty() &&
                             ConstantTimeEquals(auth, "Bearer " + options_.metrics_token);
      if (!cookie_ok && !scrape_ok && !ConstantTimeEquals(auth, "Bearer " + options_.token)) {
        request_unrouted = true;
        if (HasBody(req)) CloseAfterAnswer(res);  // its body is never read
        SendError(res, UnauthenticatedError(req.path == "/metrics"
                                                ? "missing or wrong token: send Authorization: Bearer "
                                                  "<TAU_HOME/metrics-token> (or <TAU_HOME/token>)"
                                                : "missing or wrong token: send Authorization: Bearer <TAU_HOME/token>"));
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      try {
        std::rethrow_exception(ep);
      } catch (const json::exception& e) {
        // Reading a request field of the wrong type.
        SendError(res, InvalidArgumentError(fmt::format("the request body has a field of the wrong type ({})", e.what())));
      } catch (const std::exception& e) {
        SendError(res, InternalError(e.what()));
      } catch (...) {
        SendError(res, InternalError("unexpected error"));
      }
    });
    // Errors httplib answers itself (no route, bad request line, body
    // over the limit...) get the API's JSON error body too.
    server_.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a handler's own error
      request_unrouted = true;
      const std::string path = ShortenUtf8(req.path, 200);
      json details = {{"method", ShortenUtf8(req.method, 16)}, {"path", path}};
      if (CurrentConnection() && CurrentConnection()->head_too_long()) {
        CloseAfterAnswer(res);
        SendError(res,
                  InvalidArgumentError(fmt::format("the request's headers are over {} bytes", ApiConnection::kKeptHead)),
                  {{"max_bytes", ApiConnection::kKeptHead}}, 431);
      } else if (CurrentConnection() && CurrentConnection()->head_timed_out()) {
        EndConnectionAfterAnswer(res);
        const auto ms = options_.request_head_timeout.count();
        SendError(res, DeadlineExceededError(fmt::format("the request's headers did not all arrive within {} ms of its "
                                                         "first byte", ms)),
                  {{"head_timeout_ms", ms}}, 408);
      } else if (CurrentConnection() && CurrentConnection()->body_timed_out()) {
        EndConnectionAfterAnswer(res);
        const auto ms = options_.request_body_timeout.count();
        SendError(res, DeadlineExceededError(fmt::format("the request's body did not all arrive within {} ms of its "
                                                         "headers", ms)),
                  {{"body_timeout_ms", ms}}, 408);
      } else if (res.status == 404) {
        std::string allowed = req.path.size() <= kMaxPathBytes ? server_.MethodsFor(req.path) : "";
        if (!allowed.empty()) {
          res.set_header("Allow", allowed);
          details["allowed"] = allowed;
          SendError(res, InvalidArgumentError(fmt::format("{} is not allowed on {}; it takes {}", req.method, path, allowed)),
                    details, 405);
        } else {
          SendError(res, NotFoundError(fmt::format("no route for {} {}", req.method, path)), details, 404);
        }
      } else if (res.status == 413) {
        SendError(res, InvalidArgumentError("the request body is larger than this route takes"), details, 413);
      } else if (res.status < 500) {
        // httplib could not read the request: where it ends is unknown, so
        // what follows must not be read as further requests.
        CloseAfterAnswer(res);
        SendError(res, InvalidArgumentError(fmt::format("the request is malformed (HTTP {})", res.status)), details,
                  res.status);
      } else {
        SendError(res, InternalError(fmt::format("the request failed (HTTP {})", res.status)), details, res.status);
      }
      return httplib::Server::HandlerResponse::Handled;
    }));
    Routes();
  }

  Result<int> Bind() {
    // httplib sets SO_REUSEPORT, which lets a second daemon listen on a
    // port this one holds and take half its connections (and the tokens
    // they carry). SO_REUSEADDR alone still allows a quick restart past
    // TIME_WAIT, and a port in use is refused.
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    errno = 0;
    int port = options_.port == 0 ? server_.bind_to_any_port(options_.bind_address)
                                  : (server_.bind_to_port(options_.bind_address, options_.port) ? options_.port : -1);
    if (port < 0) {
      const int err = errno;
      return UnavailableError(fmt::format("cannot listen on {}:{}{}", options_.bind_address, options_.port,
                                          err ? std::string(": ") + std::strerror(err) : ""));
    }
    server_.WidenBacklog();
    return port;
  }
  void Serve() { server_.listen_after_bind(); }
  void Stop() {
    streams_.stopping = true;  // streams end at their next check
    server_.StopGate();        // connections waiting for a request close
    server_.stop();
  }

 private:
  ApiContext Context() const { return ApiContext{home_, loop_, jobs_, publisher_}; }
  ClusterContext Cluster() const { return ClusterContext{options_.cluster, options_.rank_pod}; }
  static bool HasBody(const httplib::Request& req) {
    return req.has_header("Transfer-Encoding") || std::atoll(req.get_header_value("Content-Length").c_str()) > 0;
  }

  // Refuses, before its body is read, a request no route could take.
  bool Refuse(const httplib::Request& req, httplib::Response& res) {
    auto refuse = [&](int http_status, const Status& st, json details) {
      if (HasBody(req)) CloseAfterAnswer(res);  // the body stays unread
      SendError(res, st, details, http_status);
      return true;
    };
    // The head as sent, before what httplib made of it is trusted.
    if (ApiConnection* connection = CurrentConnection()) {
      if (connection->head_too_long()) {
        CloseAfterAnswer(res);
        SendError(res,
                  InvalidArgumentError(fmt::format("the request's headers are over {} bytes", ApiConnection::kKeptHead)),
                  {{"max_bytes", ApiConnection::kKeptHead}}, 431);
        return true;
      }
      if (Status st = CheckRequestHead(connection->head()); !st.ok()) {
        CloseAfterAnswer(res);
        SendError(res, st, json::object(), 400);
        return true;
      }
    }
    if (req.path.size() > kMaxPathBytes) {
      return refuse(414, InvalidArgumentError(fmt::format("the request path is {} bytes; at most {} are accepted",
                                                          req.path.size(), kMaxPathBytes)),
                    {{"max_bytes", kMaxPathBytes}});
    }
    // A field name is a token (RFC 9110, 5.1): one with white space or a
    // control character in it ("Transfer-Encoding : chunked", a folded
    // line) is one httplib would take for another header, or none.
    for (const auto& [name, value] : req.headers) {
      const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return c != 0 && (std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
      });
      const bool clean = std::none_of(value.begin(), value.end(), [](unsigned char c) {
        return (c < 0x20 && c != '\t') || c == 0x7F;
      });
      if (!token || !clean) {
        CloseAfterAnswer(res);
        SendError(res,
                  InvalidArgumentError(fmt::format("the header \"{}\" is malformed: {}", ShortenUtf8(name, 64),
                                                   token ? "its value holds a control character"
                                                         : "a header name is letters, digits and !#$%&'*+-.^_`|~ "
                                                           "followed at once by ':'")),
                  json::object(), 400);
        return true;
      }
    }
    // How the body is framed must be clear before any of it is read: a
    // proxy in front may have framed it otherwise (request smuggling), and
    // httplib would take a negative length for a vast one and wait for it.
    const size_t lengths = req.get_header_value_count("Content-Length");
    const size_t codings = req.get_header_value_count("Transfer-Encoding");
    auto refuse_framing = [&](int http_status, const Status& st) {
      CloseAfterAnswer(res);  // where the body ends is unknown
      SendError(res, st, json::object(), http_status);
      return true;
    };
    if (lengths > 0 && codings > 0) {
      return refuse_framing(400, InvalidArgumentError("the request has both Content-Length and Transfer-Encoding; "
                                                      "send one of them"));
    }
    if (lengths > 1) {
      return refuse_framing(400, InvalidArgumentError(fmt::format("the request has {} Content-Length headers; send one",
                                                                  lengths)));
    }
    if (codings > 1) {
      return refuse_framing(400, InvalidArgumentError(fmt::format("the request has {} Transfer-Encoding headers; send "
                                                                  "one (chunked)", codings)));
    }
    if (lengths == 1 && !ParseCount(req.get_header_value("Content-Length"))) {
      return refuse_framing(400, InvalidArgumentError(fmt::format("the Content-Length header \"{}\" is not a byte count",
                                                                  ShortenUtf8(req.get_header_value("Content-Length"), 32))));
    }
    if (codings == 1) {
      std::string coding = req.get_header_value("Transfer-Encoding");
      std::transform(coding.begin(), coding.end(), coding.begin(), [](unsigned char c) { return std::tolower(c); });
      coding.erase(0, coding.find_first_not_of(" \t"));
      coding.erase(coding.find_last_not_of(" \t") + 1);
      if (coding == "chunked") {
        // As httplib reads it (Chunked, a tab before it).
        auto it = const_cast<httplib::Request&>(req).headers.find("Transfer-Encoding");
        it->second = "chunked";
      } else {
        return refuse_framing(501, InvalidArgumentError(fmt::format("the Transfer-Encoding \"{}\" is not supported; "
                                                                  "bodies are sent plain or chunked",
                                                                  ShortenUtf8(req.get_header_value("Transfer-Encoding"), 32))));
      }
    }
    // HTTP/1.1 names its host once (RFC 9112, 3.2).
    if (req.version == "HTTP/1.1" && req.get_header_value_count("Host") != 1) {
      return refuse_framing(400, InvalidArgumentError(fmt::format("an HTTP/1.1 request has one Host header; this "
                                                                  "one has {}",
                                                                  req.get_header_value_count("Host"))));
    }
    // The connection ends after this answer when the request says "close"
    // in any case, among other options, in any Connection header (httplib
    // heeds only an exact "close"), and after every HTTP/1.0 request.
    bool close = req.version == "HTTP/1.0";
    for (size_t i = 0; i < req.get_header_value_count("Connection"); ++i) {
      std::string options = req.get_header_value("Connection", i);
      std::transform(options.begin(), options.end(), options.begin(), [](unsigned char c) { return std::tolower(c); });
      for (size_t at = 0; at <= options.size();) {
        size_t comma = options.find(',', at);
        if (comma == std::string::npos) comma = options.size();
        std::string option = options.substr(at, comma - at);
        option.erase(0, option.find_first_not_of(" \t"));
        option.erase(option.find_last_not_of(" \t") + 1);
        if (option == "close") close = true;
        at = comma + 1;
      }
    }
    if (close) EndConnectionAfterAnswer(res);
    // httplib reads a body only for POST, PUT and DELETE: on any other
    // method the declared body would be read as the next request.
    if (HasBody(req) && req.method != "POST" && req.method != "PUT" && req.method != "DELETE") {
      return refuse_framing(400, InvalidArgumentError(fmt::format("a {} request carries no body; send it without "
                                                                  "Content-Length or Transfer-Encoding",
                                                                  ShortenUtf8(req.method, 16))));
    }
    std::string type = req.get_header_value("Content-Type");
    if (type.rfind("multipart/", 0) == 0) {
      return refuse(415, InvalidArgumentError(fmt::format("request bodies are JSON (application/json), not {}",
                                                          ShortenUtf8(type, 64))),
                    {{"content_type", ShortenUtf8(type, 64)}});
    }
    if (!HasBody(req)) return false;
    const ApiHttpServer::Route* route = server_.Find(req.method, req.path);
    const size_t max = route ? route->max_body : kMaxJsonBody;
    const std::string length = req.get_header_value("Content-Length");
    if (!length.empty()) {
      auto n = ParseCount(length);  // checked above
      if (static_cast<uint64_t>(*n) > max) {
        return refuse(413, InvalidArgumentError(fmt::format("the request body is {} bytes; this route takes at most {}", *n, max)),
                      {{"max_bytes", max}});
      }
    } else if (!route || (route->method != "POST" && route->method != "PUT")) {
      // Only the POST and PUT routes of the table read a chunked body with
      // a limit.
      return refuse(411, InvalidArgumentError("send the request body with a Content-Length"), json::object());
    }
    return false;
  }

  template <typename T>
  static Result<T> Run(ControlLoop* loop, std::function<Result<T>()> fn) {
    return loop->Call(std::move(fn));
  }

  Result<json> ParseBody(const httplib::Request& req) {
    if (req.body.size() > kMaxJsonBody) {
      return InvalidArgumentError(fmt::format("request body is {} bytes; at most {} are accepted",
                                              req.body.size(), kMaxJsonBody));
    }
    return ParseJsonObjectBody(req.body);
  }

  void Routes() {
    // Runs once the answer is written.
    server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - RequestStarted()).count();
      if (TakeCloseAfterAnswer()) LingeringClose(CurrentConnection() ? CurrentConnection()->socket() : SocketOf(req));
      // A refused or failed request is logged at info, so the trace id a
      // client prints with the error finds its line; others at debug.
      const std::string status = std::to_string(res.status);
      const std::string ms = fmt::format("{:.1f}", seconds * 1000);
      if (res.status >= 400) {
        log::Info("api", "request failed",
                  {{"method", req.method}, {"path", ShortenUtf8(req.path, 200)}, {"status", status}, {"ms", ms}});
      } else {
        log::Debug("api", "request", {{"method", req.method}, {"path", req.path}, {"status", status}, {"ms", ms}});
      }
      request_trace.reset();
      // Only routed requests name their route: any other path would add
      // a series.
      const std::string route = request_unrouted ? kOtherRoute : RouteOf(req.path);
      request_unrouted = false;
      if (!options_.metrics) return;
      static const std::set<std::string> kMethods = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
      const std::string method = kMethods.count(req.method) ? req.method : kOtherRoute;
      options_.metrics->Observe("taugrid_api_request_duration_seconds",
                                {{"route", route}, {"method", method}, {"code", std::to_string(res.status)}}, seconds);
    });
    if (options_.metrics) {
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
    AddGpuRoutes(server_, ApiContext{home_, loop_, jobs_, publisher_}, options_.cluster_nodes);
    AddPortalRoutes(server_, options_.token);
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      SendJson(res, {{"status", "ok"}, {"version", kVersion}});
    });

    server_.Get("/api/v1/info", [this](const httplib::Request&, httplib::Response& res) {
      // Jobs by state: what tau top, tau server status and the portal count.
      json counts = json::object();
      auto view = publisher_->Current();
      if (view->history) {
        auto by_state = view->history->CountByState(*view);
        if (!by_state.ok()) return SendError(res, by_state.status());
        for (const auto& [state, n] : *by_state) counts[state] = n;
      }
      SendJson(res, {{"version", kVersion},
                     {"jobs", counts},
                     {"pid", ::getpid()},
                     {"capacity",
                      {{"cpus", Quantity::FromMilli(options_.capacity.cpus_milli).ToString()},
                       {"memory", Quantity::FromUnits(options_.capacity.memory_bytes, Quantity::Format::kBinary).ToString()},
                       {"gpus", options_.capacity.gpus}}},
                     {"store", StoreJson(*view)}});
    });

    // Code snapshots are uploaded before the job that uses them.
    server_.Put(R"(/api/v1/blobs/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      ServeBlobUpload(home_, req, res);
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
      if (!TauHome::IsBlobDigest(submit.snapshot_digest)) {
        return SendError(res, InvalidArgumentError(fmt::format("\"snapshot\" is sha256: and 64 hex digits, not \"{}\"",
                                                               ShortenUtf8(submit.snapshot_digest, 80))));
      }
      // Everything the answer needs is worked out before the job is
      // committed: once it is, the answer is 201.
      const json& spec = (*body)["spec"];
      if (Status typed = spec::CheckSpecJsonTypes(spec); !typed.ok()) return SendError(res, typed);
      json warnings = json::array();
      if (spec.is_object() && spec.contains("runtime") && spec["runtime"].is_object() &&
          spec["runtime"].contains("image")) {
        const json& image = spec["runtime"]["image"];
        warnings.push_back(fmt::format(
            "runtime.image \"{}\" is recorded but not used: the local executor runs jobs in this "
            "machine's own environment",
            image.get<std::string>()));
      }
      auto current = publisher_->Current();
      auto result = SubmitOffLoop(*loop_, *jobs_, submit, current->history.get());
      // A snapshot the server lacks: 412, so the client uploads it and
      // sends the same submit again (one round trip less when it is there).
      if (std::error_code ec; !result.ok() && result.error().code() == StatusCode::kFailedPrecondition &&
                              !fs::exists(home_.blob(submit.snapshot_digest), ec)) {
        return SendError(res, result.error(), {{"missing_snapshot", submit.snapshot_digest}}, 412);
      }
      if (!result.ok()) return SendSubmitError(res, result.error());
      json reply = JobToJson(**result);
      if (!warnings.empty()) reply["warnings"] = std::move(warnings);
      SendJson(res, reply, 201);
    });

    AddJobListRoutes(server_, ApiContext{home_, loop_, jobs_, publisher_});

    server_.Get(R"(/api/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = publisher_->Current()->Resolve(req.matches[1]);
      if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
      json reply = JobToJson(*job);
      // The daemon's own trouble, so that `tau status` shows it.
      if (auto view = publisher_->Current(); !view->store_condition.empty()) reply["store"] = StoreJson(*view);
      SendJson(res, reply);
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
      // older_than: a duration; keep: how many of the most recently ended
      // jobs stay. Either or both.
      std::optional<std::chrono::milliseconds> age;
      std::optional<int64_t> keep;
      if (body->contains("older_than")) {
        const json& v = (*body)["older_than"];
        auto parsed = v.is_string() ? ParseDuration(v.get<std::string>())
                                    : Result<Duration>(InvalidArgumentError("is not a string"));
        if (!parsed.ok()) return SendError(res, InvalidArgumentError("older_than: " + parsed.status().message()));
        age = *parsed;
      }
      if (body->contains("keep")) {
        const json& v = (*body)["keep"];
        if (!v.is_number_integer() || v.get<int64_t>() < 0) {
          return SendError(res, InvalidArgumentError("keep: expected a whole number from 0"));
        }
        keep = v.get<int64_t>();
      }
      if (!age && !keep) return SendError(res, InvalidArgumentError("expected {\"older_than\": \"DURATION\"}, {\"keep\": N} or both"));
      auto removed = loop_->Call([&] { return jobs_->Prune(age, keep); });
      if (!removed.ok()) return SendError(res, removed.error());
      SendJson(res, {{"removed", *removed}});
    });

    // Kueue configuration (api_kueue_routes.cc): from the store here, from
    // the API server with a cluster.
    server_.Post("/api/v1/admin/apply", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.body.size() > (size_t{4} << 20)) return SendError(res, InvalidArgumentError("manifests larger than 4 MiB"));
      if (options_.cluster) return ServeClusterApply(Cluster(), req, res);
      ServeKueueApply(Context(), req, res);
    });
    server_.Get("/api/v1/admin/objects", [this](const httplib::Request& req, httplib::Response& res) {
      if (options_.cluster) return ServeClusterObjects(Cluster(), req, res);
      ServeKueueObjects(Context(), req, res);
    });
    server_.Delete(R"(/api/v1/admin/objects/([^/]+)/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (options_.cluster) return ServeClusterDelete(Cluster(), req, res);
      ServeKueueDelete(Context(), req, res);
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
      if (options_.cluster) return ServeClusterQueues(Cluster(), res);
      ServeQueues(Context(), res);
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

    server_.Get(R"(/api/v1/jobs/([^/]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) {
      if (options_.cluster) return ServeClusterLogs(Context(), Cluster(), &streams_, req, res);
      ServeLogs(Context(), &streams_, req, res);
    });
    server_.Get("/api/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
      ServeEvents(Context(), &streams_, req, res, std::nullopt);
    });
    server_.Get(R"(/api/v1/jobs/([^/]+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
      auto job = publisher_->Current()->Resolve(req.matches[1]);
      if (!job) return SendError(res, NotFoundError(fmt::format("no job with id or name \"{}\"", std::string(req.matches[1]))));
      ServeEvents(Context(), &streams_, req, res, job->job.id);
    });
  }

  TauHome home_;
  ControlLoop* loop_;
  JobManager* jobs_;
  StatePublisher* publisher_;
  ApiServerOptions options_;
  ApiHttpServer server_;
  // Followed streams beyond streams_.max are refused (429), so requests
  // always have threads left.
  StreamGate streams_;
};

ApiServer::ApiServer(TauHome home, ControlLoop* loop, JobManager* jobs, StatePublisher* publisher,
                     ApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(home), loop, jobs, publisher, std::move(options))) {}
ApiServer::~ApiServer() = default;
Result<int> ApiServer::Bind() { return impl_->Bind(); }
void ApiServer::Serve() { impl_->Serve(); }
void ApiServer::Stop() { impl_->Stop(); }

}  // namespace tau::server
