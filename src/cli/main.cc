// `tau`: the command-line client. This is the only file that includes CLI11
// (it is slow to compile); commands live in their own files and take plain
// option structs.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/admin_commands.h"
#include "cli/checkpoint_commands.h"
#include "cli/evidence_commands.h"
#include "cli/gpu_commands.h"
#include "cli/portal_command.h"
#include "cli/top_command.h"
#include "cli/exit_codes.h"
#include "cli/job_commands.h"
#include "cli/spec_commands.h"
#include "cli/version.h"
#include "common/strings.h"

namespace tau::cli {
namespace {

// An option whose value may not be empty (`--from ''` is a mistake, not
// the option left out).
const CLI::Validator kNotEmpty(
    [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "",
    "NOT_EMPTY");

void AddSetOption(CLI::App* cmd, std::vector<std::string>* overrides) {
  cmd->add_option("--set", *overrides,
                  "Override a spec field before validation, e.g. --set compute.gpus=2 (repeatable)")
      ->type_name("PATH=VALUE")
      ->allow_extra_args(false);
}

// When the command line names a subcommand that does not exist (`tau
// valdate`, `tau admin aply`), the message for it with the nearest real
// one; nullopt when every word that should be a subcommand is one. Words
// are checked up to the first option, at each level that has subcommands.
std::optional<std::string> UnknownSubcommand(CLI::App* app, int argc, char** argv) {
  std::string path = app->get_name();
  CLI::App* level = app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.starts_with("-")) return std::nullopt;
    std::vector<CLI::App*> subs = level->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return std::nullopt;
    std::vector<std::string> names;
    CLI::App* found = nullptr;
    for (CLI::App* sub : subs) {
      names.push_back(sub->get_name());
      for (const std::string& alias : sub->get_aliases()) names.push_back(alias);
      if (sub->check_name(word)) found = sub;
    }
    if (found == nullptr) {
      std::vector<std::string_view> candidates(names.begin(), names.end());
      std::string hint;
      if (auto near = ClosestMatch(word, candidates)) hint = fmt::format("; did you mean \"{}\"?", *near);
      return fmt::format("{}: unknown command \"{}\"{} (`{} --help` lists the commands)", path,
                         ShortenUtf8(word, 60), hint, path);
    }
    path += " " + found->get_name();
    level = found;
  }
  return std::nullopt;
}

int Main(int argc, char** argv) {
  CLI::App app{"tau: run, queue and watch AI workloads on GPU machines", "tau"};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.footer("Exit codes: 0 success, 1 failure, 2 usage or validation error.\n"
             "Docs: docs/cli.md and docs/spec.md in the TauGrid source tree.");

  app.set_version_flag("--version", fmt::format("tau {} ({})", kVersion, kGitCommit), "Print the version of tau");

  int exit_code = kExitOk;

  ValidateOptions validate;
  auto* validate_cmd = app.add_subcommand("validate", "Check job spec files and report every problem");
  validate_cmd->add_option("FILE", validate.files, "Job spec files, folders of them, or - (stdin)")->required();
  AddSetOption(validate_cmd, &validate.overrides);
  validate_cmd->add_option("-o,--output", validate.output, "Print the resolved spec (defaults applied)")
      ->check(CLI::IsMember({"json", "yaml"}));
  validate_cmd->add_flag("-q,--quiet", validate.quiet, "Print only errors and warnings");
  validate_cmd->callback([&] { exit_code = RunValidate(validate); });

  RenderOptions render;
  auto* render_cmd =
      app.add_subcommand("render", "Print the Kubernetes objects (Job, Service, RayJob) for a spec");
  render_cmd->add_option("FILE", render.files, "Job spec files, folders of them, or - (stdin)")->required();
  AddSetOption(render_cmd, &render.overrides);
  render_cmd->add_option("--object-name", render.object_name,
                         "metadata.name of the objects (default: the job's name)")
      ->check(kNotEmpty);
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
  version_cmd->add_option("-o,--output", version_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  version_cmd->callback([&] { exit_code = RunVersion(version_output); });

  std::string command_line;
  // Quoted as sh would need it, so the record splits back into the same
  // words (and a secret value with spaces is redacted whole).
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + ShellQuote(argv[i]);

  RunOptions run;
  run.command_line = command_line;
  auto* run_cmd = app.add_subcommand("run", "Submit a job and print its id (or follow it with -f)");
  run_cmd->add_option("FILE", run.file, "Job spec file, or - (stdin)")->required();
  AddSetOption(run_cmd, &run.overrides);
  run_cmd->add_flag("-f,--follow", run.follow,
                    "Stream the logs until the job ends and exit with its exit code (Ctrl-C detaches)");
  run_cmd->add_option("--queue", run.queue, "LocalQueue (same as --set queue=Q)");
  run_cmd->add_option("--priority", run.priority, "WorkloadPriorityClass (same as --set priority=P)");
  run_cmd->add_option("--name", run.name, "Job name (same as --set name=N)");
  run_cmd->add_option("--env-file", run.env_files,
                      "Read secret KEY=VALUE variables from FILE: given to the job, never shown (repeatable)");
  run_cmd->add_option("-o,--output", run.output, "Print the job as JSON instead of its id")
      ->check(CLI::IsMember({"json"}));
  run_cmd->callback([&] { exit_code = RunRun(run); });

  ListOptions list;
  auto* list_cmd = app.add_subcommand("list", "List jobs, newest first (finished ones included)");
  list_cmd->alias("ls");
  list_cmd->add_option("-o,--output", list.output, "Output format")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}))
      ->capture_default_str();
  list_cmd->add_option("--state", list.state, "Only jobs in this state (Queued, Running, Succeeded, ...)");
  list_cmd->add_option("--workspace", list.workspace, "Only jobs of this workspace");
  list_cmd->add_option("--project", list.project, "Only jobs of this experiment.project");
  list_cmd->add_option("--tag", list.tags, "Only jobs with this experiment tag (KEY=VALUE; repeatable, all must match)");
  list_cmd->add_option("--limit", list.limit, "Jobs per page (table), or at most N jobs in all (-o json|yaml)")
      ->check(CLI::Range(1, 1000000));
  list_cmd->add_option("--continue", list.continue_token, "Start after the page that printed this token");
  list_cmd->add_flag("-w,--watch", list.watch, "Redraw every 2 seconds");
  list_cmd->callback([&] { exit_code = RunList(list); });

  std::string status_job, status_output;
  auto* status_cmd = app.add_subcommand("status", "Show a job: state, reason, attempts, timeline");
  status_cmd->add_option("JOB", status_job, "Job id or name (the newest job of that name)")->required();
  status_cmd->add_option("-o,--output", status_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  status_cmd->callback([&] { exit_code = RunStatus(status_job, status_output); });

  LogsOptions logs;
  auto* logs_cmd = app.add_subcommand("logs", "Print a job's output");
  logs_cmd->add_option("JOB", logs.job, "Job id or name")->required();
  logs_cmd->add_flag("-f,--follow", logs.follow, "Keep streaming until the job ends");
  logs_cmd->add_option("--rank", logs.rank, "Rank (worker) whose output to show, or all (lines prefixed by rank)");
  logs_cmd->add_option("--attempt", logs.attempt, "Attempt number, last (default) or all");
  logs_cmd->add_option("--tail", logs.tail, "Start with the last N lines");
  logs_cmd->callback([&] { exit_code = RunLogs(logs); });

  std::vector<std::string> cancel_jobs;
  auto* cancel_cmd = app.add_subcommand("cancel", "Cancel jobs (SIGTERM, then SIGKILL after the grace period)");
  cancel_cmd->add_option("JOB", cancel_jobs, "Job ids or names")->required();
  cancel_cmd->callback([&] { exit_code = RunCancel(cancel_jobs); });

  std::string checkpoints_job, checkpoints_output;
  auto* checkpoints_cmd = app.add_subcommand("checkpoints", "List a job's complete checkpoints, newest first");
  checkpoints_cmd->add_option("JOB", checkpoints_job, "Job id or name")->required();
  checkpoints_cmd->add_option("-o,--output", checkpoints_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  checkpoints_cmd->callback([&] { exit_code = RunCheckpoints(checkpoints_job, checkpoints_output); });

  std::string resume_job, resume_from;
  bool resume_follow = false;
  auto* resume_cmd = app.add_subcommand("resume", "Start a new attempt of an ended job from its newest checkpoint");
  resume_cmd->add_option("JOB", resume_job, "Job id or name")->required();
  resume_cmd->add_option("--from", resume_from, "Resume from this checkpoint (a name from tau checkpoints)")
      ->check(kNotEmpty);
  resume_cmd->add_flag("-f,--follow", resume_follow, "Follow the job like tau run -f and exit with its outcome");
  resume_cmd->callback([&] { exit_code = RunResume(resume_job, resume_from, resume_follow); });

  std::string evidence_job, evidence_output, evidence_export;
  auto* evidence_cmd = app.add_subcommand("evidence", "Print a job's evidence capsule, or export it as a bundle");
  evidence_cmd->add_option("JOB", evidence_job, "Job id or name")->required();
  evidence_cmd->add_option("-o,--output", evidence_output, "Output format (default yaml)")
      ->check(CLI::IsMember({"json", "yaml"}));
  evidence_cmd->add_option("--export", evidence_export, "Write a portable bundle (capsule, logs, metrics) to FILE.tar.zst");
  evidence_cmd->callback([&] { exit_code = RunEvidence(evidence_job, evidence_output, evidence_export); });

  std::string reproduce_job;
  std::vector<std::string> reproduce_sets;
  bool reproduce_follow = false;
  auto* reproduce_cmd = app.add_subcommand("reproduce", "Run a job again: same code snapshot and spec, as a new job");
  reproduce_cmd->add_option("JOB", reproduce_job, "Job id or name")->required();
  reproduce_cmd->add_option("--set", reproduce_sets, "Change one spec value (PATH=VALUE; repeatable)");
  reproduce_cmd->add_flag("-f,--follow", reproduce_follow, "Follow the new job like tau run -f");
  reproduce_cmd->callback([&] { exit_code = RunReproduce(reproduce_job, reproduce_sets, reproduce_follow, command_line); });

  std::string diff_a, diff_b, diff_output;
  auto* diff_cmd = app.add_subcommand("diff", "Show how two jobs differ: spec, code, git, environment, host");
  diff_cmd->add_option("JOB1", diff_a, "Job id or name")->required();
  diff_cmd->add_option("JOB2", diff_b, "Job id or name")->required();
  diff_cmd->add_option("-o,--output", diff_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  diff_cmd->callback([&] { exit_code = RunDiff(diff_a, diff_b, diff_output); });

  std::string outputs_job, outputs_output;
  auto* outputs_cmd = app.add_subcommand("outputs", "List the files a job wrote to TAU_OUTPUT_DIR");
  outputs_cmd->add_option("JOB", outputs_job, "Job id or name")->required();
  outputs_cmd->add_option("-o,--output", outputs_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  outputs_cmd->callback([&] { exit_code = RunOutputs(outputs_job, outputs_output); });

  std::string cp_source, cp_dest;
  auto* cp_cmd = app.add_subcommand("cp", "Copy a job's outputs out: tau cp JOB:PATH DEST (JOB: copies all)");
  cp_cmd->add_option("SOURCE", cp_source, "JOB:PATH")->required();
  cp_cmd->add_option("DEST", cp_dest, "A file or folder")->required();
  cp_cmd->callback([&] { exit_code = RunCopy(cp_source, cp_dest); });

  std::string events_job, events_output;
  bool events_follow = false;
  bool events_all = false;
  auto* events_cmd = app.add_subcommand("events", "Print the event timeline of one job or of all jobs");
  events_cmd->add_option("JOB", events_job, "Job id or name; all jobs when omitted");
  events_cmd->add_flag("-f,--follow", events_follow, "Keep streaming new events");
  events_cmd->add_option("-o,--output", events_output, "Output format (followed: one JSON line or YAML document per event)")
      ->check(CLI::IsMember({"json", "yaml"}));
  events_cmd->add_flag("--all", events_all,
                       "Every Checkpoint event (without it, each attempt's routine checkpoints are one row)");
  events_cmd->callback([&] { exit_code = RunEvents(events_job, events_follow, events_output, events_all); });

  std::vector<std::string> rm_jobs;
  auto* rm_cmd = app.add_subcommand("rm", "Remove finished jobs and their files");
  rm_cmd->add_option("JOB", rm_jobs, "Job ids or names")->required();
  rm_cmd->callback([&] { exit_code = RunRemove(rm_jobs); });

  std::string prune_age;
  int64_t prune_keep = -1;
  auto* prune_cmd = app.add_subcommand("prune", "Remove finished jobs older than a duration, or all but the newest N");
  prune_cmd->add_option("--older-than", prune_age, "e.g. 7d, 12h");
  prune_cmd->add_option("--keep", prune_keep, "Keep the N most recently finished jobs")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos
                       ? std::string()
                       : "is a whole number from 0";
          },
          "N", "whole number"));
  prune_cmd->callback([&] { exit_code = RunPrune(prune_age, prune_keep); });

  auto* admin_cmd = app.add_subcommand("admin", "Platform configuration: Kueue objects (quotas, queues, priorities)");
  admin_cmd->require_subcommand(1);
  std::vector<std::string> apply_files;
  auto* apply_cmd = admin_cmd->add_subcommand("apply", "Create or update Kueue objects from manifests (like kubectl apply)");
  apply_cmd->add_option("-f,--filename", apply_files, "Manifest files, folders of them, or - (stdin) (repeatable)")
      ->required();
  bool apply_force_conflicts = false;
  apply_cmd->add_flag("--force-conflicts", apply_force_conflicts,
                      "On a cluster: take over fields another field manager owns (server-side apply's force)");
  apply_cmd->callback([&] { exit_code = RunAdminApply(apply_files, apply_force_conflicts); });
  std::string get_kind, get_name, get_output = "yaml";
  auto* get_cmd = admin_cmd->add_subcommand("get", "Print the configuration as Kueue YAML");
  get_cmd->add_option("KIND", get_kind, "ResourceFlavor, ClusterQueue, Cohort, LocalQueue or WorkloadPriorityClass");
  get_cmd->add_option("NAME", get_name, "Object name");
  get_cmd->add_option("-o,--output", get_output, "Output format")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  get_cmd->callback([&] { exit_code = RunAdminGet(get_kind, get_name, get_output); });
  std::string delete_kind, delete_name, delete_ns;
  auto* delete_cmd = admin_cmd->add_subcommand("delete", "Delete a Kueue object");
  delete_cmd->add_option("KIND", delete_kind, "Object kind")->required();
  delete_cmd->add_option("NAME", delete_name, "Object name")->required();
  delete_cmd->add_option("-n,--workspace", delete_ns, "Workspace of a LocalQueue (default: default)");
  delete_cmd->callback([&] { exit_code = RunAdminDelete(delete_kind, delete_name, delete_ns); });
  auto* admin_gpu_cmd = admin_cmd->add_subcommand("gpu", "GPU maintenance: clear a fault, drain, undrain");
  admin_gpu_cmd->require_subcommand(1);
  std::string gpu_uuid;
  for (const char* action : {"clear", "drain", "undrain"}) {
    const char* help = std::string(action) == "clear"   ? "Clear a GPU's fatal state after repair (in service after its next good poll)"
                       : std::string(action) == "drain" ? "Take a GPU out of service: running work finishes, nothing new starts"
                                                        : "Put a drained GPU back into service";
    auto* cmd = admin_gpu_cmd->add_subcommand(action, help);
    cmd->add_option("GPU", gpu_uuid, "The GPU: its index, its UUID or the start of it (tau nodes lists them)")->required();
    cmd->callback([&exit_code, &gpu_uuid, action] { exit_code = RunAdminGpu(action, gpu_uuid); });
  }

  bool portal_no_open = false;
  auto* portal_cmd = app.add_subcommand("portal", "Print (and open) the web portal's sign-in address");
  portal_cmd->add_flag("--no-open", portal_no_open, "Only print the address");
  portal_cmd->callback([&] { exit_code = RunPortal(!portal_no_open); });

  bool top_once = false;
  double top_interval = 2;
  auto* top_cmd = app.add_subcommand("top", "Queues, running jobs with progress and ETA, GPUs: redrawn until Ctrl-C");
  top_cmd->add_flag("--once", top_once, "Draw once and exit");
  top_cmd->add_option("--interval", top_interval, "Seconds between redraws (default 2)")->check(CLI::Range(0.5, 60.0));
  top_cmd->callback([&] { exit_code = RunTop(top_once, top_interval); });

  std::string nodes_output;
  auto* nodes_cmd = app.add_subcommand("nodes", "The machine's GPUs: health, telemetry and the job on each");
  nodes_cmd->alias("gpus");
  nodes_cmd->add_option("-o,--output", nodes_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  nodes_cmd->callback([&] { exit_code = RunNodes(nodes_output); });

  std::string queues_output;
  auto* queues_cmd = app.add_subcommand("queues", "Quota, usage and borrowing of every queue");
  queues_cmd->add_option("-o,--output", queues_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  queues_cmd->callback([&] { exit_code = RunQueues(queues_output); });

  std::string why_job, why_output;
  auto* why_cmd = app.add_subcommand("why", "Why a job waits: its pending reason and place in its queue");
  why_cmd->add_option("JOB", why_job, "Job id or name")->required();
  why_cmd->add_option("-o,--output", why_output, "Output format")->check(CLI::IsMember({"json", "yaml"}));
  why_cmd->callback([&] { exit_code = RunWhy(why_job, why_output); });

  std::string priority_job, priority_class;
  auto* priority_cmd = app.add_subcommand("set-priority", "Change a queued job's WorkloadPriorityClass");
  priority_cmd->add_option("JOB", priority_job, "Job id or name")->required();
  priority_cmd->add_option("CLASS", priority_class, "WorkloadPriorityClass name")->required();
  priority_cmd->callback([&] { exit_code = RunSetPriority(priority_job, priority_class); });

  std::vector<std::string> hold_jobs, release_jobs;
  auto* hold_cmd = app.add_subcommand("hold", "Keep queued jobs in their place without admitting them");
  hold_cmd->add_option("JOB", hold_jobs, "Job ids or names")->required();
  hold_cmd->callback([&] { exit_code = RunHold(hold_jobs, true); });
  auto* release_cmd = app.add_subcommand("release", "Let held jobs be admitted again");
  release_cmd->add_option("JOB", release_jobs, "Job ids or names")->required();
  release_cmd->callback([&] { exit_code = RunHold(release_jobs, false); });

  auto* server_cmd = app.add_subcommand("server", "Start, stop or inspect the local taugridd");
  server_cmd->require_subcommand(1);
  bool foreground = false;
  auto* start_cmd = server_cmd->add_subcommand("start", "Start taugridd (in the background unless --foreground)");
  start_cmd->add_flag("--foreground", foreground, "Run in this terminal");
  std::string listen;
  start_cmd->add_option("--listen", listen,
                        "ADDR:PORT to listen on, e.g. 0.0.0.0:38123 for a Prometheus elsewhere; kept for later starts "
                        "(default: the last one, else a free port of 127.0.0.1)");
  std::string backend, kubeconfig, kube_context;
  std::vector<std::string> checkpoint_pvcs;
  start_cmd->add_option("--backend", backend, "Where jobs run: local (default) or kubernetes")
      ->check(CLI::IsMember({"local", "kubernetes"}));
  start_cmd->add_option("--kubeconfig", kubeconfig, "With --backend kubernetes: the cluster's kubeconfig");
  start_cmd->add_option("--context", kube_context, "With --backend kubernetes: the kubeconfig context");
  start_cmd->add_option("--checkpoint-pvc", checkpoint_pvcs,
                        "With --backend kubernetes: the PersistentVolumeClaim checkpoints are kept on, NAME for every "
                        "workspace or WORKSPACE=NAME for one (repeatable)");
  start_cmd->callback([&] {
    std::vector<std::string> daemon_args;
    if (!backend.empty()) daemon_args.insert(daemon_args.end(), {"--backend", backend});
    if (!kubeconfig.empty()) {
      std::error_code ec;
      auto absolute = std::filesystem::absolute(kubeconfig, ec);
      daemon_args.insert(daemon_args.end(), {"--kubeconfig", ec ? kubeconfig : absolute.string()});
    }
    if (!kube_context.empty()) daemon_args.insert(daemon_args.end(), {"--context", kube_context});
    for (const std::string& pvc : checkpoint_pvcs) daemon_args.insert(daemon_args.end(), {"--checkpoint-pvc", pvc});
    exit_code = RunServerStart(foreground, listen, daemon_args);
  });
  server_cmd->add_subcommand("stop", "Stop taugridd; running jobs keep running")->callback([&] {
    exit_code = RunServerStop();
  });
  server_cmd->add_subcommand("status", "Show whether taugridd runs, where, and its jobs")->callback([&] {
    exit_code = RunServerStatus();
  });
  server_cmd
      ->add_subcommand("token", "Print this TAU_HOME's API token, for TAU_TOKEN on another machine (e.g. through "
                                "kubectl exec deploy/taugrid -- tau server token)")
      ->callback([&] { exit_code = RunServerToken(); });

  if (auto unknown = UnknownSubcommand(&app, argc, argv)) {
    std::fprintf(stderr, "%s\n", unknown->c_str());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
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
