#include "exec/exit_status.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tau::exec {

Result<ExitStatus> ParseExitStatus(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("status file is not a JSON object");
  ExitStatus s;
  try {
    if (j.contains("exit_code") && j["exit_code"].is_number_integer()) s.exit_code = j["exit_code"].get<int>();
    if (j.contains("signal") && j["signal"].is_number_integer()) s.signal = j["signal"].get<int>();
    s.child_pid = j.value("child_pid", int64_t{0});
    s.started_at_ms = j.value("started_at_ms", int64_t{0});
    s.finished_at_ms = j.value("finished_at_ms", int64_t{0});
    s.user_cpu_ms = j.value("user_cpu_ms", int64_t{0});
    s.system_cpu_ms = j.value("system_cpu_ms", int64_t{0});
    s.max_rss_kb = j.value("max_rss_kb", int64_t{0});
    s.terminated_by = j.value("terminated_by", "");
    s.error = j.value("error", "");
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(fmt::format("status file has a field of the wrong type: {}", e.what()));
  }
  return s;
}

Result<ExitStatus> ReadExitStatus(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    int err = errno;
    // The reservation holds blanks until the whole status is written into it.
    std::ifstream tmp(path + ".tmp");
    std::stringstream text;
    if (tmp) text << tmp.rdbuf();
    if (auto parsed = ParseExitStatus(text.str()); err == ENOENT && parsed.ok()) return parsed;
    return ErrnoError(err, fmt::format("read {}", path));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  auto status = ParseExitStatus(buf.str());
  if (!status.ok()) return status.error().WithContext(path);
  return status;
}

bool StatusReserved(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0 || ::access((path + ".tmp").c_str(), F_OK) == 0;
}

}  // namespace tau::exec
