#include "common/beneath.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <vector>

namespace tau {
namespace {

std::atomic<bool> force_walk{false};
// 0: not probed yet, 1: openat2 works, 2: it does not.
std::atomic<int> openat2_state{0};

Result<std::vector<std::string>> SplitRelative(std::string_view relative) {
  if (relative.empty()) return InvalidArgumentError("an empty path names no file");
  if (relative.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("the path holds a NUL byte");
  }
  if (relative.front() == '/') return InvalidArgumentError(fmt::format("\"{}\" is an absolute path", relative));
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= relative.size()) {
    size_t slash = relative.find('/', start);
    const size_t end = slash == std::string_view::npos ? relative.size() : slash;
    std::string_view part = relative.substr(start, end - start);
    if (part == "..") return InvalidArgumentError(fmt::format("\"{}\" climbs out with \"..\"", relative));
    if (!part.empty() && part != ".") parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.empty()) return InvalidArgumentError(fmt::format("\"{}\" names no file", relative));
  return parts;
}

std::string Prefix(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

const char* TypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISREG(mode)) return "a regular file";
  return "an unknown kind of file";
}

// Why `name` in `dir_fd` could not be opened as a folder on the way.
Status ComponentError(int dir_fd, const std::string& name, int err, std::string_view relative,
                      const std::string& prefix) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return NotFoundError(fmt::format("{}: \"{}\" does not exist", relative, prefix));
    return ErrnoError(errno, fmt::format("{}: \"{}\"", relative, prefix));
  }
  if (S_ISLNK(st.st_mode)) {
    return PermissionDeniedError(fmt::format("{}: \"{}\" is a symbolic link, which is not followed", relative, prefix));
  }
  if (!S_ISDIR(st.st_mode)) {
    return PermissionDeniedError(fmt::format("{}: \"{}\" is {}, not a folder", relative, prefix, TypeName(st.st_mode)));
  }
  return ErrnoError(err, fmt::format("{}: opening \"{}\"", relative, prefix));
}

// The folder holding the last component, opened one component at a time.
Result<UniqueFd> WalkToParent(int root_fd, const std::vector<std::string>& parts, std::string_view relative) {
  UniqueFd cur(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return ErrnoError(errno, "duplicating a folder's descriptor");
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int fd = ::openat(cur.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return ComponentError(cur.get(), parts[i], errno, relative, Prefix(parts, i + 1));
    cur.Reset(fd);
  }
  return cur;
}

long Openat2(int dir_fd, const char* path, uint64_t flags, uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
}

// The folder holding the last component through openat2, or an invalid fd
// when openat2 is missing or refused (the walk then decides, and names the
// component at fault).
UniqueFd Openat2Parent(int root_fd, const std::vector<std::string>& parts) {
  if (force_walk.load() || !HaveOpenat2()) return UniqueFd();
  if (parts.size() == 1) return UniqueFd(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  long fd = Openat2(root_fd, Prefix(parts, parts.size() - 1).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

}  // namespace

bool HaveOpenat2() {
  int state = openat2_state.load();
  if (state == 0) {
    long fd = Openat2(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd >= 0) ::close(static_cast<int>(fd));
    state = fd >= 0 ? 1 : 2;
    openat2_state.store(state);
  }
  return state == 1;
}

void ForceComponentWalkForTesting(bool force) { force_walk.store(force); }

Result<UniqueFd> OpenBeneathAt(int root_fd, std::string_view relative, BeneathKind kind) {
  TAU_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitRelative(relative));
  UniqueFd parent = Openat2Parent(root_fd, parts);
  if (!parent.valid()) {
    TAU_ASSIGN_OR_RETURN(parent, WalkToParent(root_fd, parts, relative));
  }
  const std::string& last = parts.back();
  const bool want_dir = kind == BeneathKind::kDirectory;
  const char* wanted = want_dir ? "a folder" : "a regular file";
  struct stat before;
  if (::fstatat(parent.get(), last.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) {
      return NotFoundError(fmt::format("{}: \"{}\" does not exist", relative, Prefix(parts, parts.size())));
    }
    return ErrnoError(errno, fmt::format("{}", relative));
  }
  auto wrong_kind = [&](mode_t mode) {
    if (S_ISLNK(mode)) {
      return PermissionDeniedError(fmt::format("{}: it is a symbolic link, which is not followed", relative));
    }
    return PermissionDeniedError(fmt::format("{}: it is {}, not {}", relative, TypeName(mode), wanted));
  };
  if (want_dir ? !S_ISDIR(before.st_mode) : !S_ISREG(before.st_mode)) return wrong_kind(before.st_mode);
  // "file/" names a folder, as open(2) takes it: a file is not served as one.
  if (!want_dir && relative.ends_with('/')) {
    return PermissionDeniedError(fmt::format("{}: \"{}\" is {}, not a folder", relative, Prefix(parts, parts.size()),
                                             TypeName(before.st_mode)));
  }
  // O_NONBLOCK: should it have become a fifo since, the open cannot hang.
  int fd = ::openat(parent.get(), last.c_str(),
                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (want_dir ? O_DIRECTORY : 0));
  if (fd < 0) {
    if (errno == ELOOP) return wrong_kind(S_IFLNK);
    return ErrnoError(errno, fmt::format("{}", relative));
  }
  UniqueFd opened(fd);
  struct stat after;
  if (::fstat(fd, &after) != 0) return ErrnoError(errno, fmt::format("{}", relative));
  if (want_dir ? !S_ISDIR(after.st_mode) : !S_ISREG(after.st_mode)) return wrong_kind(after.st_mode);
  if (after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
    return PermissionDeniedError(fmt::format("{}: it was replaced while being opened", relative));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return opened;
}

Result<UniqueFd> OpenBeneath(const std::filesystem::path& root, std::string_view relative, BeneathKind kind) {
  UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd.valid()) {
    if (errno == ENOENT) return NotFoundError(fmt::format("{} does not exist", root.string()));
    return ErrnoError(errno, fmt::format("opening {}", root.string()));
  }
  return OpenBeneathAt(root_fd.get(), relative, kind);
}

Result<UniqueFd> OpenPathBeneath(const std::filesystem::path& root, const std::filesystem::path& path,
                                 BeneathKind kind) {
  std::filesystem::path rel = path.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") {
    return InvalidArgumentError(fmt::format("{} is not inside {}", path.string(), root.string()));
  }
  return OpenBeneath(root, rel.generic_string(), kind);
}

}  // namespace tau
