#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "spec/diagnostics.h"
#include "spec/job_spec.h"

namespace tau::spec {

// Parses an env file: one KEY=VALUE per line; blank lines and lines
// starting with '#' are skipped; "export KEY=VALUE" is accepted; a value in
// matching single or double quotes loses them; a value that opens a quote
// and does not close it on its line is an error. Names follow the rules of
// runtime.env (valid, not reserved). Problems go to `diags` as FILE:LINE:COL.
StringPairs ParseEnvFile(std::string_view text, std::string_view file_name, Diagnostics* diags);

// Reads and parses the env file at `path` ("-": standard input, once).
// A folder, a missing or unreadable file is an error at `at` (where the
// spec or the command line names it); nullopt when anything was wrong.
std::optional<StringPairs> ReadEnvFile(const std::filesystem::path& path, const Location& at, Diagnostics* diags);

}  // namespace tau::spec
