#pragma once

// httplib's server as the API runs it: connections served on an elastic
// pool of threads, waiting for each request head in the head gate
// (api_head_gate.h), capped below the open-file limit; a table of the
// routes (for 405 answers and body limits); and the per-thread state of
// the request being served. Included only by api_*.cc files: it includes
// cpp-httplib.

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "server/api_chunked_body.h"
#include "server/api_connection.h"
#include "server/api_head_gate.h"
#include "server/api_http.h"
#include "server/elastic_pool.h"

namespace tau::server {

// Request bodies at most: JSON, blob uploads, admin apply.
inline constexpr size_t kMaxJsonBody = 1 << 20;
inline constexpr size_t kMaxBlobBody = (size_t{100} << 20) + (1 << 20);
inline constexpr size_t kMaxApplyBody = size_t{5} << 20;

// The largest request body a route takes.
size_t MaxBodyFor(const std::string& method, const std::string& pattern);

// The request this thread serves (httplib serves a request on one thread
// from reading its head to logging it).
ApiConnection* CurrentConnection();
void SetCurrentConnection(ApiConnection* connection);
// When it started (for its duration in the log and the metrics).
void MarkRequestStarted();
std::chrono::steady_clock::time_point RequestStarted();
// Its body is left unread: the connection ends once the answer is out
// (TakeCloseAfterAnswer says so once, and forgets it).
void CloseAfterAnswer(httplib::Response& res);
bool TakeCloseAfterAnswer();

// Ends a connection whose request body was left unread without losing
// the answer already written: sends FIN, reads and drops what the client
// still sends (for at most `wait` and 64 MiB), then makes httplib's next read
// see the end, so that it closes the socket.
void LingeringClose(int fd, std::chrono::milliseconds wait = std::chrono::seconds(2));

// httplib's connection queue, backed by an ElasticPool: every connection
// gets a thread of its own, so long streams never hold up other requests.
// Shutting down stops `before_shutdown` first (the head gate, which
// queues connections here).
class PoolTaskQueue : public httplib::TaskQueue {
 public:
  PoolTaskQueue(ElasticPoolOptions options, std::function<void()> before_shutdown)
      : pool_(options), before_shutdown_(std::move(before_shutdown)) {}
  void enqueue(std::function<void()> fn) override { pool_.Enqueue(std::move(fn)); }
  void shutdown() override {
    if (before_shutdown_) before_shutdown_();
    pool_.Shutdown();
  }

 private:
  ElasticPool pool_;
  std::function<void()> before_shutdown_;
};

// httplib's server, with a table of the routes registered through it
// (for 405 answers and body limits) and bodies of POST and PUT read with
// the route's limit, chunked or not.
class ApiHttpServer : public httplib::Server {
 public:
  struct Route {
    std::string method;
    std::regex pattern;
    size_t max_body = 0;
  };

  httplib::Server& Get(const std::string& pattern, Handler handler) {
    Record("GET", pattern);
    return httplib::Server::Get(pattern, std::move(handler));
  }
  httplib::Server& Delete(const std::string& pattern, Handler handler) {
    Record("DELETE", pattern);
    return httplib::Server::Delete(pattern, std::move(handler));
  }
  httplib::Server& Post(const std::string& pattern, Handler handler) {
    return httplib::Server::Post(pattern, Capped(Record("POST", pattern), std::move(handler)));
  }
  httplib::Server& Put(const std::string& pattern, Handler handler) {
    return httplib::Server::Put(pattern, Capped(Record("PUT", pattern), std::move(handler)));
  }

  void set_connection_timeouts(ConnectionTimeouts timeouts) { timeouts_ = timeouts; }
  // Connections open at once at most: the open-file limit less a reserve
  // for everything else (a quarter of it, at least 1,024).
  void LimitConnections(int64_t open_file_limit) {
    const int64_t reserve = std::max<int64_t>(1024, open_file_limit / 4);
    max_connections_ = std::max<int64_t>(64, open_file_limit - reserve);
  }
  void SetMaxConnections(int64_t n) { max_connections_ = n; }
  // What the gate answers a head past its deadline.
  void SetLateAnswer(std::string answer) { late_answer_ = std::move(answer); }

