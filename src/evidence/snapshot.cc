#include "evidence/snapshot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/digest.h"
#include "evidence/gitignore.h"
#include "evidence/path_match.h"
#include "evidence/tar_stream.h"

namespace tau::evidence {
namespace fs = std::filesystem;

namespace {

constexpr size_t kBlock = 512;
constexpr int64_t kMaxUnpackedBytes = int64_t{1} << 30;

std::string Header(const std::string& name, char type, uint64_t mode, uint64_t size,
                   const std::string& link) {
  return TarHeader(name, type, mode, size, link);
}

void Pad(std::string* out) { out->append((kBlock - out->size() % kBlock) % kBlock, '\0'); }

// Appends one entry; names or link targets over 100 bytes get a GNU
// long-name record first.
void AppendEntry(std::string* tar, const std::string& name, char type, uint64_t mode,
                 const std::string& data, const std::string& link) {
  if (name.size() > 100) {
    *tar += Header("././@LongLink", 'L', 0, name.size() + 1, "");
    *tar += name;
    tar->push_back('\0');
    Pad(tar);
  }
  if (link.size() > 100) {
    *tar += Header("././@LongLink", 'K', 0, link.size() + 1, "");
    *tar += link;
    tar->push_back('\0');
    Pad(tar);
  }
  *tar += Header(name, type, mode, data.size(), link);
  *tar += data;
  Pad(tar);
}

Result<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return ErrnoError(errno, fmt::format("read {}", p.string()));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

uint64_t ParseOctal(const char* field, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width && field[i] >= '0' && field[i] <= '7'; ++i) v = v * 8 + (field[i] - '0');
  return v;
}

bool SafeRelative(const std::string& name) {
  if (name.empty() || name[0] == '/') return false;
  fs::path p(name);
  for (const auto& part : p) {
    if (part == "..") return false;
  }
  return true;
}

// True when every existing folder between dest and `target` is a real
// folder, not a symlink (so writing `target` cannot escape dest).
bool NoSymlinkParents(const fs::path& dest, const fs::path& relative) {
  fs::path cur = dest;
  fs::path parent = relative.parent_path();
  for (const auto& part : parent) {
    cur /= part;
    struct stat st;
    if (::lstat(cur.c_str(), &st) != 0) return true;  // created later as a folder
    if (!S_ISDIR(st.st_mode)) return false;
  }
  return true;
}

}  // namespace

std::string BlobDigest(std::string_view data) { return "sha256:" + Sha256Hex(data); }

Result<Snapshot> PackSnapshot(const fs::path& root, const SnapshotOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return NotFoundError(fmt::format("{} is not a folder", root.string()));
  }
  ExcludeMatcher matcher(options.exclude);
  GitIgnore gitignore;
  Snapshot snap;
  std::vector<std::pair<std::string, fs::file_status>> found;
  // Depth-first, so each folder's .gitignore applies to what is below it.
  std::function<Status(const std::string&)> walk = [&](const std::string& rel_dir) -> Status {
    fs::path dir = rel_dir.empty() ? root : root / rel_dir;
    const size_t rules_before = gitignore.size();
    std::error_code ec2;
    if (fs::is_regular_file(dir / ".gitignore", ec2)) {
      TAU_ASSIGN_OR_RETURN(std::string text, ReadFile(dir / ".gitignore"));
      gitignore.AddFile(rel_dir, text);
    }
    std::vector<fs::directory_entry> entries;
    for (auto it = fs::directory_iterator(dir, ec2); !ec2 && it != fs::directory_iterator(); it.increment(ec2)) {
      entries.push_back(*it);
    }
    if (ec2) return ErrnoError(ec2.value(), fmt::format("list {}", dir.string()));
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
    for (const auto& entry : entries) {
      std::string name = entry.path().filename().string();
      std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
      fs::file_status st = entry.symlink_status(ec2);
      bool is_dir = fs::is_directory(st);
      if ((is_dir && name == ".git") || gitignore.Ignored(rel, is_dir) || matcher.Excluded(rel, is_dir)) continue;
      if (!is_dir && !fs::is_regular_file(st) && !fs::is_symlink(st)) continue;  // sockets, fifos
      found.emplace_back(rel, st);
      if (is_dir) TAU_RETURN_IF_ERROR(walk(rel));
    }
    gitignore.Truncate(rules_before);
    return Status::Ok();
  };
  TAU_RETURN_IF_ERROR(walk(""));
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  std::vector<std::pair<int64_t, std::string>> sizes;
  for (const auto& [rel, st] : found) {
    if (fs::is_regular_file(st)) {
      int64_t size = static_cast<int64_t>(fs::file_size(root / rel, ec));
      snap.total_bytes += size;
      sizes.emplace_back(size, rel);
    }
  }
  if (snap.total_bytes > options.max_bytes) {
    std::sort(sizes.rbegin(), sizes.rend());
    std::string largest;
    for (size_t i = 0; i < std::min<size_t>(5, sizes.size()); ++i) {
      largest += fmt::format("\n  {:>10}  {}", fmt::format("{:.1f} MiB", sizes[i].first / 1048576.0),
                             sizes[i].second);
    }
    return ResourceExhaustedError(fmt::format(
        "the code snapshot of {} would be {:.1f} MiB; the limit is {} MiB. Largest files:{}\n"
        "Leave data and checkpoints out with run.exclude (for example exclude: [data/, \"*.ckpt\"]).",
        root.string(), snap.total_bytes / 1048576.0, options.max_bytes >> 20, largest));
  }

  std::string tar;
  for (const auto& [rel, st] : found) {
    uint64_t mode = static_cast<uint64_t>(st.permissions()) & 0777;
    SnapshotEntry entry{rel, 0, false, false};
    if (fs::is_directory(st)) {
      entry.is_dir = true;
      AppendEntry(&tar, rel + "/", '5', mode ? mode : 0755, "", "");
    } else if (fs::is_symlink(st)) {
      entry.is_symlink = true;
      AppendEntry(&tar, rel, '2', 0777, "", fs::read_symlink(root / rel, ec).string());
    } else {
      TAU_ASSIGN_OR_RETURN(std::string data, ReadFile(root / rel));
      entry.size = static_cast<int64_t>(data.size());
      AppendEntry(&tar, rel, '0', mode, data, "");
    }
    snap.entries.push_back(std::move(entry));
  }
  tar.append(2 * kBlock, '\0');

  snap.blob.resize(ZSTD_compressBound(tar.size()));
  size_t n = ZSTD_compress(snap.blob.data(), snap.blob.size(), tar.data(), tar.size(), 3);
  if (ZSTD_isError(n)) return InternalError(fmt::format("zstd: {}", ZSTD_getErrorName(n)));
  snap.blob.resize(n);
  snap.digest = BlobDigest(snap.blob);
  return snap;
}

