#include "evidence/git_info.h"

#include <cstdlib>
#include <system_error>

#include "common/subprocess.h"

namespace tau::evidence {
namespace {

std::optional<std::string> Git(const std::filesystem::path& dir, std::vector<std::string> args, size_t max = 1 << 16,
                               bool* truncated = nullptr) {
  args.insert(args.begin(), {"git", "-C", dir.string()});
  auto run = RunCapture(args, "", max);
  if (!run.ok() || run->exit_code != 0) return std::nullopt;
  if (truncated) *truncated = run->truncated;
  return run->out;
}

// Whether `dir` may be inside a git work tree: it or a folder above it
// holds a .git entry, or the environment points git elsewhere. Answered
// without starting git, which costs more than the rest of a submit when
// there is no repository.
bool MayBeInGitWorkTree(const std::filesystem::path& dir) {
  if (std::getenv("GIT_DIR") != nullptr || std::getenv("GIT_WORK_TREE") != nullptr) return true;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) return true;  // let git decide
  for (;;) {
    if (std::filesystem::exists(p / ".git", ec)) return true;
    if (!p.has_relative_path()) return false;
    p = p.parent_path();
  }
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::optional<GitInfo> ReadGitInfo(const std::filesystem::path& dir, size_t max_diff_bytes) {
  if (!MayBeInGitWorkTree(dir)) return std::nullopt;
  auto inside = Git(dir, {"rev-parse", "--is-inside-work-tree"});
  if (!inside || Trim(*inside) != "true") return std::nullopt;
  GitInfo info;
  info.commit = Trim(Git(dir, {"rev-parse", "--verify", "-q", "HEAD"}).value_or(""));
  info.branch = Trim(Git(dir, {"rev-parse", "--abbrev-ref", "HEAD"}).value_or(""));
  info.dirty = !Git(dir, {"status", "--porcelain", "--untracked-files=no"}).value_or("").empty();
  if (info.dirty && !info.commit.empty()) {
    info.diff = Git(dir, {"diff", "HEAD", "--no-color", "--no-ext-diff"}, max_diff_bytes, &info.diff_truncated)
                    .value_or("");
  }
  return info;
}

}  // namespace tau::evidence
