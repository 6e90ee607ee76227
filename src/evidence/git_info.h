#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tau::evidence {

// The git state of a job's working_dir at submit, for its evidence.
struct GitInfo {
  std::string commit;  // HEAD's full hash; "" in a repository without commits
  std::string branch;  // "HEAD" when detached
  bool dirty = false;  // tracked files differ from HEAD (untracked ones do not count)
  std::string diff;    // `git diff HEAD` of tracked files, cut at max_diff_bytes
  bool diff_truncated = false;
};

// nullopt when `dir` is not inside a git work tree or git is not installed.
std::optional<GitInfo> ReadGitInfo(const std::filesystem::path& dir, size_t max_diff_bytes = size_t{1} << 20);

}  // namespace tau::evidence
