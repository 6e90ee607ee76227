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

// Every regular file under `root`, sorted by path (symlinks are not
// followed). A missing root lists nothing.
Result<std::vector<FileDigest>> ListFileDigests(const std::filesystem::path& root);

// Hex SHA-256 of a file's bytes, read in chunks.
Result<std::string> FileSha256Hex(const std::filesystem::path& path);

// True for environment variable names that hold secrets: they contain KEY,
// TOKEN, SECRET or PASSWORD, in any case. Their values never enter evidence.
bool IsSecretEnvName(std::string_view name);

}  // namespace tau::evidence