  // The task queue httplib serves connections on, with the head gate in
  // front of it: connections wait there, without a thread, for each
  // request's head (api_head_gate.h).
  httplib::TaskQueue* NewTaskQueue(ElasticPoolOptions pool) {
    HeadGateOptions options;
    options.head_timeout = timeouts_.head_timeout;
    options.idle_timeout = timeouts_.idle_timeout;
    auto* queue = new PoolTaskQueue(pool, [this] { StopGate(); });
    std::lock_guard lock(gate_mutex_);
    options.closed = [this](int sock) { CloseConnection(sock); };
    options.late_answer = late_answer_;
    gate_ = std::make_unique<HeadGate>(options, [this, queue](int sock, std::string bytes,
                                                              HeadGate::Clock::time_point started, uint64_t left) {
      queue->enqueue([this, sock, bytes = std::move(bytes), started, left]() mutable {
        Serve(sock, std::move(bytes), started, static_cast<size_t>(left));
      });
    });
    return queue;
  }
  // Closes the connections waiting in the gate; idempotent.
  void StopGate() {
    std::lock_guard lock(gate_mutex_);
    if (gate_) gate_->Shutdown();
  }

  // httplib listens with a backlog of 5, so connections that arrive
  // together would wait for SYN retries; listening again widens it.
  void WidenBacklog() { ::listen(svr_sock_, SOMAXCONN); }

  // The route for a method and path, or nullptr.
  const Route* Find(const std::string& method, const std::string& path) const {
    const std::string m = method == "HEAD" ? "GET" : method;
    for (const auto& r : routes_) {
      if (r.method == m && std::regex_match(path, r.pattern)) return &r;
    }
    return nullptr;
  }
  // The methods with a route for `path` ("GET, POST"), "" when none.
  std::string MethodsFor(const std::string& path) const {
    std::vector<std::string> methods;
    for (const auto& r : routes_) {
      if (std::find(methods.begin(), methods.end(), r.method) == methods.end() && std::regex_match(path, r.pattern)) {
        methods.push_back(r.method);
      }
    }
    return Join(methods, ", ");
  }

 private:
  size_t Record(const std::string& method, const std::string& pattern) {
    routes_.push_back({method, std::regex(pattern), MaxBodyFor(method, pattern)});
    return routes_.back().max_body;
  }

  // Reads the body (plain or chunked) into the request, stopping at `max`.
  static HandlerWithContentReader Capped(size_t max, Handler handler) {
    return [max, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& reader) {
      // httplib hands the request over as const; it is its own object,
      // and the body is ours to fill.
      auto& body = const_cast<httplib::Request&>(req).body;
      bool too_large = false;
      bool read = true;
      std::string unread;  // why the body could not be read, when known
      ApiConnection* connection = CurrentConnection();
      if (connection && req.get_header_value("Transfer-Encoding") == "chunked") {
        // Our own reader, strict where httplib's is not (api_chunked_body.h).
        Status st = ReadChunkedBody([connection](char* p, size_t n) { return connection->read(p, n); }, max, &body);
        if (st.code() == StatusCode::kInvalidArgument) {
          CloseAfterAnswer(res);
          return SendError(res, st, nlohmann::json::object(), 400);
        }
        too_large = st.code() == StatusCode::kResourceExhausted;
        read = st.ok();
        if (!read && !too_large) unread = st.message();
      } else {
        read = reader([&](const char* data, size_t n) {
          if (body.size() + n > max) {
            too_large = true;
            return false;
          }
          body.append(data, n);
          return true;
        });
      }
      if (too_large) {
        CloseAfterAnswer(res);
        return SendError(res, InvalidArgumentError(fmt::format("the request body is over {} bytes, the most this route takes", max)),
                         {{"max_bytes", max}}, 413);
      }
      if (!read) {
        CloseAfterAnswer(res);
        if (connection && (connection->body_timed_out() || connection->waited_out())) {
          return SendError(res, DeadlineExceededError("the request's body stopped arriving before its end"),
                           nlohmann::json::object(), 408);
        }
        return SendError(res, InvalidArgumentError(unread.empty() ? "the request body could not be read: the "
                                                                    "connection ended before it did"
                                                                  : "the request body could not be read: " + unread));
      }
      handler(req, res);
    };
  }

