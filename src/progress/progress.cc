#include "progress/progress.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace tau::progress {
namespace {

constexpr int64_t kRateWindowMs = 60'000;  // the rate is over the last minute of steps
constexpr size_t kMaxWindow = 512;

}  // namespace

void Tracker::Feed(std::string_view appended, int64_t now_ms) {
  partial_.append(appended);
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    Line(std::string_view(partial_).substr(start, nl - start), now_ms);
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (partial_.size() > (1 << 20)) partial_.clear();  // a runaway line without an end
  Recompute();
}

void Tracker::StartAttempt(int64_t now_ms) {
  attempt_started_ms_ = now_ms;
  window_.clear();
  stalled_ = false;
  Recompute();
}

void Tracker::SetStalled(bool stalled) {
  stalled_ = stalled;
  Recompute();
}

void Tracker::Line(std::string_view line, int64_t now_ms) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) {
    ++snapshot_.bad_lines;
    return;
  }
  ++snapshot_.lines;
  int64_t at = now_ms;
  if (j.contains("time") && j["time"].is_number()) at = static_cast<int64_t>(j["time"].get<double>() * 1000);
  snapshot_.last_line_ms = std::max(snapshot_.last_line_ms, at);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number() || it.key() == "time") continue;
    double v = it.value().get<double>();
    if (!std::isfinite(v)) continue;
    if (it.key() == "step") {
      snapshot_.step = v;
      if (at < attempt_started_ms_) continue;  // the previous attempt's
      // Steps going back: the job started over from a checkpoint.
      if (!window_.empty() && v < window_.back().second) window_.clear();
      window_.emplace_back(at, v);
      if (window_.size() > kMaxWindow) window_.erase(window_.begin());
    } else if (it.key() == "total_steps") {
      snapshot_.total_steps = v;
    } else {
      snapshot_.latest[it.key()] = v;
    }
  }
}

void Tracker::Recompute() {
  Snapshot& s = snapshot_;
  s.percent.reset();
  s.steps_per_second.reset();
  s.eta_seconds.reset();
  if (s.step && s.total_steps && *s.total_steps > 0) s.percent = std::clamp(*s.step / *s.total_steps * 100.0, 0.0, 100.0);
  // The rate over the last minute of lines (at least two points apart in time).
  if (window_.size() >= 2) {
    const auto& last = window_.back();
    size_t first = window_.size() - 1;
    while (first > 0 && last.first - window_[first - 1].first <= kRateWindowMs) --first;
    if (first == window_.size() - 1) first = window_.size() - 2;
    const auto& from = window_[first];
    const double seconds = static_cast<double>(last.first - from.first) / 1000.0;
    if (seconds > 0 && last.second > from.second) s.steps_per_second = (last.second - from.second) / seconds;
  }
  if (!stalled_ && s.steps_per_second && s.step && s.total_steps && *s.total_steps >= *s.step) {
    s.eta_seconds = (*s.total_steps - *s.step) / *s.steps_per_second;
  }
}

}  // namespace tau::progress
