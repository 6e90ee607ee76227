#include "evidence/file_list.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "common/beneath.h"
#include "common/digest.h"
#include "common/strings.h"
#include "common/unique_fd.h"

namespace tau::evidence {
namespace fs = std::filesystem;

Result<std::string> FdSha256Hex(int fd) {
  Sha256 hasher;
  std::string buf(1 << 20, '\0');
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, "reading a file to digest it");
    if (n == 0) break;
    hasher.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  return hasher.FinalHex();
}

Result<std::string> FileSha256Hex(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ELOOP) {
      return PermissionDeniedError(fmt::format("{} is a symbolic link, which is not followed", path.string()));
    }
    return ErrnoError(errno, fmt::format("cannot read {}", path.string()));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, fmt::format("cannot read {}", path.string()));
  if (!S_ISREG(st.st_mode)) return PermissionDeniedError(fmt::format("{} is not a regular file", path.string()));
  auto hex = FdSha256Hex(fd.get());
  if (!hex.ok()) return hex.error().WithContext(path.string());
  return hex;
}

namespace {

// Lists `dir_fd` (whose path is `prefix`) into `out`, depth first.
Status Walk(int dir_fd, const std::string& prefix, int depth, std::vector<FileDigest>* out) {
  if (depth > 256) {
    return InvalidArgumentError(fmt::format("{}… is nested more than 256 folders deep", Utf8Prefix(prefix, 200)));
  }
  int copy = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return ErrnoError(errno, fmt::format("listing {}", prefix.empty() ? "." : prefix));
  DIR* dir = ::fdopendir(copy);
  if (!dir) {
    ::close(copy);
    return ErrnoError(errno, fmt::format("listing {}", prefix.empty() ? "." : prefix));
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoError(err, fmt::format("listing {}", prefix.empty() ? "." : prefix));
  for (const std::string& name : names) {
    const std::string rel = prefix.empty() ? name : prefix + "/" + name;
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed while listing
    if (S_ISDIR(st.st_mode)) {
      auto sub = OpenBeneathAt(dir_fd, name, BeneathKind::kDirectory);
      if (!sub.ok()) continue;  // replaced while listing
      TAU_RETURN_IF_ERROR(Walk(sub->get(), rel, depth + 1, out));
    } else if (S_ISREG(st.st_mode)) {
      auto fd = OpenBeneathAt(dir_fd, name, BeneathKind::kRegularFile);
      if (!fd.ok()) continue;
      struct stat opened;
      if (::fstat(fd->get(), &opened) != 0) continue;
      auto digest = FdSha256Hex(fd->get());
      if (!digest.ok()) return digest.error().WithContext(rel);
      out->push_back({rel, static_cast<int64_t>(opened.st_size), *digest});
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<FileDigest>> ListFileDigestsAt(int dir_fd) {
  std::vector<FileDigest> out;
  TAU_RETURN_IF_ERROR(Walk(dir_fd, "", 0, &out));
  std::sort(out.begin(), out.end(), [](const FileDigest& a, const FileDigest& b) { return a.path < b.path; });
  return out;
}

Result<std::vector<FileDigest>> ListFileDigests(const fs::path& root) {
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    const int err = errno;
    struct stat st;
    if (err == ENOENT) return std::vector<FileDigest>{};
    if (::lstat(root.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return PermissionDeniedError(fmt::format("{} is a symbolic link, which is not followed", root.string()));
    }
    return ErrnoError(err, fmt::format("listing {}", root.string()));
  }
  auto files = ListFileDigestsAt(fd.get());
  if (!files.ok()) return files.error().WithContext(fmt::format("listing {}", root.string()));
  return files;
}

bool IsSecretEnvName(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "PWD" || upper == "OLDPWD") return false;  // the shell's working folders
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "COOKIE"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  // Short words count only as a whole part of the name (GH_PAT, DB_PASS,
  // SENTRY_DSN), so PATH or AUTHOR are not taken for secrets.
  size_t begin = 0;
  while (begin <= upper.size()) {
    size_t end = upper.find_first_of("_-.", begin);
    if (end == std::string::npos) end = upper.size();
    std::string_view part = std::string_view(upper).substr(begin, end - begin);
    for (const char* word : {"PAT", "PASS", "PW", "PWD", "AUTH", "CREDS", "DSN", "APIKEY"}) {
      if (part == word) return true;
    }
    begin = end + 1;
  }
  return false;
}

}  // namespace tau::evidence
