#pragma once

#include <string>
#include <vector>

#include "spec/load.h"

namespace tau::spec::testing {

// Loads `text` as "job.yaml" without touching the file system.
struct Loaded {
  Result<LoadedSpec> result;
  std::string diagnostics;  // Diagnostics::Format()
};

inline Loaded LoadText(const std::string& text, std::vector<std::string> overrides = {}) {
  Diagnostics diags;
  LoadOptions options;
  options.overrides = std::move(overrides);
  options.check_files = false;
  auto result = LoadJobSpecText(text, "job.yaml", "/work", options, &diags);
  return {std::move(result), diags.Format()};
}

}  // namespace tau::spec::testing
