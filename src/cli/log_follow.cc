#include "cli/log_follow.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/connect.h"
#include "common/duration.h"

namespace tau::cli {

bool LogFrameReader::Feed(std::string_view data) {
  while (!data.empty()) {
    if (in_body_) {
      // A frame is shown whole or not at all: a stream cut inside one
      // resumes from the position before it.
      size_t n = std::min(remaining_, data.size());
      body_.append(data.substr(0, n));
      remaining_ -= n;
      data.remove_prefix(n);
      if (remaining_ == 0) {
        in_body_ = false;
        on_text_(body_);
        body_.clear();
        position_ = pending_position_;
      }
      continue;
    }
    size_t nl = data.find('\n');
    header_.append(data.substr(0, nl));
    if (header_.size() > 4096) return false;
    if (nl == std::string_view::npos) return true;
    data.remove_prefix(nl + 1);
    size_t space = header_.find(' ');
    if (space == std::string::npos || space == 0) return false;
    char* end = nullptr;
    unsigned long long bytes = std::strtoull(header_.c_str(), &end, 10);
    if (end != header_.c_str() + space || bytes > (size_t{64} << 20)) return false;
    pending_position_ = header_.substr(space + 1);
    header_.clear();
    remaining_ = bytes;
    in_body_ = true;
    if (remaining_ == 0) {
      in_body_ = false;
      position_ = pending_position_;
    }
  }
  return true;
}

namespace {

Duration ReconnectTimeout() {
  if (const char* text = std::getenv("TAU_RECONNECT_TIMEOUT"); text && *text) {
    if (auto d = ParseDuration(text); d.ok()) return *d;
  }
  return std::chrono::minutes(10);
}

// After `lost` (the connection to taugridd is gone): says so, waits for a
// taugridd (this one restarted, or another) to answer and points `client`
// at it; Unavailable when none answers within ReconnectTimeout.
Status Reconnect(ApiClient* client, const Status& lost) {
  std::fprintf(stderr, "tau: lost the connection to taugridd (%s); reconnecting...\n", lost.message().c_str());
  const auto deadline = std::chrono::steady_clock::now() + ReconnectTimeout();
  while (true) {
    auto endpoint = ConnectToServer(/*start_if_needed=*/false);
    if (endpoint.ok()) {
      *client = ApiClient(*endpoint);
      std::fprintf(stderr, "tau: reconnected to taugridd at %s\n", endpoint->url.c_str());
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return UnavailableError(fmt::format("lost taugridd and it did not come back: {}", endpoint.error().message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

Status FollowLog(ApiClient* client, const std::string& path, const std::function<void(std::string_view)>& on_text) {
  LogFrameReader reader(on_text);
  bool framed = true;
  while (true) {
    std::string url = path + "&positions=true";
    if (!reader.position().empty()) url += "&from=" + UrlEscape(reader.position());
    Status st = client->Stream(url, [&](std::string_view data) {
      framed = reader.Feed(data);
      return framed;
    });
    if (!framed) return InternalError("the server's log stream is not in the expected frames");
    if (st.ok() || st.code() != StatusCode::kUnavailable) return st;
    // The connection is gone: go on from the last position.
    TAU_RETURN_IF_ERROR(Reconnect(client, st));
  }
}

Status FollowEvents(ApiClient* client, const std::string& path, const std::function<void(const std::string&)>& on_line) {
  int64_t after = 0;  // the id of the last event handed over
  while (true) {
    std::string url = path;
    if (after > 0) url += "&after=" + std::to_string(after);
    // A line cut by a lost connection is dropped: it comes again whole.
    std::string buffer;
    Status st = client->Stream(url, [&](std::string_view data) {
      buffer.append(data);
      size_t end;
      while ((end = buffer.find('\n')) != std::string::npos) {
        std::string line = buffer.substr(0, end);
        buffer.erase(0, end + 1);
        nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
        if (event.is_object() && event.contains("id") && event["id"].is_number_integer()) {
          after = std::max(after, event["id"].get<int64_t>());
        }
        on_line(line);
      }
      return true;
    });
    if (st.ok() || st.code() != StatusCode::kUnavailable) return st;
    TAU_RETURN_IF_ERROR(Reconnect(client, st));
  }
}

}  // namespace tau::cli
