#include "common/log.h"

#include <fmt/format.h>

#include <random>

#include <unistd.h>

#include <atomic>

#include "common/clock.h"
#include "common/json_escape.h"

namespace tau::log {
namespace {

std::atomic<int> g_min_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kLogfmt)};
std::atomic<int> g_fd{2};

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

void AppendLogfmtValue(std::string* out, std::string_view v) {
  bool needs_quotes = v.empty();
  for (char c : v) {
    if (c == ' ' || c == '=' || c == '"' || static_cast<unsigned char>(c) < 0x20) needs_quotes = true;
  }
  if (needs_quotes) AppendJsonString(out, v);
  else out->append(v);
}

}  // namespace

void Configure(Level min_level, Format format, int fd) {
  g_min_level = static_cast<int>(min_level);
  g_format = static_cast<int>(format);
  g_fd = fd;
}

Level MinLevel() { return static_cast<Level>(g_min_level.load()); }

bool ParseLevel(std::string_view text, Level* out) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
    if (text == LevelName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

namespace {
thread_local std::string t_trace;
}  // namespace

const std::string& CurrentTrace() { return t_trace; }

TraceScope::TraceScope(std::string trace_id) : previous_(std::move(t_trace)) { t_trace = std::move(trace_id); }

TraceScope::~TraceScope() { t_trace = std::move(previous_); }

std::string NewTraceId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}

void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields) {
  if (static_cast<int>(level) < g_min_level.load()) return;
  std::string line;
  std::string time = FormatRfc3339(SystemClock::Get()->Now());
  if (static_cast<Format>(g_format.load()) == Format::kJson) {
    line = "{\"time\":";
    AppendJsonString(&line, time);
    line += ",\"level\":";
    AppendJsonString(&line, LevelName(level));
    line += ",\"component\":";
    AppendJsonString(&line, component);
    line += ",\"msg\":";
    AppendJsonString(&line, message);
    for (const Field& f : fields) {
      line += ',';
      AppendJsonString(&line, f.key);
      line += ':';
      AppendJsonString(&line, f.value);
    }
    if (!t_trace.empty()) {
      line += ",\"trace_id\":";
      AppendJsonString(&line, t_trace);
    }
    line += "}\n";
  } else {
    line = "time=" + time + " level=" + std::string(LevelName(level)) + " component=";
    AppendLogfmtValue(&line, component);
    line += " msg=";
    AppendLogfmtValue(&line, message);
    for (const Field& f : fields) {
      line += ' ';
      line.append(f.key);
      line += '=';
      AppendLogfmtValue(&line, f.value);
    }
    if (!t_trace.empty()) line += " trace_id=" + t_trace;
    line += '\n';
  }
  const char* p = line.data();
  size_t left = line.size();
  int fd = g_fd.load();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace tau::log
