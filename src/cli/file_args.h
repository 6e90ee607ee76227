#pragma once

// File arguments as kubectl takes them: files, folders of manifests, and
// `-` for the standard input.

#include <string>
#include <vector>

#include "common/result.h"

namespace tau::cli {

// `args` with every folder replaced by the .yaml, .yml and .json files
// directly in it, sorted by name (not recursive, like `kubectl apply -f
// DIR`); everything else (files, `-`, paths that do not exist, which the
// reader then reports) stays as given, in order. A folder with no such file
// or `-` given twice is an InvalidArgument naming it.
Result<std::vector<std::string>> ExpandFileArgs(const std::vector<std::string>& args);

// The whole text of `path`, or of the standard input for `-`.
Result<std::string> ReadFileArg(const std::string& path);

}  // namespace tau::cli
