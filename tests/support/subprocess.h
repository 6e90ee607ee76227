#pragma once

#include <map>
#include <string>
#include <vector>

namespace tau::testing {

struct CommandResult {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is a path) in `cwd` with the current environment plus
// `env`, waits for it, and returns its exit code and captured output.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& cwd = "",
                         const std::map<std::string, std::string>& env = {});

// Path of a program built by this project (build/bin/NAME).
std::string BinPath(const std::string& name);

// The source tree's root.
std::string SourcePath(const std::string& relative);

}  // namespace tau::testing
