#include "spec/job_spec.h"

#include <fmt/format.h>

#include <cstring>

namespace tau::spec {

std::string_view WorkloadKindName(WorkloadKind k) {
  return k == WorkloadKind::kRayJob ? "rayjob" : "job";
}

std::string_view CheckpointLayoutName(CheckpointLayout l) {
  switch (l) {
    case CheckpointLayout::kAuto: return "auto";
    case CheckpointLayout::kPlain: return "plain";
    case CheckpointLayout::kHuggingFace: return "huggingface";
    case CheckpointLayout::kOrbax: return "orbax";
    case CheckpointLayout::kDeepSpeed: return "deepspeed";
  }
  return "auto";
}

std::string_view LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kPython: return "python";
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kCommand: return "command";
  }
  return "command";
}

std::string RetryCondition::ToString() const {
  switch (kind) {
    case Kind::kPreempted: return "preempted";
    case Kind::kGpuFault: return "gpu_fault";
    case Kind::kNodeLost: return "node_lost";
    case Kind::kOom: return "oom";
    case Kind::kExitCode: return fmt::format("exit:{}", exit_code);
    case Kind::kUnknown: return "unknown";
    case Kind::kSignal: return SignalCondition(signal);
  }
  return "";
}

std::string SignalCondition(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? fmt::format("signal:{}", abbrev) : fmt::format("signal:{}", sig);
}

bool IsPythonFileEntrypoint(std::string_view e) {
  if (e.size() < 4 || !e.ends_with(".py")) return false;
  for (char c : e) {
    if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '|' || c == '&') return false;
  }
  return true;
}

std::span<const std::string_view> ReservedEnvNames() {
  static constexpr std::string_view kReserved[] = {
      "MASTER_ADDR", "MASTER_PORT",      "WORLD_SIZE", "RANK",
      "LOCAL_RANK",  "LOCAL_WORLD_SIZE", "NODE_RANK",  "CUDA_VISIBLE_DEVICES"};
  return kReserved;
}

bool IsReservedEnvName(std::string_view name) {
  if (name.starts_with("TAU_")) return true;
  for (std::string_view r : ReservedEnvNames()) {
    if (name == r) return true;
  }
  return false;
}

}  // namespace tau::spec
