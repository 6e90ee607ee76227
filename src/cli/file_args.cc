#include "cli/file_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tau::cli {
namespace fs = std::filesystem;

Result<std::vector<std::string>> ExpandFileArgs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  bool stdin_seen = false;
  for (const std::string& arg : args) {
    if (arg == "-") {
      if (stdin_seen) return InvalidArgumentError("- (the standard input) is given more than once");
      stdin_seen = true;
      out.push_back(arg);
      continue;
    }
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      out.push_back(arg);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(arg, ec)) {
      const std::string ext = entry.path().extension().string();
      if ((ext == ".yaml" || ext == ".yml" || ext == ".json") && entry.is_regular_file(ec)) {
        found.push_back(entry.path().string());
      }
    }
    if (ec) return ErrnoError(ec.value(), fmt::format("listing {}", arg));
    if (found.empty()) {
      return InvalidArgumentError(fmt::format("{}: folder holds no .yaml, .yml or .json file", arg));
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Result<std::string> ReadFileArg(const std::string& path) {
  std::ostringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
    if (std::cin.bad()) return ErrnoError(errno, "cannot read the standard input");
    return buf.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError(errno, fmt::format("cannot read {}", path));
  buf << in.rdbuf();
  if (in.bad()) return ErrnoError(errno, fmt::format("cannot read {}", path));
  return buf.str();
}

}  // namespace tau::cli
