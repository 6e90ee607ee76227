#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/quantity.h"

namespace tau::spec {

// The job spec, schema_version 1, with every default applied. docs/spec.md
// describes each field; spec/fields.cc holds the same descriptions for
// `tau explain` and `tau schema`.

enum class WorkloadKind { kJob, kRayJob };
enum class Launcher { kPython, kTorchrun, kCommand };
// How a job lays out its checkpoint folder (docs/checkpoints.md#layouts):
// auto finds the layout from what the folder holds.
enum class CheckpointLayout { kAuto, kPlain, kHuggingFace, kOrbax, kDeepSpeed };

std::string_view WorkloadKindName(WorkloadKind k);  // "job" | "rayjob"
std::string_view LauncherName(Launcher l);          // "python" | "torchrun" | "command"
// "auto" | "plain" | "huggingface" | "orbax" | "deepspeed"
std::string_view CheckpointLayoutName(CheckpointLayout l);

// An ordered string map (YAML order is kept, keys are unique).
using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct RunSpec {
  WorkloadKind workload_kind = WorkloadKind::kJob;
  std::string entrypoint;
  std::vector<std::string> args;
  Launcher launcher = Launcher::kCommand;
  // As written; "." when not given (the spec file's folder).
  std::string working_dir = ".";
  std::vector<std::string> exclude;
};

// Resources are per worker.
struct ComputeSpec {
  int64_t gpus = 0;
  int64_t workers = 1;
  Quantity cpus = Quantity::FromUnits(1);
  Quantity memory = Quantity::FromUnits(int64_t{2} << 30, Quantity::Format::kBinary);
  std::string gpu_class = "any";
  int64_t processes_per_worker = 1;
};

struct RuntimeSpec {
  std::string image;  // empty: not given
  std::vector<std::string> pip;
  StringPairs env;
  // A KEY=VALUE file read by `tau run` at submit; its values are secret
  // (stored with the job, never shown). As written; "" when not given.
  std::string env_from_file;
};

struct CheckpointSpec {
  int64_t keep = 3;
  Duration grace_period = std::chrono::seconds(30);
  CheckpointLayout layout = CheckpointLayout::kAuto;
  // Globs (fnmatch, no '/') naming which children of TAU_CHECKPOINT_DIR may
  // be checkpoints; empty: the layout's defaults.
  std::vector<std::string> include;
};

// "signal:NAME" for signal `sig` ("signal:KILL"), "signal:N" for one
// without a name.
std::string SignalCondition(int sig);

// One entry of `retry.on`.
struct RetryCondition {
  enum class Kind { kPreempted, kGpuFault, kNodeLost, kOom, kExitCode, kUnknown, kSignal };
  Kind kind = Kind::kPreempted;
  int exit_code = 0;  // kExitCode only, 1..255
  int signal = 0;     // kSignal only, 1..64

  // "preempted", "exit:3", "signal:KILL" (a signal by its name without
  // "SIG" where it has one, else "signal:N"), ...
  std::string ToString() const;
  friend bool operator==(const RetryCondition&, const RetryCondition&) = default;
};

struct RetrySpec {
  int64_t max_restarts = 0;
  std::vector<RetryCondition> on;
  Duration backoff = std::chrono::seconds(10);
  Duration max_backoff = std::chrono::minutes(5);
};

struct LimitsSpec {
  std::optional<Duration> max_runtime;
};

struct ExperimentSpec {
  std::string project;
  StringPairs tags;
};

struct JobSpec {
  int schema_version = 1;
  std::string name;
  std::string workspace = "default";
  std::string queue = "default";
  std::string priority;  // empty: none
  RunSpec run;
  ComputeSpec compute;
  RuntimeSpec runtime;
  CheckpointSpec checkpoint;
  RetrySpec retry;
  LimitsSpec limits;
  ExperimentSpec experiment;
  std::vector<std::string> depends_on;
};

// True when `entrypoint` names a Python file: one word ending in ".py".
bool IsPythonFileEntrypoint(std::string_view entrypoint);

// Environment variable names a spec may not set: every TAU_* name, the
// torchrun contract and CUDA_VISIBLE_DEVICES (the platform sets them).
bool IsReservedEnvName(std::string_view name);
// The reserved names other than the TAU_ prefix.
std::span<const std::string_view> ReservedEnvNames();

}  // namespace tau::spec
