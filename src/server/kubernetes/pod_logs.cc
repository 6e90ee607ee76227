#include "server/kubernetes/pod_logs.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tau::server::kubernetes {
namespace {

using std::chrono::milliseconds;

bool Digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "2026-01-02T03:04:05.1Z" -> "2026-01-02T03:04:05.100000000Z": one
// spelling per instant, so that timestamps compare as strings (Go's
// RFC3339Nano drops trailing zeros of the fraction). nullopt when `ts` is
// not an RFC 3339 UTC timestamp.
std::optional<std::string> NormalizeTimestamp(std::string_view ts) {
  if (ts.size() < 20 || ts.back() != 'Z') return std::nullopt;
  std::string_view secs = ts.substr(0, 19);
  if (!Digits(secs.substr(0, 4)) || secs[4] != '-' || !Digits(secs.substr(5, 2)) || secs[7] != '-' ||
      !Digits(secs.substr(8, 2)) || secs[10] != 'T' || !Digits(secs.substr(11, 2)) || secs[13] != ':' ||
      !Digits(secs.substr(14, 2)) || secs[16] != ':' || !Digits(secs.substr(17, 2))) {
    return std::nullopt;
  }
  std::string_view frac = ts.substr(19, ts.size() - 20);
  if (!frac.empty()) {
    if (frac[0] != '.' || frac.size() > 10 || !Digits(frac.substr(1))) return std::nullopt;
    frac.remove_prefix(1);
  }
  std::string out(secs);
  out += '.';
  out += frac;
  out.append(9 - frac.size(), '0');
  out += 'Z';
  return out;
}

// Whether an API error says the container has no log yet (it is waiting to
// start) rather than that something is wrong.
bool NotStartedYet(const kube::ApiError& error) {
  return error.http_code == 400 && (error.message.find("waiting to start") != std::string::npos ||
                                    error.message.find("is not available") != std::string::npos);
}

}  // namespace

Result<PodRef> FindIndexedJobPod(kube::KubeClient& client, const std::string& ns, const std::string& job_name,
                                 int rank) {
  kube::ListOptions options;
  options.label_selector =
      fmt::format("batch.kubernetes.io/job-name={},batch.kubernetes.io/job-completion-index={}", job_name, rank);
  TAU_ASSIGN_OR_RETURN(nlohmann::json list, client.List({"", "v1", "pods", ns, "", ""}, options));
  const nlohmann::json* newest = nullptr;
  auto created = [](const nlohmann::json& pod) {
    return pod["metadata"].value("creationTimestamp", "") + "/" + pod["metadata"].value("name", "");
  };
  for (const nlohmann::json& pod : list["items"]) {
    if (newest == nullptr || created(pod) > created(*newest)) newest = &pod;
  }
  if (newest == nullptr) {
    return NotFoundError(fmt::format("no pod of completion index {} of Job {}/{}", rank, ns, job_name));
  }
  return PodRef{ns, (*newest)["metadata"].value("name", ""), ""};
}

Result<std::string> SinceTimeFor(std::string_view timestamp) {
  auto normal = NormalizeTimestamp(timestamp);
  if (!normal) return InvalidArgumentError(fmt::format("\"{}\" is not an RFC 3339 UTC timestamp", timestamp));
  return normal->substr(0, 19) + "Z";
}

bool LogLineFilter::Feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(chunk);
      return true;
    }
    bool go;
    if (partial_.empty()) {
      go = Line(chunk.substr(0, nl + 1), on_line);
    } else {
      partial_.append(chunk.substr(0, nl + 1));
      std::string line = std::move(partial_);
      partial_.clear();
      go = Line(line, on_line);
    }
    if (!go) return false;
    chunk.remove_prefix(nl + 1);
  }
  return true;
}

bool LogLineFilter::Finish(const std::function<bool(std::string_view)>& on_line) {
  if (partial_.empty()) return true;
  std::string line = std::move(partial_);
  partial_.clear();
  return Line(line, on_line);
}

bool LogLineFilter::Line(std::string_view line, const std::function<bool(std::string_view)>& on_line) {
  size_t space = line.find(' ');
  std::optional<std::string> ts;
  if (space != std::string_view::npos) ts = NormalizeTimestamp(line.substr(0, space));
  // A line without a timestamp (not what the API server sends with
  // timestamps=true) is passed on whole and does not move the position.
  if (!ts) return on_line(line);
  std::string_view text = line.substr(space + 1);
  if (!position_.last_timestamp.empty()) {
    if (*ts < position_.last_timestamp) return true;
    if (*ts == position_.last_timestamp) {
      if (skip_at_last_ > 0) {
        --skip_at_last_;
        return true;
      }
      ++position_.lines_at_last;
      return on_line(text);
    }
  }
  position_.last_timestamp = *ts;
  position_.lines_at_last = 1;
  skip_at_last_ = 0;
  return on_line(text);
}

