// Cross-field rules of the job spec. Each rule points at the field a reader
// would change to fix it.

#include <fmt/format.h>

#include "spec/decode.h"

namespace tau::spec {
namespace {

constexpr size_t kMaxRayJobNameLength = 47;
constexpr size_t kMaxHostnameLength = 63;

int Digits(int64_t n) {
  int digits = 1;
  while (n >= 10) n /= 10, ++digits;
  return digits;
}

}  // namespace

std::vector<std::string> WorkloadNameProblems(std::string_view name, const JobSpec& s) {
  std::vector<std::string> problems;
  if (name.empty()) return problems;
  const ComputeSpec& c = s.compute;
  if (s.run.workload_kind == WorkloadKind::kRayJob && name.size() > kMaxRayJobNameLength) {
    problems.push_back(fmt::format("a rayjob's name is at most {} characters (KubeRay derives "
                                   "cluster names from it); \"{}\" has {}",
                                   kMaxRayJobNameLength, name, name.size()));
  }
  if (c.workers > 1 && s.run.workload_kind == WorkloadKind::kJob) {
    if (!(name[0] >= 'a' && name[0] <= 'z')) {
      problems.push_back(fmt::format("a job with several workers must start its name with a letter "
                                     "(it also names the gang's Kubernetes Service); \"{}\" does not",
                                     name));
    }
    // Each worker's pod is reachable as NAME-INDEX, a DNS label of at most
    // 63 characters.
    const std::string last_host = fmt::format("{}-{}", name, c.workers - 1);
    if (last_host.size() > kMaxHostnameLength) {
      problems.push_back(fmt::format(
          "a job with {} workers gives its pods the hostnames NAME-0 to NAME-{}, which must fit in {} "
          "characters; \"{}\" has {}, so the name may have at most {}",
          c.workers, c.workers - 1, kMaxHostnameLength, last_host, last_host.size(),
          kMaxHostnameLength - 1 - Digits(c.workers - 1)));
    }
  }
  return problems;
}

void ValidateJobSpec(const JobSpec& s, const PositionMap& pos, Diagnostics* diags) {
  const RunSpec& run = s.run;
  const ComputeSpec& c = s.compute;
  const bool launcher_given = pos.Has("run.launcher");
  const Location launcher_at = pos.At(launcher_given ? "run.launcher" : "run.entrypoint");
  const bool python_file = IsPythonFileEntrypoint(run.entrypoint);

  if (run.launcher == Launcher::kTorchrun && !run.entrypoint.empty() && !python_file) {
    diags->Error(pos.At("run.entrypoint"),
                 fmt::format("run.entrypoint: launcher torchrun runs a Python file; \"{}\" is not "
                             "a .py file",
                             run.entrypoint));
  }
  if (run.launcher == Launcher::kPython && launcher_given && !run.entrypoint.empty() &&
      !python_file) {
    diags->Error(launcher_at,
                 fmt::format("run.launcher: launcher python runs a .py file, but the entrypoint "
                             "\"{}\" is a command; use launcher command",
                             run.entrypoint));
  }
  if (run.workload_kind == WorkloadKind::kRayJob && run.launcher == Launcher::kTorchrun) {
    diags->Error(launcher_at,
                 "run.launcher: torchrun cannot launch a rayjob; Ray starts the workers itself "
                 "(use launcher python, or workload_kind job for a torchrun gang)");
  }
  if (c.workers > 1 && run.workload_kind == WorkloadKind::kJob &&
      run.launcher == Launcher::kPython) {
    diags->Error(pos.At("compute.workers"),
                 fmt::format("compute.workers: {} workers need launcher torchrun or command, or "
                             "workload_kind rayjob; launcher python{} starts one process",
                             c.workers, launcher_given ? "" : " (the default for a .py entrypoint)"));
  }
  if (pos.Has("compute.processes_per_worker") && run.launcher != Launcher::kTorchrun) {
    diags->Error(pos.At("compute.processes_per_worker"),
                 fmt::format("compute.processes_per_worker: applies only to launcher torchrun (the "
                             "launcher is {})",
                             LauncherName(run.launcher)));
  } else if (run.launcher == Launcher::kTorchrun && c.gpus > 0 &&
             c.processes_per_worker > c.gpus) {
    diags->Warning(pos.At("compute.processes_per_worker"),
                   fmt::format("compute.processes_per_worker: {} processes share {} GPU{} on each "
                               "worker",
                               c.processes_per_worker, c.gpus, c.gpus == 1 ? "" : "s"));
  }
  for (const std::string& problem : WorkloadNameProblems(s.name, s)) {
    diags->Error(pos.At("name"), "name: " + problem);
  }
  if (s.retry.max_backoff < s.retry.backoff) {
    diags->Error(pos.At(pos.Has("retry.max_backoff") ? "retry.max_backoff" : "retry.backoff"),
                 fmt::format("retry.max_backoff ({}) is shorter than retry.backoff ({})",
                             FormatDuration(s.retry.max_backoff), FormatDuration(s.retry.backoff)));
  }
  if (s.retry.max_restarts == 0) {
    for (size_t i = 0; i < s.retry.on.size(); ++i) {
      using K = RetryCondition::Kind;
      K kind = s.retry.on[i].kind;
      if (kind == K::kExitCode || kind == K::kOom || kind == K::kSignal) {
        diags->Warning(pos.At(fmt::format("retry.on[{}]", i)),
                       fmt::format("retry.on: \"{}\" is never retried because retry.max_restarts "
                                   "is 0",
                                   s.retry.on[i].ToString()));
      }
    }
  }
  if (s.retry.max_restarts > 0) {
    bool names_a_failure = false;
    for (const RetryCondition& cond : s.retry.on) {
      names_a_failure = names_a_failure || cond.kind == RetryCondition::Kind::kExitCode ||
                        cond.kind == RetryCondition::Kind::kOom || cond.kind == RetryCondition::Kind::kUnknown ||
                        cond.kind == RetryCondition::Kind::kSignal;
    }
    if (!names_a_failure) {
      diags->Warning(pos.At("retry.max_restarts"),
                     fmt::format("retry.max_restarts is {} but retry.on names no failure of the job (exit:CODE, "
                                 "oom, unknown or signal:NAME), so it is never used; interruptions (preempted, gpu_fault, node_lost) "
                                 "are retried without it",
                                 s.retry.max_restarts));
    }
  }
  if (c.gpus == 0 && pos.Has("compute.gpu_class") && c.gpu_class != "any") {
    diags->Warning(pos.At("compute.gpu_class"),
                   fmt::format("compute.gpu_class: \"{}\" has no effect with compute.gpus 0",
                               c.gpu_class));
  }
}

}  // namespace tau::spec
