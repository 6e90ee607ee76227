#include "evidence/path_match.h"

namespace tau::evidence {

bool GlobMatch(std::string_view p, std::string_view t) {
  if (p.empty()) return t.empty();
  if (p.starts_with("**")) {
    std::string_view rest = p.substr(2);
    // "**/" also matches zero folders.
    if (rest.starts_with('/') && GlobMatch(rest.substr(1), t)) return true;
    for (size_t i = 0; i <= t.size(); ++i) {
      if (GlobMatch(rest, t.substr(i))) return true;
    }
    return false;
  }
  if (p[0] == '*') {
    for (size_t i = 0; i <= t.size(); ++i) {
      if (GlobMatch(p.substr(1), t.substr(i))) return true;
      if (i < t.size() && t[i] == '/') break;
    }
    return false;
  }
  if (t.empty()) return false;
  bool one = p[0] == '?' ? t[0] != '/' : p[0] == t[0];
  return one && GlobMatch(p.substr(1), t.substr(1));
}

ExcludeMatcher::ExcludeMatcher(std::vector<std::string> patterns) {
  for (std::string& raw : patterns) {
    Pattern p;
    std::string g = raw;
    while (g.size() > 1 && g.back() == '/') {
      g.pop_back();
      p.dir_only = true;
    }
    if (g.starts_with("./")) g = g.substr(2);
    if (g.starts_with("/")) g = g.substr(1);
    p.anchored = g.find('/') != std::string::npos;
    p.glob = g;
    if (!g.empty()) patterns_.push_back(std::move(p));
  }
}

bool ExcludeMatcher::Excluded(std::string_view path, bool is_dir) const {
  std::string_view base = path;
  size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) base = path.substr(slash + 1);
  for (const Pattern& p : patterns_) {
    if (p.dir_only && !is_dir) continue;
    if (p.anchored ? GlobMatch(p.glob, path) : GlobMatch(p.glob, base)) return true;
  }
  return false;
}

}  // namespace tau::evidence
