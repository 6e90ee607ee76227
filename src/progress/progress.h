#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tau::progress {

// What a job reports about itself through TAU_METRICS_FILE: JSON lines
// such as {"step": 12, "total_steps": 100, "loss": 0.41} (docs/observability.md#progress).
// `step` and `total_steps` drive progress; every other numeric field is a
// metric series; an optional "time" (Unix seconds) dates the line, else
// the time it was read.
struct Snapshot {
  std::optional<double> step;
  std::optional<double> total_steps;
  std::optional<double> percent;       // 0..100, with both of the above
  // The rate over the last minute of steps of the current attempt, and
  // the ETA from it; no ETA while the job is stalled.
  std::optional<double> steps_per_second;
  std::optional<double> eta_seconds;
  std::map<std::string, double> latest;  // the newest value of each metric
  int64_t lines = 0;
  int64_t bad_lines = 0;
  int64_t last_line_ms = 0;  // when the newest line was written (or read)
};

// Follows a metrics file from the start: feed it what was appended; it
// keeps the newest values and a recent window of (time, step) points for
// the rate. Pure: no I/O and no clock of its own.
class Tracker {
 public:
  // Parses every whole line of `appended` (a trailing partial line waits
  // for the rest); `now_ms` dates lines without a "time".
  void Feed(std::string_view appended, int64_t now_ms);
  const Snapshot& snapshot() const { return snapshot_; }

  // A new attempt starts at `now_ms`: the rate starts again from its own
  // lines (a resumed attempt goes back to its checkpoint's step, and the
  // time between attempts is no progress). Lines dated before `now_ms` are
  // the previous attempt's and no longer count towards the rate.
  void StartAttempt(int64_t now_ms);
  // While stalled (no line for longer than the stall time) there is no ETA:
  // the last rate says nothing about when the job ends.
  void SetStalled(bool stalled);

 private:
  void Line(std::string_view line, int64_t now_ms);
  void Recompute();

  Snapshot snapshot_;
  std::string partial_;
  // (time ms, step) of recent lines with a step of this attempt, oldest first.
  std::vector<std::pair<int64_t, double>> window_;
  int64_t attempt_started_ms_ = 0;
  bool stalled_ = false;
};

}  // namespace tau::progress
