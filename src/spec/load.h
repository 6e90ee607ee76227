#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "spec/decode.h"
#include "spec/diagnostics.h"
#include "spec/job_spec.h"

namespace tau::spec {

struct LoadOptions {
  // `--set PATH=VALUE` overrides, applied in order before validation.
  std::vector<std::string> overrides;
  // Check that working_dir exists (error) and that a .py entrypoint is in
  // it (warning).
  bool check_files = true;
};

// A decoded, validated spec and where it came from.
struct LoadedSpec {
  JobSpec spec;
  PositionMap positions;
  std::string file;                        // as given
  std::filesystem::path working_dir;       // absolute, resolved
};

// The path that names the standard input (`tau validate -`), and the file
// name its diagnostics carry.
inline constexpr std::string_view kStdinPath = "-";
inline constexpr std::string_view kStdinName = "<stdin>";

// Reads, parses, overrides, decodes and validates a spec file (`-`: the
// standard input, whose relative paths resolve against the current folder). Every problem
// (errors and warnings, each with FILE:LINE:COL) is added to `diags`.
// Returns InvalidArgument when any error was found, NotFound or
// PermissionDenied when the file cannot be read.
Result<LoadedSpec> LoadJobSpecFile(const std::string& path, const LoadOptions& options,
                                   Diagnostics* diags);

// The same for text already in memory; `file_name` is used in messages and
// relative paths resolve against `base_dir`.
Result<LoadedSpec> LoadJobSpecText(std::string_view text, std::string_view file_name,
                                   const std::filesystem::path& base_dir,
                                   const LoadOptions& options, Diagnostics* diags);

}  // namespace tau::spec
