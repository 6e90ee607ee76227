#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "evidence/file_list.h"

namespace tau::evidence {

// A job's code snapshot: the files under its working_dir, packed as a
// deterministic tar (sorted paths, no owners or times, modes kept) and
// compressed with zstd. Its digest depends only on paths, contents and
// modes, so the same tree always gives the same blob. Format:
// docs/snapshots.md.
struct SnapshotEntry {
  std::string path;  // relative, '/'-separated
  int64_t size = 0;
  bool is_dir = false;
  bool is_symlink = false;
};

struct Snapshot {
  std::string blob;    // tar.zst bytes
  std::string digest;  // "sha256:<hex>" of blob
  std::vector<SnapshotEntry> entries;
  int64_t total_bytes = 0;  // sum of file sizes
};

struct SnapshotOptions {
  std::vector<std::string> exclude;  // run.exclude patterns
  int64_t max_bytes = int64_t{100} << 20;
};

// Packs `root`. `.git` folders are always left out, and so is whatever the
// .gitignore files under `root` ignore, as git does (gitignore.h). Over `max_bytes` of file
// content it fails with ResourceExhausted naming the largest files, so the
// user knows what to exclude.
Result<Snapshot> PackSnapshot(const std::filesystem::path& root, const SnapshotOptions& options);

// Unpacks a blob into `dest` (created if absent). Entries that would land
// outside `dest` (absolute paths, "..", writing through a symlink) are
// refused.
Status UnpackSnapshot(std::string_view blob, const std::filesystem::path& dest);
// The same, also giving the path, size and SHA-256 of every regular file it
// wrote, sorted by path (what ListFileDigests(dest) would then list).
Status UnpackSnapshot(std::string_view blob, const std::filesystem::path& dest, std::vector<FileDigest>* files);

// "sha256:<hex>" of `data`.
std::string BlobDigest(std::string_view data);

}  // namespace tau::evidence
