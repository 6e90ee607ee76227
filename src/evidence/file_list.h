#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tau::evidence {

// A regular file under a folder, with its SHA-256.
struct FileDigest {
  std::string path;  // relative, '/'-separated
  int64_t size = 0;
  std::string sha256;  // hex
};

// Every regular file under `root`, sorted by path. Symbolic links (to
// files or folders), fifos, devices and sockets are left out and never
// opened, and every folder and file is opened beneath its parent without
// following links (common/beneath.h), so a tree changed while it is listed
// cannot lead outside it. A missing root lists nothing; a root that is
// itself a symbolic link is refused (PermissionDenied).
Result<std::vector<FileDigest>> ListFileDigests(const std::filesystem::path& root);
// The same for an open folder.
Result<std::vector<FileDigest>> ListFileDigestsAt(int dir_fd);

// Hex SHA-256 of a regular file's bytes, read in chunks. A symbolic link,
// fifo or device at `path` is refused (PermissionDenied), not followed or
// opened.
Result<std::string> FileSha256Hex(const std::filesystem::path& path);
// Hex SHA-256 of what is left to read from `fd`.
Result<std::string> FdSha256Hex(int fd);

// True for environment variable names that hold secrets: they contain KEY,
// TOKEN, SECRET or PASSWORD, in any case. Their values never enter evidence.
bool IsSecretEnvName(std::string_view name);

}  // namespace tau::evidence
