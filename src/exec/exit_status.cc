#include "exec/exit_status.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>

#include "common/open_retrying.h"

namespace tau::exec {
namespace {

// A status file is a few hundred bytes; anything larger is not one.
constexpr off_t kMaxStatusBytes = 1 << 20;

// What a status file is, in words, when it is not a regular file.
std::string Kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a plain file";
}

// Reads a status file the job could have tampered with (it lives in the
// job's folder): a link is not followed, and a fifo or device is never
// read, so nothing a job leaves there can block the caller. NotFound when
// it is absent; InvalidArgument, saying what is there, when it is not a
// regular file of a status's size.
Result<std::string> ReadStatusText(const std::string& path) {
  int fd = OpenRetrying(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    struct stat lst {};
    if (err != ENOENT && ::lstat(path.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode)) {
      return InvalidArgumentError(fmt::format("status file {} is not a regular file ({})", path, Kind(lst.st_mode)));
    }
    return ErrnoError(err, fmt::format("read {}", path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError(err, fmt::format("stat {}", path));
  }
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxStatusBytes) {
    ::close(fd);
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgumentError(fmt::format("status file {} is not a regular file ({})", path, Kind(st.st_mode)));
    }
    return InvalidArgumentError(fmt::format("status file {} holds {} bytes, too many for a status", path, st.st_size));
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
  Result<std::string> text = ReadStatusText(path);
  if (!text.ok()) {
    if (text.error().code() != StatusCode::kNotFound) return text.error();
    // The reservation holds blanks until the whole status is written into
    // it; something else there is not the shim's.
    Result<std::string> tmp = ReadStatusText(path + ".tmp");
    if (!tmp.ok() && tmp.error().code() != StatusCode::kNotFound) return tmp.error();
    if (tmp.ok()) {
      if (auto parsed = ParseExitStatus(*tmp); parsed.ok()) return parsed;
    }
    return text.error();
  }
  auto status = ParseExitStatus(*text);
  if (!status.ok()) return status.error().WithContext(path);
  return status;
}

bool StatusReserved(const std::string& path) {
  // Whatever is there, a link or a fifo included: only the job or its shim
  // could have put it there.
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 || ::lstat((path + ".tmp").c_str(), &st) == 0;
}

}  // namespace tau::exec