  // Serves one connection (httplib's own loop, with ApiConnection's
  // deadlines): requests one after another until the client closes, is
  // silent for the idle timeout, misses a head deadline, has sent the most
  // requests one connection may, or an answer ends the connection. Between
  // requests the connection waits in the head gate, not on a thread.
  bool process_and_close_socket(socket_t sock) override {
    // Past the cap a new connection is closed at once: the daemon's own
    // files (its database, the shims' status and lock files) keep their
    // share of the open-file limit however many clients connect.
    if (open_connections_.fetch_add(1) >= max_connections_) {
      open_connections_.fetch_sub(1);
      ::close(sock);
      return true;
    }
    Serve(sock, {}, {}, keep_alive_max_count_);
    return true;
  }

  // Closes a connection's socket (counted against the cap).
  void CloseConnection(int sock) {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    open_connections_.fetch_sub(1);
  }

  // Serves `sock` from its next request on (`bytes`: what the gate read of
  // it, its first byte at `head_started`), `left` requests at most.
  void Serve(int sock, std::string bytes, HeadGate::Clock::time_point head_started, size_t left) {
    ApiConnection connection(sock, timeouts_);
    SetCurrentConnection(&connection);
    auto stopping = [this] { return svr_sock_ == INVALID_SOCKET; };
    if (!bytes.empty()) connection.Prime(std::move(bytes), head_started);
    bool primed = connection.HasBufferedData();
    for (; left > 0; --left) {
      if (!primed) {
        if (connection.HasBufferedData()) {
          if (!connection.NextRequest(stopping)) break;  // pipelined: it begins at once
        } else {
          const Wait wait = WaitForHead(sock, left, &connection);
          if (wait == Wait::kParked) {
            SetCurrentConnection(nullptr);
            return;  // the gate has it now
          }
          if (wait == Wait::kClosed) break;
          if (wait == Wait::kOnThisThread && !connection.NextRequest(stopping)) break;
        }
      }
      primed = false;
      MarkRequestStarted();  // also for answers httplib makes (400, 408)
      bool closed = false;
      ResetConnectionEnd();
      bool ret = process_request(connection, /*close_connection=*/left == 1, closed, nullptr);
      if (!ret || closed || ConnectionEndRequested() || connection.head_timed_out() || connection.body_timed_out()) {
        break;
      }
    }
    // A client cut off mid-head may still be sending: closing with its
    // bytes unread would reset the connection and could lose the 408.
    // Briefly: a client that trickles its head is not worth a thread.
    if (connection.head_timed_out() || connection.body_timed_out()) LingeringClose(sock, std::chrono::milliseconds(250));
    ResetConnectionEnd();
    SetCurrentConnection(nullptr);
    CloseConnection(sock);
  }

  enum class Wait { kParked, kClosed, kPrimed, kOnThisThread };
  // The next request's head: already here (primed), or the socket goes to
  // the gate to wait for it; on this thread only when the gate refuses.
  // (gate_ is set before httplib accepts the first connection.)
  Wait WaitForHead(int sock, size_t left, ApiConnection* connection) {
    if (!gate_) return Wait::kOnThisThread;
    std::string bytes;
    size_t scanned = 0;
    const auto now = HeadGate::Clock::now();
    switch (gate_->ReadAvailable(sock, &bytes, &scanned)) {
      case HeadGate::Head::kClosed:
        return Wait::kClosed;
      case HeadGate::Head::kWhole:
        connection->Prime(std::move(bytes), now);
        return Wait::kPrimed;
      case HeadGate::Head::kPartial:
        break;
    }
    if (gate_->Park(sock, bytes, now, left)) return Wait::kParked;
    if (!bytes.empty()) {
      connection->Prime(std::move(bytes), now);
      return Wait::kPrimed;
    }
    return Wait::kOnThisThread;
  }

  std::vector<Route> routes_;
  ConnectionTimeouts timeouts_;
  std::string late_answer_;
  std::atomic<int64_t> open_connections_{0};
  int64_t max_connections_ = std::numeric_limits<int64_t>::max();
  std::mutex gate_mutex_;  // guards gate_ (not the gate: it is thread-safe)
  std::unique_ptr<HeadGate> gate_;
};

}  // namespace tau::server
