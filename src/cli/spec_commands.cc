#include "cli/spec_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/file_args.h"
#include "cli/terminal.h"
#include "cli/version.h"
#include "common/names.h"
#include "common/strings.h"
#include "render/render.h"
#include "render/yaml_emitter.h"
#include "spec/fields.h"
#include "spec/json_codec.h"
#include "spec/decode.h"
#include "spec/load.h"

namespace tau::cli {
namespace {

// Prints diagnostics the way compilers do, colouring the severity when
// stderr is a terminal.
void PrintDiagnostics(const spec::Diagnostics& diags) {
  const bool color = UseColor(stderr);
  for (const spec::Diagnostic& d : diags.Sorted()) {
    std::string line = spec::FormatDiagnostic(d);
    if (color) {
      std::string_view tag = d.severity == spec::Severity::kError ? "error:" : "warning:";
      size_t at = line.find(std::string(" ") + std::string(tag));
      if (at != std::string::npos) {
        line = Styled(line.substr(0, at), Style::kBold, true) + " " +
               Styled(tag, d.severity == spec::Severity::kError ? Style::kRed : Style::kYellow, true) +
               line.substr(at + 1 + tag.size());
      }
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

// Loads one spec file; prints its diagnostics. nullopt when it has errors
// or cannot be read (the reason is printed).
std::optional<spec::LoadedSpec> Load(const std::string& file, const std::vector<std::string>& overrides,
                                     bool check_files) {
  spec::Diagnostics diags;
  spec::LoadOptions options;
  options.overrides = overrides;
  options.check_files = check_files;
  auto loaded = spec::LoadJobSpecFile(file, options, &diags);
  PrintDiagnostics(diags);
  if (!loaded.ok()) {
    if (loaded.error().code() != StatusCode::kInvalidArgument || diags.items().empty()) {
      std::fprintf(stderr, "tau: %s\n", loaded.error().message().c_str());
    }
    return std::nullopt;
  }
  return std::move(*loaded);
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string Summary(const spec::JobSpec& s) {
  std::string what = fmt::format("{} \"{}\"", spec::WorkloadKindName(s.run.workload_kind), s.name);
  std::string per_worker = fmt::format("{} CPU{}, {} memory", s.compute.cpus.ToString(),
                                       s.compute.cpus == Quantity::FromUnits(1) ? "" : "s",
                                       s.compute.memory.ToString());
  if (s.compute.gpus > 0) {
    per_worker = fmt::format("{}{}, {}", Plural(s.compute.gpus, "GPU", "GPUs"),
                             s.compute.gpu_class == "any" ? "" : " (" + s.compute.gpu_class + ")",
                             per_worker);
  }
  return fmt::format("{} in {}/{}: {}, each with {}", what, s.workspace, s.queue,
                     Plural(s.compute.workers, "worker", "workers"), per_worker);
}

}  // namespace

int RunValidate(const ValidateOptions& options) {
  auto files = ExpandFileArgs(options.files);
  if (!files.ok()) {
    std::fprintf(stderr, "tau validate: %s\n", files.error().message().c_str());
    return kExitUsage;
  }
  int failed = 0;
  const bool color = UseColor(stdout);
  for (const std::string& file : *files) {
    auto loaded = Load(file, options.overrides, /*check_files=*/true);
    if (!loaded) {
      ++failed;
      continue;
    }
    if (options.output == "json") {
      std::printf("%s\n", spec::JobSpecToJson(loaded->spec, 2).c_str());
    } else if (options.output == "yaml") {
      if (files->size() > 1) std::printf("---\n");
      std::printf("%s", render::EmitYaml(spec::JobSpecToJsonValue(loaded->spec)).c_str());
    } else if (!options.quiet) {
      const std::string shown = file == spec::kStdinPath ? std::string(spec::kStdinName) : file;
      std::printf("%s: %s %s\n", shown.c_str(), Styled("valid", Style::kGreen, color).c_str(),
                  Summary(loaded->spec).c_str());
    }
  }
  return failed > 0 ? kExitUsage : kExitOk;
}

int RunRender(const RenderOptions& options) {
  auto files = ExpandFileArgs(options.files);
  if (!files.ok()) {
    std::fprintf(stderr, "tau render: %s\n", files.error().message().c_str());
    return kExitUsage;
  }
  if (!options.object_name.empty() && files->size() > 1) {
    std::fprintf(stderr, "tau render: --object-name names the objects of one spec; %zu files were given\n",
                 files->size());
    return kExitUsage;
  }
  // Every spec is checked (as tau validate checks it, files included)
  // before anything is printed: either all render or none.
  std::vector<spec::LoadedSpec> specs;
  bool failed = false;
  for (const std::string& file : *files) {
    auto loaded = Load(file, options.overrides, /*check_files=*/true);
    if (!loaded) {
      failed = true;
      continue;
    }
    if (!options.object_name.empty()) {
      std::vector<std::string> problems;
      if (Status st = CheckDns1123Label(options.object_name); !st.ok()) problems.push_back(st.message());
      for (std::string& p : spec::WorkloadNameProblems(options.object_name, loaded->spec)) {
        problems.push_back(std::move(p));
      }
      for (const std::string& p : problems) {
        std::fprintf(stderr, "tau render: --object-name \"%s\": %s\n", ShortenUtf8(options.object_name, 80).c_str(),
                     p.c_str());
      }
      if (!problems.empty()) return kExitUsage;
    }
    specs.push_back(std::move(*loaded));
  }
  if (failed) return kExitUsage;
  render::RenderOptions render_options;
  render_options.object_name = options.object_name;
  if (options.output == "json") {
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", nlohmann::json::array()}};
    for (const spec::LoadedSpec& loaded : specs) {
      for (auto& object : render::RenderObjects(loaded.spec, render_options)) {
        list["items"].push_back(std::move(object));
      }
    }
    std::printf("%s\n", list.dump(2).c_str());
  } else {
    for (size_t i = 0; i < specs.size(); ++i) {
      if (i > 0) std::printf("---\n");
      std::printf("%s", render::RenderYaml(specs[i].spec, render_options).c_str());
    }
  }
  return kExitOk;
}

int RunSchema() {
  std::printf("%s\n", spec::JobSpecJsonSchema().c_str());
  return kExitOk;
}

namespace {

std::string FirstSentence(std::string_view text) {
  size_t end = text.find(". ");
  return std::string(end == std::string_view::npos ? text : text.substr(0, end + 1));
}

// The field's example nested under its parents: "compute:\n  gpus: 2".
std::string NestedExample(const spec::FieldDoc& f) {
  std::vector<std::string> parts = Split(f.path, '.');
  std::string out;
  std::string indent;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    out += indent + parts[i] + ":\n";
    indent += "  ";
  }
  for (const std::string& line : Split(f.example, '\n')) out += indent + line + "\n";
  return out;
}

}  // namespace

int RunExplain(const std::string& path) {
  const bool color = UseColor(stdout);
  if (!path.empty() && spec::FindField(path) == nullptr) {
    std::vector<std::string_view> paths;
    for (const auto& f : spec::AllFields()) paths.push_back(f.path);
    std::string hint;
    if (auto near = ClosestMatch(path, paths)) hint = fmt::format("; did you mean \"{}\"?", *near);
    std::fprintf(stderr, "tau explain: no field \"%s\" in the job spec%s\n", path.c_str(), hint.c_str());
    return kExitUsage;
  }
  if (!path.empty()) {
    const spec::FieldDoc& f = *spec::FindField(path);
    std::printf("%s %s\n", Styled("FIELD:", Style::kBold, color).c_str(), std::string(f.path).c_str());
    std::printf("%s %s\n", Styled("TYPE:", Style::kBold, color).c_str(), std::string(f.type_text).c_str());
    if (!f.values.empty()) {
      std::printf("%s %s\n", Styled("VALUES:", Style::kBold, color).c_str(), Join(f.values, ", ").c_str());
    }
    if (f.required) std::printf("%s yes\n", Styled("REQUIRED:", Style::kBold, color).c_str());
    if (!f.default_text.empty()) {
      std::printf("%s %s\n", Styled("DEFAULT:", Style::kBold, color).c_str(),
                  std::string(f.default_text).c_str());
    }
    std::printf("\n%s\n\n%s\n%s", std::string(f.description).c_str(),
                Styled("EXAMPLE:", Style::kBold, color).c_str(), NestedExample(f).c_str());
  }
  std::vector<std::string_view> children = spec::ChildFieldNames(path);
  if (!children.empty()) {
    std::printf("%s%s\n", path.empty() ? "" : "\n",
                Styled(path.empty() ? "FIELDS (tau explain FIELD for details):" : "FIELDS:", Style::kBold, color)
                    .c_str());
    size_t width = 0;
    for (std::string_view c : children) width = std::max(width, c.size());
    for (std::string_view c : children) {
      std::string child_path = path.empty() ? std::string(c) : path + "." + std::string(c);
      const spec::FieldDoc& f = *spec::FindField(child_path);
      std::printf("  %-*s  %s%s\n", static_cast<int>(width), std::string(c).c_str(),
                  FirstSentence(f.description).c_str(), f.required ? " (required)" : "");
    }
  }
  return kExitOk;
}

int RunExplainMarkdown() {
  std::printf("%s", spec::FieldReferenceMarkdown().c_str());
  return kExitOk;
}

int RunVersion(const std::string& output) {
  nlohmann::json v = {{"version", kVersion}, {"commit", kGitCommit}};
  if (output == "json") {
    std::printf("%s\n", v.dump().c_str());
  } else if (output == "yaml") {
    std::printf("%s", render::EmitYaml(v).c_str());
  } else {
    std::printf("tau %s (%s)\n", kVersion, kGitCommit);
  }
  return kExitOk;
}

}  // namespace tau::cli
