#include "spec/fields.h"

namespace tau::spec {
namespace {

const std::vector<FieldDoc>& Catalogue() {
  static const std::vector<FieldDoc> kFields = {
      {"schema_version", FieldType::kInteger, "integer (only 1)", "", true,
       "Version of the job spec format. This version of tau reads schema_version 1.",
       "schema_version: 1", {}, {}, 1, 1},
      {"name", FieldType::kString, "DNS-1123 label (lowercase letters, digits, '-'; at most 63)", "",
       true,
       "Name of the job. Names need not be unique: commands that take a name act on the newest "
       "job with that name. A rayjob's name is at most 47 characters (KubeRay derives cluster "
       "names from it); a job with workers > 1 must start its name with a letter (it also names "
       "a Kubernetes Service), and NAME-INDEX, the hostname of its last worker's pod, must fit in 63 "
       "characters.",
       "name: llama-finetune", {}, "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
      {"workspace", FieldType::kString, "DNS-1123 label", "default", false,
       "Workspace the job belongs to (a Kubernetes namespace; the namespace of a Kueue "
       "LocalQueue).",
       "workspace: vision-team", {}, "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
      {"queue", FieldType::kString, "DNS-1123 subdomain", "default", false,
       "LocalQueue the job is submitted to, in its workspace.", "queue: training", {},
       "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"},
      {"priority", FieldType::kString, "DNS-1123 subdomain", "", false,
       "WorkloadPriorityClass of the job. Without it the job has priority 0.",
       "priority: high", {}, "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"},
      {"run", FieldType::kObject, "mapping", "", true, "What to run and how to start it.",
       "run:\n  entrypoint: train.py\n  args: [--epochs, \"3\"]"},
      {"run.workload_kind", FieldType::kEnum, "enum", "job", false,
       "Kind of workload: `job` runs processes directly (one per worker, or a torchrun gang); "
       "`rayjob` starts a Ray cluster for the job and submits the entrypoint to it.",
       "workload_kind: rayjob", {"job", "rayjob"}},
      {"run.entrypoint", FieldType::kString, "string", "", true,
       "A `.py` file (run as `python3 FILE ARGS...`) or a command line (run as "
       "`/bin/sh -c 'ENTRYPOINT \"$@\"' tau ARGS...`, so shell syntax works and each arg stays "
       "one word; without args, `/bin/sh -c 'ENTRYPOINT'`). Relative paths are relative to "
       "working_dir.",
       "entrypoint: train.py"},
      {"run.args", FieldType::kStringList, "list of strings", "[]", false,
       "Arguments passed to the entrypoint, each as one word. Numbers are taken as written.",
       "args: [--lr, \"3e-4\", --epochs, \"10\"]"},
      {"run.launcher", FieldType::kEnum, "enum", "python for a .py entrypoint, else command", false,
       "How each worker starts the entrypoint: `python` (python3 FILE), `torchrun` "
       "(python3 -m torch.distributed.run with the gang's rendezvous flags; needs a .py "
       "entrypoint) or `command` (through /bin/sh).",
       "launcher: torchrun", {"python", "torchrun", "command"}},
      {"run.working_dir", FieldType::kString, "path", "the spec file's folder", false,
       "Folder whose contents become the job's code snapshot and its working directory. "
       "Relative paths are relative to the spec file's folder.",
       "working_dir: ../src"},
      {"run.exclude", FieldType::kStringList, "list of globs", "[]", false,
       "Paths left out of the code snapshot, as globs relative to working_dir (`*` within a "
       "name, `**` across folders; a trailing `/` matches folders only). The snapshot also "
       "leaves out `.git` and whatever the .gitignore files under working_dir ignore, as git "
       "does.",
       "exclude: [data/, \"*.ckpt\", \"**/__pycache__/\"]"},
      {"compute", FieldType::kObject, "mapping", "", false,
       "Resources of each worker. A job with workers: 4 and gpus: 2 uses 8 GPUs.",
       "compute:\n  gpus: 1\n  cpus: 8\n  memory: 32Gi"},
      {"compute.gpus", FieldType::kInteger, "integer >= 0", "0", false,
       "GPUs per worker. The job sees them in CUDA_VISIBLE_DEVICES.", "gpus: 2", {}, {}, 0, 100000},
      {"compute.workers", FieldType::kInteger, "integer >= 1", "1", false,
       "Number of workers started together as a gang (all or none). More than one needs "
       "launcher torchrun or command, or workload_kind rayjob.",
       "workers: 4", {}, {}, 1, 100000},
      {"compute.cpus", FieldType::kQuantity, "quantity > 0", "1", false,
       "CPUs per worker, as a Kubernetes quantity (500m is half a CPU).", "cpus: 16"},
      {"compute.memory", FieldType::kQuantity, "quantity > 0", "2Gi", false,
       "Memory per worker, as a Kubernetes quantity (Gi = 2^30 bytes, G = 10^9 bytes). A plain "
       "number without a unit (`memory: 64`, `memory: 1e9`) is refused, with a hint: it would mean "
       "bytes; a byte count is written quoted (`\"68719476736\"`).",
       "memory: 64Gi"},
      {"compute.gpu_class", FieldType::kString, "`any` or a GPU class name", "any", false,
       "GPU model the job needs, as the platform names GPU classes (for example h200-141gb). "
       "`any` takes whatever GPUs are free.",
       "gpu_class: h200-141gb", {}, "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
      {"compute.processes_per_worker", FieldType::kInteger, "integer >= 1", "max(1, gpus)", false,
       "Processes torchrun starts on each worker (its --nproc_per_node). Only with launcher "
       "torchrun.",
       "processes_per_worker: 8", {}, {}, 1, 1024},
      {"runtime", FieldType::kObject, "mapping", "", false,
       "The software environment of the job.",
       "runtime:\n  pip: [torch>=2.4.0]\n  env:\n    HF_HOME: /data/hf"},
      {"runtime.image", FieldType::kString, "container image reference", "", false,
       "Container image for the Kubernetes backend. The local backend records it and runs on "
       "the host. When absent, Kubernetes runs python:3.12-slim (job) or "
       "rayproject/ray:2.40.0-py312 (rayjob).",
       "image: nvcr.io/nvidia/pytorch:24.08-py3", {}, "^[^ \\t\\n\\v\\f\\r]+$"},
      {"runtime.pip", FieldType::kStringList, "list of pip requirements", "[]", false,
       "Python packages installed before the entrypoint starts (pip requirement syntax).",
       "pip: [\"torch>=2.4.0\", numpy==2.1.0]"},
      {"runtime.env", FieldType::kStringMap, "map of name to string", "{}", false,
       "Environment variables of the job. Names are letters, digits and '_'; TAU_*, "
       "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK and "
       "CUDA_VISIBLE_DEVICES are set by the platform and cannot be set here.",
       "env:\n  HF_HOME: /data/hf\n  OMP_NUM_THREADS: \"4\""},
      {"runtime.env_from_file", FieldType::kString, "path", "", false,
       "A file of KEY=VALUE lines (`#` comments, optional `export `, optional quotes that close on their line; "
       "values must be UTF-8 text without NUL bytes, and a value that is not is refused at its line without being "
       "shown; a key set twice is an error; a leading byte-order mark is skipped) that `tau run` reads when it "
       "submits the job, relative to the spec file's folder; `tau validate` reads it too. Its values "
       "are secret: stored with the job for its attempts, never shown by `tau status`, "
       "`tau list`, the API or the server's log. `tau run --env-file FILE` does the same (`-` reads standard "
       "input); a variable in both an env file and runtime.env takes the env file's value, with a warning.",
       "env_from_file: .env"},
      {"checkpoint", FieldType::kObject, "mapping", "", false,
       "How the job's checkpoints (files or folders written to TAU_CHECKPOINT_DIR) are kept.",
       "checkpoint:\n  keep: 5\n  grace_period: 2m"},
      {"checkpoint.keep", FieldType::kInteger, "integer >= 1", "3", false,
       "Number of newest complete checkpoints kept; older ones are deleted.", "keep: 5", {}, {}, 1,
       10000},
      {"checkpoint.grace_period", FieldType::kDuration, "duration", "30s", false,
       "Time between SIGTERM and SIGKILL when the job is cancelled or preempted, so it can save "
       "a checkpoint.",
       "grace_period: 2m"},
      {"checkpoint.layout", FieldType::kEnum, "enum", "auto", false,
       "How the job lays out TAU_CHECKPOINT_DIR, which sets which entries are checkpoints and when one is "
       "complete: plain (files or folders named like step-N, renamed into place or with a .complete marker), "
       "huggingface (Trainer's checkpoint-N/ folders, complete once trainer_state.json is written), orbax "
       "(CheckpointManager's step folders, never its *.orbax-checkpoint-tmp-* ones) or deepspeed (tag folders "
       "up to the one the `latest` file names). auto picks the one the folder's contents show.",
       "layout: huggingface", {"auto", "plain", "huggingface", "orbax", "deepspeed"}},
      {"checkpoint.include", FieldType::kStringList, "list of globs", "the layout's defaults", false,
       "Which files or folders directly in TAU_CHECKPOINT_DIR may be checkpoints (shell globs on their names); "
       "anything else there (a pid file, logs, DeepSpeed's latest) is never offered as TAU_RESUME_FROM. "
       "Defaults: plain step[-_0-9]*, ckpt[-_0-9]*, checkpoint[-_0-9]*, epoch[-_0-9]*, iter[-_0-9]*, [0-9]*, *.pt, *.pth, *.ckpt, *.safetensors, "
       "*.pkl, *.npz, *.msgpack, *.h5, less logs, locks, tables and text (*.log, *.lock, *.pid, *.csv, *.txt, "
       "...; docs/checkpoints.md); huggingface checkpoint-*; orbax [0-9]*; deepspeed global_step* and the "
       "tag `latest` names.",
       "include: [\"model-*.pt\"]", {}, "^[^/]+$"},
      {"retry", FieldType::kObject, "mapping", "", false,
       "When a failed attempt is retried. Interruptions the job did not cause (preemption, GPU "
       "faults, lost nodes) are retried by default and not charged to max_restarts.",
       "retry:\n  max_restarts: 3\n  on: [oom, \"exit:137\"]"},
      {"retry.max_restarts", FieldType::kInteger, "integer >= 0", "0", false,
       "How many times failures of the job itself (the conditions in `on`) are retried.",
       "max_restarts: 3", {}, {}, 0, 1000},
      {"retry.on", FieldType::kStringList, "list of conditions", "[]", false,
       "Conditions that start a new attempt: preempted, gpu_fault, node_lost, oom, unknown (an "
       "attempt whose end was not recorded and whose job may have run: to its end, or, without cgroup v2, on in a "
       "process that hid from the sweep), exit:<code> (1-255), or signal:<name> (signal:KILL, signal:SEGV; "
       "or its number, 1-64) for a process killed by that signal that TauGrid did not send.",
       "on: [oom, \"exit:1\", \"signal:KILL\"]", {},
       "^(preempted|gpu_fault|node_lost|oom|unknown|exit:0*([1-9][0-9]?|1[0-9][0-9]|2[0-4][0-9]|25[0-5])|"
       "signal:(SIG)?(HUP|INT|QUIT|ILL|TRAP|ABRT|BUS|FPE|KILL|USR1|SEGV|USR2|PIPE|ALRM|TERM|STKFLT|CHLD|CONT|STOP|"
       "TSTP|TTIN|TTOU|URG|XCPU|XFSZ|VTALRM|PROF|WINCH|POLL|PWR|SYS|0*([1-9]|[1-5][0-9]|6[0-4])))$"},
      {"retry.backoff", FieldType::kDuration, "duration", "10s", false,
       "Delay before the first retry; it doubles (with jitter) for each further one.",
       "backoff: 30s"},
      {"retry.max_backoff", FieldType::kDuration, "duration", "5m", false,
       "Upper bound of the retry delay.", "max_backoff: 10m"},
      {"limits", FieldType::kObject, "mapping", "", false, "Limits of the job.",
       "limits:\n  max_runtime: 12h"},
      {"limits.max_runtime", FieldType::kDuration, "duration > 0", "", false,
       "Longest an attempt may run; then it is stopped with reason DeadlineExceeded.",
       "max_runtime: 12h"},
      {"experiment", FieldType::kObject, "mapping", "", false,
       "Experiment tracking labels, recorded with the job's evidence and usable as filters.",
       "experiment:\n  project: llama\n  tags:\n    lr: \"3e-4\""},
      {"experiment.project", FieldType::kString, "string", "", false,
       "Project the job belongs to.", "project: llama"},
      {"experiment.tags", FieldType::kStringMap, "map of string to string", "{}", false,
       "Free-form key/value tags.", "tags:\n  dataset: c4\n  arm: baseline"},
      {"depends_on", FieldType::kStringList, "list of job ids or names", "[]", false,
       "Jobs that must succeed before this one starts. A name means the newest job of that name "
       "when this job is submitted.",
       "depends_on: [preprocess]", {}, "^(j_[a-z2-7]{10}|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$"},
  };
  return kFields;
}

}  // namespace

std::span<const FieldDoc> AllFields() { return Catalogue(); }

const FieldDoc* FindField(std::string_view path) {
  for (const FieldDoc& f : Catalogue()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<std::string_view> ChildFieldNames(std::string_view parent) {
  std::vector<std::string_view> out;
  for (const FieldDoc& f : Catalogue()) {
    std::string_view p = f.path;
    if (parent.empty()) {
      if (p.find('.') == std::string_view::npos) out.push_back(p);
    } else if (p.size() > parent.size() + 1 && p.starts_with(parent) && p[parent.size()] == '.' &&
               p.find('.', parent.size() + 1) == std::string_view::npos) {
      out.push_back(p.substr(parent.size() + 1));
    }
  }
  return out;
}

}  // namespace tau::spec