LogLineFilter::LogLineFilter(LogPosition position) : position_(std::move(position)) {
  if (auto normal = NormalizeTimestamp(position_.last_timestamp)) {
    position_.last_timestamp = *normal;
  } else {
    position_ = {};
  }
  skip_at_last_ = position_.lines_at_last;
}

void LogLineFilter::Resume() {
  partial_.clear();
  skip_at_last_ = position_.lines_at_last;
}

StreamFn StreamOf(kube::KubeClient& client) {
  kube::Transport* transport = &client.transport();
  return [transport](const kube::HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                     const std::atomic<bool>* stop) { return transport->Stream(request, on_chunk, stop); };
}

PodLogStreamer::PodLogStreamer(StreamFn stream, std::function<Result<PodRef>()> lookup, PodLogOptions options,
                               kube::Sleeper* sleeper)
    : stream_(std::move(stream)),
      lookup_(std::move(lookup)),
      options_(std::move(options)),
      sleeper_(sleeper != nullptr ? sleeper : &own_sleeper_),
      filter_(options_.from) {}

void PodLogStreamer::Stop() {
  stop_ = true;
  sleeper_->Wake();
}

bool PodLogStreamer::Waiting() {
  if (!options_.follow || stop_) return false;
  return !options_.keep_waiting || options_.keep_waiting();
}

std::string PodLogStreamer::Target(const PodRef& pod) const {
  std::string target = kube::ResourcePath({"", "v1", "pods", pod.namespace_, pod.name, "log"});
  target += "?container=" + kube::UrlEscape(pod.container.empty() ? options_.container : pod.container) +
            "&timestamps=true";
  if (options_.follow) target += "&follow=true";
  const std::string& last = filter_.position().last_timestamp;
  if (!last.empty()) {
    if (auto since = SinceTimeFor(last); since.ok()) target += "&sinceTime=" + kube::UrlEscape(*since);
  } else if (options_.tail_lines) {
    target += fmt::format("&tailLines={}", *options_.tail_lines);
  }
  return target;
}

Result<LogEnd> PodLogStreamer::Run(const std::function<bool(std::string_view)>& on_text) {
  int64_t skip = options_.skip_bytes;
  bytes_ = 0;
  auto deliver = [&](std::string_view text) {
    if (skip > 0) {
      size_t n = std::min<size_t>(static_cast<size_t>(skip), text.size());
      skip -= static_cast<int64_t>(n);
      bytes_ += static_cast<int64_t>(n);
      text.remove_prefix(n);
      if (text.empty()) return true;
    }
    bytes_ += static_cast<int64_t>(text.size());
    return on_text(text);
  };
  kube::Backoff backoff({milliseconds(500), milliseconds(10'000), 2.0, 0.2});
  const milliseconds kPodPoll(1000);
  while (!stop_) {
    Result<PodRef> pod = lookup_();
    if (!pod.ok()) {
      const StatusCode code = pod.error().code();
      if (code == StatusCode::kNotFound) {
        if (!Waiting()) return stop_ ? LogEnd::kStopped : LogEnd::kNoPod;
        sleeper_->Sleep(kPodPoll);
        continue;
      }
      if (code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded) {
        sleeper_->Sleep(backoff.Next());
        continue;
      }
      return pod.error();
    }
    kube::HttpRequest request;
    request.target = Target(*pod);
    request.timeout = options_.max_request_time;
    bool handler_stopped = false;
    bool got_data = false;
    kube::StreamEnd end = stream_(
        request,
        [&](std::string_view chunk) {
          got_data = true;
          if (!filter_.Feed(chunk, deliver)) {
            handler_stopped = true;
            return false;
          }
          return true;
        },
        &stop_);
    if (handler_stopped || stop_ || end.stopped) return LogEnd::kStopped;
    const bool success = end.code >= 200 && end.code < 300;
    if (success && end.transport.ok()) {
      if (!filter_.Finish(deliver)) return LogEnd::kStopped;
      return LogEnd::kEnded;
    }
    if (success || end.code == 0) {
      // The connection dropped (or max_request_time ended it): resume from
      // the last whole line.
      filter_.Resume();
      const bool timed_out = options_.max_request_time.count() > 0 &&
                             end.transport.code() == StatusCode::kDeadlineExceeded;
      if (got_data || timed_out) {
        backoff.Reset();
      } else {
        sleeper_->Sleep(backoff.Next());
      }
      continue;
    }
    kube::ApiError error = kube::ParseApiError(end.code, end.error_body);
    if (end.code == 404 || NotStartedYet(error)) {
      if (!Waiting()) return stop_ ? LogEnd::kStopped : LogEnd::kNoPod;
      sleeper_->Sleep(kPodPoll);
      continue;
    }
    if (end.code >= 500 || end.code == 429) {
      sleeper_->Sleep(backoff.Next());
      continue;
    }
    return kube::ToStatus(error, "GET " + request.target);
  }
  return LogEnd::kStopped;
}

}  // namespace tau::server::kubernetes
