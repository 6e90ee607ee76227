#pragma once

// A pod container's log through the API server
// (GET /api/v1/namespaces/NS/pods/NAME/log), streamed to a callback, resumed
// after a dropped connection without repeating or losing a line.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kube/backoff.h"
#include "kube/client.h"
#include "kube/transport.h"

namespace tau::server::kubernetes {

struct PodRef {
  std::string namespace_;
  std::string name;
  // The container whose log to read; "" = PodLogOptions::container. (A
  // batch Job's pod runs the rank in "main"; a RayJob's output is in
  // another pod and container, which its lookup names.)
  std::string container;
};

// Where rank `rank` of attempt `attempt` of job `job_id` runs: NotFound while
// no such pod exists (not created yet, or deleted). The backend that names
// the attempt's objects supplies it.
using RankPodLookup = std::function<Result<PodRef>(const std::string& job_id, int64_t attempt, int rank)>;

// The pod of completion index `rank` of the indexed Job `job_name` in
// namespace `ns` (labels batch.kubernetes.io/job-name and
// batch.kubernetes.io/job-completion-index); the newest when the Job
// replaced a failed pod. NotFound naming the Job and the index when none.
Result<PodRef> FindIndexedJobPod(kube::KubeClient& client, const std::string& ns, const std::string& job_name,
                                 int rank);

// Where a log stream stands: the timestamp of the last line delivered
// (RFC 3339 with nanoseconds, as the API server writes it with
// timestamps=true) and how many delivered lines carry exactly that
// timestamp. Lines of one container are in timestamp order, so a stream
// asked for again from that second (sinceTime has whole seconds) skips
// every line before the timestamp and that many lines at it.
struct LogPosition {
  std::string last_timestamp;  // "" = nothing delivered yet
  int64_t lines_at_last = 0;
};

// Turns the bytes of a timestamps=true log response into the log's text,
// line by line, leaving out lines at or before `position` (a resumed
// stream's overlap). Not thread-safe.
class LogLineFilter {
 public:
  // Starts after `position` (one that is not an RFC 3339 UTC timestamp
  // counts as nothing delivered).
  explicit LogLineFilter(LogPosition position = {});

  // Feeds response bytes (cut anywhere); calls `on_line` with each new
  // complete line, its timestamp removed and its '\n' kept. Returns false
  // when `on_line` did (the rest of the chunk is dropped).
  bool Feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line);
  // The response is over: a last line without '\n' is delivered as it is.
  // Call only after a clean end; after a dropped connection the partial
  // line comes again, whole, on the next connection.
  bool Finish(const std::function<bool(std::string_view)>& on_line);
  // The connection dropped: forgets a partial line (it comes again, whole)
  // and skips, on the next connection, the lines already delivered.
  void Resume();

  const LogPosition& position() const { return position_; }

 private:
  bool Line(std::string_view line, const std::function<bool(std::string_view)>& on_line);

  LogPosition position_;
  int64_t skip_at_last_ = 0;  // lines at position_.last_timestamp still to skip
  std::string partial_;
};

// The sinceTime query value that resumes after `timestamp`: its whole
// second ("2026-01-02T03:04:05.123456789Z" -> "2026-01-02T03:04:05Z").
// InvalidArgument when it is not an RFC 3339 UTC timestamp.
Result<std::string> SinceTimeFor(std::string_view timestamp);

struct PodLogOptions {
  std::string container = "main";
  bool follow = false;
  // tailLines until a line was delivered (then the stream resumes from its position).
  std::optional<int64_t> tail_lines;
  // Start here instead of at the beginning (or the tail).
  LogPosition from;
  // Bytes of log text to leave out at the start (a reader that knows how
  // much it already has).
  int64_t skip_bytes = 0;
  // Each request is ended after this long and the stream resumed from its
  // position (0: requests last as long as the server keeps them open).
  std::chrono::milliseconds max_request_time{0};
  // While following: consulted when the pod does not exist (yet) or its
  // container has not started; false ends the stream (with nothing more).
  std::function<bool()> keep_waiting;
};

// One HTTP stream request, as kube::Transport::Stream serves it; a test
// substitutes a scripted one.
using StreamFn = std::function<kube::StreamEnd(const kube::HttpRequest&, const std::function<bool(std::string_view)>&,
                                               const std::atomic<bool>*)>;
// Transport::Stream of `client`.
StreamFn StreamOf(kube::KubeClient& client);

// How a log stream ended.
enum class LogEnd {
  kEnded,    // the server ended it: without follow, the whole log was read;
             // with follow, the container has stopped and its log is drained
  kStopped,  // Stop() was called or the handler returned false
  kNoPod,    // no pod (or container) and keep_waiting said to give up
};

// Streams the log of one container of the pod `lookup` finds. The lookup is
// asked again before each request, so a stream that waits for a pod to be
// created, or resumes after one, reaches it.
//
// Thread model: Run() blocks the calling thread and calls the handler on it;
// Stop() may be called from any thread, and Run() returns within about a
// second. After a dropped connection or an API server error (5xx,
// unreachable) Run() waits with capped backoff (through the Sleeper) and
// resumes from its position; an error that retrying cannot fix (403, a
// container the pod does not have) ends it with that error.
class PodLogStreamer {
 public:
  PodLogStreamer(StreamFn stream, std::function<Result<PodRef>()> lookup, PodLogOptions options,
                 kube::Sleeper* sleeper = nullptr);

  Result<LogEnd> Run(const std::function<bool(std::string_view)>& on_text);
  void Stop();

  // Where the stream stands (for a later stream to resume from); read after
  // Run() returns or from the handler.
  const LogPosition& position() const { return filter_.position(); }
  // Bytes of log text delivered (skip_bytes included).
  int64_t bytes() const { return bytes_; }

  // The next request's target for `pod`:
  // /api/v1/namespaces/NS/pods/NAME/log?container=C&timestamps=true (C:
  // the pod's container, else the options')
  // [&follow=true], then &sinceTime= once something was delivered, else
  // &tailLines= when asked for.
  std::string Target(const PodRef& pod) const;

 private:
  // Whether to wait for a missing pod or a container not yet started.
  bool Waiting();

  StreamFn stream_;
  std::function<Result<PodRef>()> lookup_;
  PodLogOptions options_;
  kube::RealSleeper own_sleeper_;
  kube::Sleeper* sleeper_;
  std::atomic<bool> stop_{false};
  LogLineFilter filter_;
  int64_t bytes_ = 0;
};

}  // namespace tau::server::kubernetes
