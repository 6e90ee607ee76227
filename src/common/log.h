#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace tau::log {

enum class Level { kDebug = 0, kInfo, kWarn, kError };
enum class Format { kLogfmt, kJson };

// One key/value pair of a structured log line.
struct Field {
  std::string_view key;
  std::string value;
};

// Process-wide settings. Thread-safe; lines are written whole with one
// write(2) so concurrent writers never interleave within a line.
void Configure(Level min_level, Format format, int fd = 2);
Level MinLevel();

// The trace id of the work this thread does now ("" for none). Every log
// line written meanwhile carries it as trace_id; the API returns it in the
// X-Trace-Id header, and the control loop hands it to the tasks it runs
// for a request.
const std::string& CurrentTrace();
// Sets the current trace for its lifetime (and restores the previous one).
class TraceScope {
 public:
  explicit TraceScope(std::string trace_id);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  std::string previous_;
};
// 16 random hex characters.
std::string NewTraceId();

// Parses "debug" | "info" | "warn" | "error".
bool ParseLevel(std::string_view text, Level* out);

// Writes one line: time, level, component, message, then the fields.
//   logfmt: time=2026-...Z level=info component=server msg="started" port=8080
//   json:   {"time":"...","level":"info","component":"server","msg":"started","port":"8080"}
void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields = {});

inline void Debug(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  if (MinLevel() <= Level::kDebug) Write(Level::kDebug, c, m, f);
}
inline void Info(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  if (MinLevel() <= Level::kInfo) Write(Level::kInfo, c, m, f);
}
inline void Warn(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  if (MinLevel() <= Level::kWarn) Write(Level::kWarn, c, m, f);
}
inline void Error(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  Write(Level::kError, c, m, f);
}

}  // namespace tau::log
