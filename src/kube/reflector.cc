#include "kube/reflector.h"

#include <fmt/format.h>

namespace tau::kube {
namespace {

std::string MetaString(const nlohmann::json& object, const char* key) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return "";
  }
  auto v = meta->find(key);
  return (v != meta->end() && v->is_string()) ? v->get<std::string>() : "";
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  std::string ns = MetaString(object, "namespace");
  std::string name = MetaString(object, "name");
  return ns.empty() ? name : ns + "/" + name;
}

Result<nlohmann::json> ClientListerWatcher::List(const ListOptions& options) {
  return client_->List(ref_, options);
}

WatchEnd ClientListerWatcher::Watch(const WatchOptions& options, const std::function<bool(WatchEvent&)>& on_event,
                                    const std::atomic<bool>* stop) {
  return kube::Watch(*client_, ref_, options, on_event, stop);
}

Reflector::Reflector(ListerWatcher* source, ReflectorOptions options, Handler handler, Sleeper* sleeper)
    : source_(source),
      options_(std::move(options)),
      handler_(std::move(handler)),
      own_sleeper_(sleeper == nullptr ? std::make_unique<RealSleeper>() : nullptr),
      sleeper_(sleeper == nullptr ? own_sleeper_.get() : sleeper),
      backoff_(options_.backoff, options_.backoff_seed != 0 ? options_.backoff_seed : std::random_device{}()) {}

void Reflector::Stop() {
  stop_ = true;
  sleeper_->Wake();
}

bool Reflector::Pause(std::chrono::milliseconds d) {
  if (stop_) {
    return false;
  }
  sleeper_->Sleep(d);
  return !stop_;
}

Status Reflector::ListAndReplace() {
  ListOptions list;
  list.label_selector = options_.label_selector;
  list.field_selector = options_.field_selector;
  list.limit = options_.page_size;
  std::map<std::string, nlohmann::json> fresh;
  std::string version;
  while (true) {
    TAU_ASSIGN_OR_RETURN(nlohmann::json page, source_->List(list));
    auto items = page.find("items");
    if (items != page.end() && items->is_array()) {
      for (auto& item : *items) {
        std::string key = ObjectKey(item);
        fresh[key] = std::move(item);
      }
    } else if (items != page.end() && !items->is_null()) {
      return InternalError("list: \"items\" is not a list");
    }
    std::string next;
    if (page.contains("metadata") && page["metadata"].is_object()) {
      const auto& meta = page["metadata"];
      if (meta.contains("resourceVersion") && meta["resourceVersion"].is_string()) {
        version = meta["resourceVersion"].get<std::string>();
      }
      if (meta.contains("continue") && meta["continue"].is_string()) {
        next = meta["continue"].get<std::string>();
      }
    }
    if (next.empty()) {
      break;
    }
    list.continue_token = next;
  }
  // Hand over the difference to what the handler has seen.
  for (auto it = objects_.begin(); it != objects_.end();) {
    if (fresh.count(it->first) == 0) {
      nlohmann::json gone = std::move(it->second);
      it = objects_.erase(it);
      handler_(ReflectorEventType::kDeleted, gone);
    } else {
      ++it;
    }
  }
  for (auto& [key, object] : fresh) {
    auto old = objects_.find(key);
    if (old == objects_.end()) {
      auto& stored = objects_[key] = std::move(object);
      handler_(ReflectorEventType::kAdded, stored);
    } else if (MetaString(old->second, "resourceVersion") != MetaString(object, "resourceVersion")) {
      old->second = std::move(object);
      handler_(ReflectorEventType::kModified, old->second);
    }
  }
  resource_version_ = version;
  ++lists_;
  static const nlohmann::json kNone;
  handler_(ReflectorEventType::kSynced, kNone);
  return Status::Ok();
}

bool Reflector::OnEvent(WatchEvent& event) {
  std::string version = MetaString(event.object, "resourceVersion");
  if (!version.empty()) {
    resource_version_ = version;
  }
  std::string key = ObjectKey(event.object);
  switch (event.type) {
    case EventType::kAdded:
    case EventType::kModified: {
      auto& stored = objects_[key];
      bool known = !stored.is_null();
      stored = std::move(event.object);
      handler_(known ? ReflectorEventType::kModified : ReflectorEventType::kAdded, stored);
      break;
    }
    case EventType::kDeleted:
      objects_.erase(key);
      handler_(ReflectorEventType::kDeleted, event.object);
      break;
    case EventType::kBookmark:
    case EventType::kError:
      break;
  }
  return !stop_;
}

Status Reflector::Run() {
  bool need_list = true;
  auto report = [&](const Status& s) {
    if (options_.on_error) {
      options_.on_error(s);
    }
  };
  while (!stop_) {
    if (need_list) {
      Status listed = ListAndReplace();
      if (!listed.ok()) {
        report(listed);
        if (!Pause(backoff_.Next())) {
          break;
        }
        continue;
      }
      need_list = false;
      backoff_.Reset();
      if (stop_) {
        break;
      }
    }
    WatchOptions watch;
    watch.label_selector = options_.label_selector;
    watch.field_selector = options_.field_selector;
    watch.resource_version = resource_version_;
    watch.allow_bookmarks = true;
    watch.timeout_seconds = options_.watch_timeout_seconds;
    WatchEnd end = source_->Watch(watch, [&](WatchEvent& e) { return OnEvent(e); }, &stop_);
    switch (end.outcome) {
      case WatchOutcome::kStopped:
        break;
      case WatchOutcome::kExpired:
        report(end.status);
        need_list = true;
        break;
      case WatchOutcome::kClosed:
        if (end.events > 0) {
          backoff_.Reset();
        } else if (!Pause(backoff_.Next())) {
          // A server that closes every watch at once is not hammered.
          break;
        }
        break;
      case WatchOutcome::kFailed:
        report(end.status);
        if (end.events > 0) {
          backoff_.Reset();  // it was working: the first retry comes soon
        }
        Pause(backoff_.Next());
        break;
    }
  }
  return Status::Ok();
}

}  // namespace tau::kube
