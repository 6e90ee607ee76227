#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace tau {

struct CapturedRun {
  int exit_code = -1;  // 128 + N when signal N killed it
  std::string out;     // stdout, cut at max_output bytes
  bool truncated = false;
};

// Runs `argv` (argv[0] looked up in PATH) in `cwd` ("" for the current
// folder) with stdin from /dev/null and stderr discarded, and captures its
// stdout. Fails only when the program cannot be started; a non-zero exit is
// a result.
Result<CapturedRun> RunCapture(const std::vector<std::string>& argv, const std::string& cwd = "",
                               size_t max_output = size_t{8} << 20);

}  // namespace tau
