#include "exec/exit_status.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>

namespace tau::exec {
namespace {

// A status file is a few hundred bytes; anything larger is not one.
constexpr off_t kMaxStatusBytes = 1 << 20;

// Reads a status file the job could have tampered with (it lives in the
// job's folder): a link is not followed, and a fifo or device is never
// read, so nothing a job leaves there can block the caller. Sets *err to
// the errno of a failure (ENOENT when absent).
std::optional<std::string> ReadStatusText(const std::string& path, int* err) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    *err = errno;
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxStatusBytes) {
    *err = EINVAL;
    ::close(fd);
    return std::nullopt;
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  return text;
}

}  // namespace

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
  int err = 0;
  std::optional<std::string> text = ReadStatusText(path, &err);
  if (!text) {
    // The reservation holds blanks until the whole status is written into it.
    int tmp_err = 0;
    std::optional<std::string> tmp = ReadStatusText(path + ".tmp", &tmp_err);
    if (tmp && err == ENOENT) {
      if (auto parsed = ParseExitStatus(*tmp); parsed.ok()) return parsed;
    }
    if (err == EINVAL) return InvalidArgumentError(fmt::format("{} is not a regular status file", path));
    return ErrnoError(err, fmt::format("read {}", path));
  }
  auto status = ParseExitStatus(*text);
  if (!status.ok()) return status.error().WithContext(path);
  return status;
}

bool StatusReserved(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0 || ::access((path + ".tmp").c_str(), F_OK) == 0;
}

}  // namespace tau::exec
