#include "kube/watch.h"

#include "common/strings.h"

#include <fmt/format.h>

namespace tau::kube {

Status LineSplitter::Feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      if (partial_.size() + chunk.size() > max_line_) {
        partial_.clear();
        return ResourceExhaustedError(
            fmt::format("watch stream: an event is longer than {} bytes", max_line_));
      }
      partial_.append(chunk);
      return Status::Ok();
    }
    std::string_view line;
    if (partial_.empty()) {
      line = chunk.substr(0, nl);
    } else {
      partial_.append(chunk.substr(0, nl));
      line = partial_;
    }
    chunk.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    bool more = line.empty() ? true : on_line(line);
    partial_.clear();
    if (!more) {
      return Status::Ok();
    }
  }
  return Status::Ok();
}

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded: return "ADDED";
    case EventType::kModified: return "MODIFIED";
    case EventType::kDeleted: return "DELETED";
    case EventType::kBookmark: return "BOOKMARK";
    case EventType::kError: return "ERROR";
  }
  return "?";
}

Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::string_view head = Utf8Prefix(line, 120);  // never half a character
  if (j.is_discarded()) {
    return InvalidArgumentError(fmt::format("watch stream: an event is not JSON: {}", head));
  }
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string() || !j.contains("object") ||
      !j["object"].is_object()) {
    return InvalidArgumentError(
        fmt::format("watch stream: an event lacks \"type\" (a string) or \"object\" (an object): {}", head));
  }
  const std::string& type = j["type"].get_ref<const std::string&>();
  WatchEvent event;
  if (type == "ADDED") {
    event.type = EventType::kAdded;
  } else if (type == "MODIFIED") {
    event.type = EventType::kModified;
  } else if (type == "DELETED") {
    event.type = EventType::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = EventType::kBookmark;
  } else if (type == "ERROR") {
    event.type = EventType::kError;
  } else {
    return InvalidArgumentError(fmt::format("watch stream: unknown event type \"{}\"", type));
  }
  event.object = std::move(j["object"]);
  return event;
}

std::string WatchTarget(const ResourceRef& ref, const WatchOptions& options) {
  ResourceRef collection = ref;
  collection.name.clear();
  collection.subresource.clear();
  std::string target = ResourcePath(collection) + "?watch=true";
  if (options.allow_bookmarks) {
    target += "&allowWatchBookmarks=true";
  }
  if (!options.resource_version.empty()) {
    target += "&resourceVersion=" + UrlEscape(options.resource_version);
  }
  if (!options.label_selector.empty()) {
    target += "&labelSelector=" + UrlEscape(options.label_selector);
  }
  if (!options.field_selector.empty()) {
    target += "&fieldSelector=" + UrlEscape(options.field_selector);
  }
  if (options.timeout_seconds > 0) {
    target += fmt::format("&timeoutSeconds={}", options.timeout_seconds);
  }
  return target;
}

bool FeedWatchChunk(std::string_view chunk, LineSplitter& splitter,
                    const std::function<bool(WatchEvent&)>& on_event, WatchEnd* end) {
  bool go_on = true;
  Status fed = splitter.Feed(chunk, [&](std::string_view line) {
    Result<WatchEvent> event = ParseWatchEvent(line);
    if (!event.ok()) {
      end->outcome = WatchOutcome::kFailed;
      end->status = event.error();
      return go_on = false;
    }
    if (event->type == EventType::kError) {
      long code = 0;
      if (event->object.contains("code") && event->object["code"].is_number_integer()) {
        code = event->object["code"].get<long>();
      }
      ApiError error = ParseApiError(code, event->object.dump());
      end->outcome = code == 410 ? WatchOutcome::kExpired : WatchOutcome::kFailed;
      end->status = ToStatus(error, "watch ERROR event");
      return go_on = false;
    }
    ++end->events;
    if (!on_event(*event)) {
      end->outcome = WatchOutcome::kStopped;
      return go_on = false;
    }
    return true;
  });
  if (!fed.ok()) {
    end->outcome = WatchOutcome::kFailed;
    end->status = fed;
    return false;
  }
  return go_on;
}

WatchEnd Watch(KubeClient& client, const ResourceRef& ref, const WatchOptions& options,
               const std::function<bool(WatchEvent&)>& on_event, const std::atomic<bool>* stop) {
  HttpRequest request;
  request.target = WatchTarget(ref, options);
  if (options.timeout_seconds > 0) {
    request.timeout = std::chrono::seconds(options.timeout_seconds + 30);
  }
  LineSplitter splitter;
  WatchEnd end;
  bool ended_by_stream = false;
  StreamEnd stream = client.transport().Stream(
      request,
      [&](std::string_view chunk) {
        if (!FeedWatchChunk(chunk, splitter, on_event, &end)) {
          ended_by_stream = true;
          return false;
        }
        return true;
      },
      stop);
  if (ended_by_stream) {
    return end;
  }
  std::string what = "watch " + request.target;
  if (stream.stopped) {
    end.outcome = WatchOutcome::kStopped;
    return end;
  }
  if (!stream.transport.ok()) {
    end.outcome = WatchOutcome::kFailed;
    end.status = stream.transport;
    return end;
  }
  if (stream.code < 200 || stream.code >= 300) {
    ApiError error = ParseApiError(stream.code, stream.error_body);
    end.outcome = stream.code == 410 ? WatchOutcome::kExpired : WatchOutcome::kFailed;
    end.status = ToStatus(error, what);
    return end;
  }
  end.outcome = WatchOutcome::kClosed;
  return end;
}

}  // namespace tau::kube
