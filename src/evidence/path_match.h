#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tau::evidence {

// Patterns that leave files out of a code snapshot (`run.exclude`), matched
// against paths relative to the snapshot root:
//   - `*` and `?` match within one path part, `**` across parts;
//   - a pattern without '/' (other than a trailing one) matches the name at
//     any depth (`*.ckpt`, `__pycache__/`); one with '/' is anchored at the
//     root (`data/raw`, `src/**/*.tmp`);
//   - a trailing '/' matches folders only.
class ExcludeMatcher {
 public:
  explicit ExcludeMatcher(std::vector<std::string> patterns);
  bool Excluded(std::string_view relative_path, bool is_dir) const;

 private:
  struct Pattern {
    std::string glob;
    bool dir_only = false;
    bool anchored = false;
  };
  std::vector<Pattern> patterns_;
};

// Glob match where `*` and `?` stop at '/', and `**` crosses it.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace tau::evidence
