// `tau`: the command-line client. This is the only file that includes CLI11
// (it is slow to compile); commands live in their own files and take plain
// option structs.

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/exit_codes.h"
#include "cli/spec_commands.h"

namespace tau::cli {
namespace {

void AddSetOption(CLI::App* cmd, std::vector<std::string>* overrides) {
  cmd->add_option("--set", *overrides,
                  "Override a spec field before validation, e.g. --set compute.gpus=2 (repeatable)")
      ->type_name("PATH=VALUE")
      ->allow_extra_args(false);
}

int Main(int argc, char** argv) {
  CLI::App app{"tau: run, queue and watch AI workloads on GPU machines", "tau"};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.footer("Exit codes: 0 success, 1 failure, 2 usage or validation error.\n"
             "Docs: docs/cli.md and docs/spec.md in the TauGrid source tree.");

  int exit_code = kExitOk;

  ValidateOptions validate;
  auto* validate_cmd = app.add_subcommand("validate", "Check job spec files and report every problem");
  validate_cmd->add_option("FILE", validate.files, "Job spec files")->required();
  AddSetOption(validate_cmd, &validate.overrides);
  validate_cmd->add_option("-o,--output", validate.output, "Print the resolved spec (defaults applied)")
      ->check(CLI::IsMember({"json", "yaml"}));
  validate_cmd->add_flag("-q,--quiet", validate.quiet, "Print only errors and warnings");
  validate_cmd->callback([&] { exit_code = RunValidate(validate); });

  RenderOptions render;
  auto* render_cmd =
      app.add_subcommand("render", "Print the Kubernetes objects (Job, Service, RayJob) for a spec");
  render_cmd->add_option("FILE", render.file, "Job spec file")->required();
  AddSetOption(render_cmd, &render.overrides);
  render_cmd->add_option("--object-name", render.object_name,
                         "metadata.name of the objects (default: the job's name)");
  render_cmd->add_option("-o,--output", render.output, "Output format")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  render_cmd->callback([&] { exit_code = RunRender(render); });

  auto* schema_cmd = app.add_subcommand("schema", "Print the JSON Schema of the job spec");
  schema_cmd->callback([&] { exit_code = RunSchema(); });

  std::string explain_path;
  bool explain_markdown = false;
  auto* explain_cmd = app.add_subcommand("explain", "Describe a job spec field, e.g. compute.gpus");
  explain_cmd->add_option("FIELD", explain_path, "Dotted field path; omit for the top level");
  explain_cmd->add_flag("--markdown", explain_markdown, "Print the whole field reference as Markdown");
  explain_cmd->callback([&] {
    exit_code = explain_markdown ? RunExplainMarkdown() : RunExplain(explain_path);
  });

  std::string version_output;
  auto* version_cmd = app.add_subcommand("version", "Print the version of tau");
  version_cmd->add_option("-o,--output", version_output, "Output format")->check(CLI::IsMember({"json"}));
  version_cmd->callback([&] { exit_code = RunVersion(version_output); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  return exit_code;
}

}  // namespace
}  // namespace tau::cli

int main(int argc, char** argv) { return tau::cli::Main(argc, argv); }
