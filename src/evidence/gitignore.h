#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tau::evidence {

// .gitignore rules as git applies them, for code snapshots:
//   - each .gitignore holds patterns relative to its own folder; blank
//     lines and lines starting with '#' are skipped ("\#" and "\!" escape);
//     trailing spaces are dropped unless escaped;
//   - '!' re-includes what an earlier pattern excluded, but nothing inside
//     an excluded folder (git does not look inside it, and neither do we);
//   - a pattern with a '/' before its end is anchored to its folder,
//     otherwise it matches a name at any depth below it; a trailing '/'
//     matches folders only; '*', '?', '[...]' within a part, '**' across parts;
//   - the last matching rule wins, and deeper files come after shallower ones.
class GitIgnore {
 public:
  // Adds the rules of the .gitignore in folder `dir` (relative to the root,
  // "" for the root itself) from its text.
  void AddFile(const std::string& dir, std::string_view text);
  // Whether `path` (relative to the root) is ignored.
  bool Ignored(std::string_view path, bool is_dir) const;
  // The number of rules, and dropping the rules added after that number:
  // a walk truncates when it leaves a folder, so lookups stay short.
  size_t size() const { return rules_.size(); }
  void Truncate(size_t n) { rules_.resize(n); }

 private:
  struct Rule {
    std::string dir;  // "" or "a/b"
    std::string glob;
    bool negate = false;
    bool dir_only = false;
    bool anchored = false;
  };
  std::vector<Rule> rules_;
};

}  // namespace tau::evidence
