#include "spec/load.h"

#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <sstream>

#include "spec/env_file.h"
#include "spec/overrides.h"
#include "spec/yaml_tree.h"

namespace tau::spec {
namespace fs = std::filesystem;

namespace {

void CheckFiles(LoadedSpec* loaded, const fs::path& base_dir, Diagnostics* diags) {
  const RunSpec& run = loaded->spec.run;
  const PositionMap& pos = loaded->positions;
  std::error_code ec;
  Location dir_at = pos.At(pos.Has("run.working_dir") ? "run.working_dir" : "run");
  if (!fs::is_directory(loaded->working_dir, ec)) {
    diags->Error(dir_at, fmt::format("run.working_dir: \"{}\" is not a folder",
                                     loaded->working_dir.string()));
    return;
  }
  if (IsPythonFileEntrypoint(run.entrypoint)) {
    fs::path script = loaded->working_dir / run.entrypoint;
    if (!fs::is_regular_file(script, ec)) {
      diags->Warning(pos.At("run.entrypoint"),
                     fmt::format("run.entrypoint: \"{}\" is not in working_dir {}; `tau run` will "
                                 "refuse this job",
                                 run.entrypoint, loaded->working_dir.string()));
    }
  }
  // The env file `tau run` will read, read now (its values are not shown).
  if (const std::string& env_file = loaded->spec.runtime.env_from_file; !env_file.empty()) {
    const fs::path p = env_file;
    ReadEnvFile(p.is_absolute() ? p : base_dir / p, pos.At("runtime.env_from_file"), diags);
  }
}

}  // namespace

Result<LoadedSpec> LoadJobSpecText(std::string_view text, std::string_view file_name,
                                   const fs::path& base_dir, const LoadOptions& options,
                                   Diagnostics* diags) {
  LoadedSpec loaded;
  loaded.file = std::string(file_name);
  Node root;
  int errors_before = diags->error_count();
  if (ReadYaml(text, file_name, ReadLimits{}, &root, diags)) {
    for (const std::string& assignment : options.overrides) ApplyOverride(assignment, &root, diags);
    DecodeJobSpec(root, &loaded.spec, &loaded.positions, diags);
    if (diags->error_count() == errors_before) {
      ValidateJobSpec(loaded.spec, loaded.positions, diags);
    }
  }
  fs::path wd = loaded.spec.run.working_dir;
  loaded.working_dir = (wd.is_absolute() ? wd : base_dir / wd).lexically_normal();
  if (loaded.working_dir.has_filename() == false && loaded.working_dir != "/") {
    loaded.working_dir = loaded.working_dir.parent_path();
  }
  if (diags->error_count() == errors_before && options.check_files) CheckFiles(&loaded, base_dir, diags);
  int errors = diags->error_count() - errors_before;
  if (errors > 0) {
    return InvalidArgumentError(
        fmt::format("{}: {} error{}", file_name, errors, errors == 1 ? "" : "s"));
  }
  return loaded;
}

Result<LoadedSpec> LoadJobSpecFile(const std::string& path, const LoadOptions& options,
                                   Diagnostics* diags) {
  std::error_code ec;
  // Read at most one byte past the limit; the reader reports the size.
  constexpr size_t kReadCap = (1 << 20) + 1;
  if (path == kStdinPath) {
    std::string text(kReadCap, '\0');
    std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(std::cin.gcount()));
    if (std::cin.bad()) return ErrnoError(errno, "cannot read the standard input");
    return LoadJobSpecText(text, kStdinName, fs::current_path(ec), options, diags);
  }
  if (fs::is_directory(path, ec)) {
    return InvalidArgumentError(fmt::format("{}: is a folder, not a job spec file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError(errno, fmt::format("cannot read {}", path));
  std::string text(kReadCap, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return ErrnoError(errno, fmt::format("cannot read {}", path));
  fs::path base = fs::absolute(fs::path(path), ec).parent_path();
  return LoadJobSpecText(text, path, base, options, diags);
}

}  // namespace tau::spec
