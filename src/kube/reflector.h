#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kube/backoff.h"
#include "kube/watch.h"

namespace tau::kube {

// Lists and watches one resource collection. KubeClient underneath in
// production (ClientListerWatcher); tests script one.
class ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;
  virtual Result<nlohmann::json> List(const ListOptions& options) = 0;
  virtual WatchEnd Watch(const WatchOptions& options, const std::function<bool(WatchEvent&)>& on_event,
                         const std::atomic<bool>* stop) = 0;
};

class ClientListerWatcher final : public ListerWatcher {
 public:
  // `client` must outlive this.
  ClientListerWatcher(KubeClient* client, ResourceRef ref) : client_(client), ref_(std::move(ref)) {}
  Result<nlohmann::json> List(const ListOptions& options) override;
  WatchEnd Watch(const WatchOptions& options, const std::function<bool(WatchEvent&)>& on_event,
                 const std::atomic<bool>* stop) override;

 private:
  KubeClient* client_;
  ResourceRef ref_;
};

enum class ReflectorEventType {
  kAdded,
  kModified,
  kDeleted,
  kSynced,  // the cache now matches a complete list (after the first list and every re-list)
};

struct ReflectorOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;               // list in pages of this many
  int64_t watch_timeout_seconds = 300;   // each watch request's server-side timeout
  Backoff::Options backoff;              // between failed lists/watches
  uint64_t backoff_seed = 0;             // 0: random
  // Told about each failure the reflector recovers from (for logs); may be empty.
  std::function<void(const Status&)> on_error;
};

// An informer-like cache of one collection. Run() lists the collection,
// then watches from the list's resourceVersion (with bookmarks), and keeps
// `objects()` equal to the server's view:
//  - every object change reaches the handler as kAdded/kModified/kDeleted;
//  - when the watch ends cleanly (server timeout) it watches again at once
//    from the last resourceVersion seen (bookmarks included);
//  - when the connection drops, the API server restarts or refuses, it
//    waits with capped exponential backoff and watches again from there;
//  - on 410 Gone (HTTP 410 or an ERROR event with code 410) it lists
//    again and hands over the difference: kAdded for new objects,
//    kModified for changed resourceVersions, kDeleted for objects gone
//    while it was not watching; then kSynced.
//
// Thread model: Run() blocks the thread that calls it, and the handler runs
// on that thread, one event at a time, never concurrently with itself;
// objects() and resource_version() may be read from the handler (or after
// Run() returns). Stop() may be called from any thread, the handler
// included; Run() then returns within about a second.
class Reflector {
 public:
  using Handler = std::function<void(ReflectorEventType type, const nlohmann::json& object)>;

  // `source` and `sleeper` must outlive this; sleeper null: a RealSleeper.
  Reflector(ListerWatcher* source, ReflectorOptions options, Handler handler, Sleeper* sleeper = nullptr);

  // Returns OK once stopped.
  Status Run();
  void Stop();

  // Keyed by "namespace/name" ("name" for cluster-scoped objects).
  const std::map<std::string, nlohmann::json>& objects() const { return objects_; }
  const std::string& resource_version() const { return resource_version_; }
  // How many complete lists (the first included) it has made.
  int lists() const { return lists_; }

 private:
  Status ListAndReplace();
  bool OnEvent(WatchEvent& event);
  bool Pause(std::chrono::milliseconds d);

  ListerWatcher* source_;
  ReflectorOptions options_;
  Handler handler_;
  std::unique_ptr<RealSleeper> own_sleeper_;
  Sleeper* sleeper_;
  Backoff backoff_;
  std::atomic<bool> stop_{false};
  std::map<std::string, nlohmann::json> objects_;
  std::string resource_version_;
  int lists_ = 0;
};

// "namespace/name" of an object ("name" when it has no namespace).
std::string ObjectKey(const nlohmann::json& object);

}  // namespace tau::kube