Status UnpackSnapshot(std::string_view blob, const fs::path& dest) { return UnpackSnapshot(blob, dest, nullptr); }

Status UnpackSnapshot(std::string_view blob, const fs::path& dest, std::vector<FileDigest>* files) {
  std::map<std::string, FileDigest> digests;  // by path: a later entry replaces an earlier one
  unsigned long long size = ZSTD_getFrameContentSize(blob.data(), blob.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return InvalidArgumentError("the snapshot is not a zstd frame with a known size");
  }
  if (size > static_cast<unsigned long long>(kMaxUnpackedBytes)) {
    return InvalidArgumentError("the snapshot unpacks to more than 1 GiB");
  }
  std::string tar(size, '\0');
  size_t n = ZSTD_decompress(tar.data(), tar.size(), blob.data(), blob.size());
  if (ZSTD_isError(n) || n != size) return InvalidArgumentError("the snapshot is corrupt (zstd)");

  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return ErrnoError(ec.value(), fmt::format("create {}", dest.string()));
  std::string long_name, long_link;
  for (size_t off = 0; off + kBlock <= tar.size();) {
    const char* h = tar.data() + off;
    if (h[0] == '\0') break;
    uint64_t file_size = ParseOctal(h + 124, 12);
    char type = h[156];
    size_t data_off = off + kBlock;
    if (data_off + file_size > tar.size()) return InvalidArgumentError("the snapshot is truncated");
    std::string data(tar.data() + data_off, file_size);
    off = data_off + (file_size + kBlock - 1) / kBlock * kBlock;
    if (type == 'L' || type == 'K') {
      std::string value = data.substr(0, data.find('\0'));
      (type == 'L' ? long_name : long_link) = value;
      continue;
    }
    std::string name = long_name.empty() ? std::string(h, strnlen(h, 100)) : long_name;
    std::string link = long_link.empty() ? std::string(h + 157, strnlen(h + 157, 100)) : long_link;
    long_name.clear();
    long_link.clear();
    while (name.size() > 1 && name.back() == '/') name.pop_back();
    if (!SafeRelative(name) || !NoSymlinkParents(dest, name)) {
      return InvalidArgumentError(fmt::format("the snapshot has an unsafe path \"{}\"", name));
    }
    fs::path target = dest / name;
    auto mode = static_cast<fs::perms>(ParseOctal(h + 100, 8) & 0777);
    if (type == '5') {
      fs::create_directories(target, ec);
      if (!ec) fs::permissions(target, mode | fs::perms::owner_all, ec);
    } else if (type == '2') {
      fs::create_directories(target.parent_path(), ec);
      fs::create_symlink(link, target, ec);
    } else if (type == '0' || type == '\0') {
      fs::create_directories(target.parent_path(), ec);
      int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd < 0) return ErrnoError(errno, fmt::format("create {}", target.string()));
      size_t written = 0;
      while (written < data.size()) {
        ssize_t w = ::write(fd, data.data() + written, data.size() - written);
        if (w <= 0) {
          int err = errno;
          ::close(fd);
          return ErrnoError(err, fmt::format("write {}", target.string()));
        }
        written += static_cast<size_t>(w);
      }
      ::fchmod(fd, static_cast<mode_t>(mode));
      ::close(fd);
      if (files) {
        Sha256 hasher;
        hasher.Update(data);
        digests[name] = FileDigest{name, static_cast<int64_t>(data.size()), hasher.FinalHex()};
      }
    } else if (files) {
      digests.erase(name);
    }
    if (ec) return ErrnoError(ec.value(), fmt::format("unpack {}", target.string()));
  }
  if (files) {
    files->clear();
    for (auto& [path, f] : digests) files->push_back(std::move(f));
  }
  return Status::Ok();
}

}  // namespace tau::evidence
