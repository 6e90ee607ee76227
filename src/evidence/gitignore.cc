#include "evidence/gitignore.h"

#include <fnmatch.h>

#include "evidence/path_match.h"

namespace tau::evidence {
namespace {

// fnmatch with FNM_PATHNAME for '[...]' classes; '**' handled by GlobMatch.
bool Matches(const std::string& glob, std::string_view text) {
  if (glob.find("**") != std::string::npos || glob.find('[') == std::string::npos) return GlobMatch(glob, text);
  return ::fnmatch(glob.c_str(), std::string(text).c_str(), FNM_PATHNAME) == 0;
}

}  // namespace

void GitIgnore::AddFile(const std::string& dir, std::string_view text) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string line(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    start = end == std::string_view::npos ? text.size() + 1 : end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Trailing spaces go unless the last one is escaped.
    while (!line.empty() && line.back() == ' ' && !(line.size() >= 2 && line[line.size() - 2] == '\\')) line.pop_back();
    if (line.size() >= 2 && line[line.size() - 2] == '\\' && line.back() == ' ') line.erase(line.size() - 2, 1);
    if (line.empty() || line[0] == '#') continue;
    Rule rule;
    rule.dir = dir;
    if (line[0] == '!') {
      rule.negate = true;
      line.erase(0, 1);
    } else if (line[0] == '\\' && line.size() > 1 && (line[1] == '#' || line[1] == '!')) {
      line.erase(0, 1);
    }
    if (line.size() > 1 && line.back() == '/') {
      rule.dir_only = true;
      line.pop_back();
    }
    if (line.find('/') != std::string::npos) rule.anchored = true;
    if (line.starts_with("/")) line.erase(0, 1);
    if (line.empty()) continue;
    rule.glob = line;
    rules_.push_back(std::move(rule));
  }
}

bool GitIgnore::Ignored(std::string_view path, bool is_dir) const {
  bool ignored = false;
  for (const Rule& r : rules_) {
    if (r.dir_only && !is_dir) continue;
    std::string_view rel = path;
    if (!r.dir.empty()) {
      if (!(path.size() > r.dir.size() && path.starts_with(r.dir) && path[r.dir.size()] == '/')) continue;
      rel = path.substr(r.dir.size() + 1);
    }
    std::string_view subject = rel;
    if (!r.anchored) {
      size_t slash = rel.rfind('/');
      if (slash != std::string_view::npos) subject = rel.substr(slash + 1);
    }
    if (Matches(r.glob, subject)) ignored = !r.negate;
  }
  return ignored;
}

}  // namespace tau::evidence
