#include "server/cancel_request.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <string_view>

namespace tau::server {
namespace {

// One record, padded to a fixed size so that every rewrite fits the
// blocks the file already has.
constexpr size_t kRecordBytes = 64;
constexpr std::string_view kPrefix = "cancel attempt=";

// Beside the shims' locks, out of the job's folder: nothing the job does
// there can replace it (by a link, say).
std::filesystem::path PathOf(const TauHome& home, const std::string& id) {
  return home.shim_dir(id) / "cancel-request";
}

std::string Padded(std::string record) {
  record.resize(kRecordBytes - 1, ' ');
  record += '\n';
  return record;
}

// Writes `record` at the start of the file; `sync`: durably (fdatasync).
Status WriteRecord(const std::filesystem::path& path, const std::string& record, int flags, bool sync) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | flags, 0600);
  if (fd < 0) return ErrnoError(errno, fmt::format("open {}", path.string()));
  const bool ok = ::pwrite(fd, record.data(), record.size(), 0) == static_cast<ssize_t>(record.size()) &&
                  (!sync || ::fdatasync(fd) == 0);
  const int err = errno;
  ::close(fd);
  if (!ok) return ErrnoError(err, fmt::format("write {}", path.string()));
  return Status::Ok();
}

}  // namespace

Status ReserveCancelRequest(const TauHome& home, const std::string& id) {
  const auto path = PathOf(home, id);
  std::error_code ec;
  if (!std::filesystem::create_directories(path.parent_path(), ec) && ec) {
    return ErrnoError(ec.value(), fmt::format("create {}", path.parent_path().string()));
  }
  // Not synced: the write has the file's blocks allocated (or reserved,
  // with delayed allocation) already, which is all a later rewrite needs;
  // an fsync here would cost every submit one more.
  return WriteRecord(path, Padded(""), O_CREAT | O_TRUNC, /*sync=*/false);
}

Status KeepCancelRequest(const TauHome& home, const std::string& id, int64_t attempt) {
  const auto path = PathOf(home, id);
  const std::string record = Padded(fmt::format("{}{}", kPrefix, attempt));
  Status st = WriteRecord(path, record, 0, /*sync=*/true);
  if (st.ok() || st.code() != StatusCode::kNotFound) return st;
  return WriteRecord(path, record, O_CREAT, /*sync=*/true);
}

std::optional<int64_t> KeptCancelRequest(const TauHome& home, const std::string& id) {
  const auto path = PathOf(home, id);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  char buf[kRecordBytes];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  std::string_view text(buf, static_cast<size_t>(n));
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  int64_t attempt = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), attempt);
  if (ec != std::errc() || attempt < 1) return std::nullopt;
  return attempt;
}

}  // namespace tau::server
