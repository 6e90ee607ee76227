#pragma once

#include <string>
#include <vector>

namespace tau::cli {

// The commands that work on spec files alone. None of them needs or starts
// a server. Each returns the process exit code (exit_codes.h).

struct ValidateOptions {
  std::vector<std::string> files;
  std::vector<std::string> overrides;  // --set PATH=VALUE
  std::string output;                  // "" (summary), "json" or "yaml": the resolved spec
  bool quiet = false;                  // errors and warnings only
};
int RunValidate(const ValidateOptions& options);

// Renders every spec of `files` (files, folders of them, `-` for stdin),
// each checked like tau validate checks it; nothing is printed unless all
// are valid. --object-name (one spec only) is checked like a job name.
struct RenderOptions {
  std::vector<std::string> files;
  std::vector<std::string> overrides;
  std::string object_name;  // metadata.name; default: the spec's name
  std::string output = "yaml";  // "yaml" or "json"
};
int RunRender(const RenderOptions& options);

int RunSchema();

// `path` empty: the top-level fields.
int RunExplain(const std::string& path);

// Every field, as the Markdown reference in docs/spec.md.
int RunExplainMarkdown();

int RunVersion(const std::string& output);

}  // namespace tau::cli
