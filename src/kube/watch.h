#pragma once

// Watch events carry whole objects, so this header includes nlohmann/json;
// include it only where objects are handled (the Kubernetes backend).
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kube/client.h"

namespace tau::kube {

// Splits a byte stream into lines ('\n', a trailing '\r' dropped) however
// the stream is cut into chunks: a line split across chunks comes out whole
// once its end arrives. Empty lines are skipped.
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = size_t{256} << 20) : max_line_(max_line) {}

  // Calls `on_line` for each completed line; stops early (returning OK) when
  // it returns false. ResourceExhausted when a line outgrows `max_line`.
  Status Feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line);
  // Bytes of an unfinished line.
  size_t pending() const { return partial_.size(); }

 private:
  size_t max_line_;
  std::string partial_;
};

enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view EventTypeName(EventType type);

// One event of a watch stream: {"type": "ADDED", "object": {...}}. For
// kError the object is a Status ({"code": 410, "reason": "Expired", ...}).
struct WatchEvent {
  EventType type = EventType::kAdded;
  nlohmann::json object;
};

// InvalidArgument naming the problem when `line` is not a watch event.
Result<WatchEvent> ParseWatchEvent(std::string_view line);

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // start after this version ("" = now, with synthetic ADDEDs)
  bool allow_bookmarks = true;
  // The server ends the watch after this long (0: its default); the client
  // gives up 30 s after that if the connection hangs.
  int64_t timeout_seconds = 300;
};

enum class WatchOutcome {
  kClosed,   // the server ended the stream cleanly (its timeout): watch again
  kStopped,  // `stop` was set or the handler returned false
  kExpired,  // 410: the resource version is too old; list again
  kFailed,   // connection, TLS, HTTP or stream error: `status` says which
};

struct WatchEnd {
  WatchOutcome outcome = WatchOutcome::kClosed;
  Status status = Status::Ok();  // for kExpired and kFailed
  int64_t events = 0;            // events delivered, bookmarks included
};

// The watch URL for `ref`'s collection ("...?watch=true&resourceVersion=...").
std::string WatchTarget(const ResourceRef& ref, const WatchOptions& options);

// Runs one watch request and hands each event to `on_event` on the calling
// thread as it arrives (ADDED, MODIFIED, DELETED, BOOKMARK; ERROR events
// end the watch instead: code 410 as kExpired, others as kFailed). Blocks
// until the stream ends; `*stop` (may be null) set from another thread
// ends it within about a second.
WatchEnd Watch(KubeClient& client, const ResourceRef& ref, const WatchOptions& options,
               const std::function<bool(WatchEvent&)>& on_event, const std::atomic<bool>* stop);

// Feeds one chunk of a watch response through `splitter` and `on_event`;
// the stream logic of Watch(), exposed for tests. Returns false when the
// watch must end, with `*end` saying why.
bool FeedWatchChunk(std::string_view chunk, LineSplitter& splitter,
                    const std::function<bool(WatchEvent&)>& on_event, WatchEnd* end);

}  // namespace tau::kube
