#pragma once

// The evidence capsule of a job (docs/evidence.md): what was submitted,
// where and how each attempt ran, and what it produced. The submit part is
// assembled when the job is accepted; the rest when it ends. Both are
// stored as content-addressed blobs.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evidence/file_list.h"
#include "store/records.h"

namespace tau::server {

struct SubmitEvidence {
  store::JobRecord job;              // as submitted
  std::string spec_json;             // the resolved spec
  std::string project;               // experiment.project
  std::vector<std::pair<std::string, std::string>> tags;  // experiment.tags
  std::vector<evidence::FileDigest> code_files;
  std::string client_json;           // {"git": …} from tau run; "" for none
  std::vector<std::string> environment;  // NAME=VALUE the job starts from
  std::vector<std::string> secret_env_names;
  std::string host_json;             // host facts and GPUs; "" for unknown
};

// A capsule (or submit part) as the API shows it: `submit_command`,
// `environment` and `spec` redacted as AssembleSubmitEvidence records
// them (docs/evidence.md#secrets). Idempotent, so a capsule stored before
// these rules is shown under them too; text that is not a JSON object is
// returned as is.
std::string RedactCapsule(const std::string& text);

// The submit part, as canonical JSON text.
std::string AssembleSubmitEvidence(const SubmitEvidence& in);

struct CapsuleInputs {
  std::string submit_json;  // the submit part
  store::JobRecord job;
  std::vector<store::AttemptRecord> attempts;
  std::vector<store::EventRecord> events;
  std::vector<std::string> gpu_uuids;  // by GPU index
  int64_t workers = 1;
  std::string cpus_per_worker, memory_per_worker;
  // Per attempt number, each rank's log file, opened beneath `logs_root`
  // (TAU_HOME) without following links; a link or fifo counts as absent.
  std::map<int64_t, std::vector<std::string>> log_files;
  std::string logs_root;
  bool digest_logs = true;  // false: sizes only (a live view)
  std::vector<std::string> pip_freeze;  // empty: no venv was built
  // A local rayjob's last attempt: the Ray it ran on (LocalRaySetup's
  // info file, JSON text); "" otherwise.
  std::string ray_json;
};

// The whole capsule (the submit part with the attempts, checkpoints,
// outcome and timeline added), as JSON text. `complete` says whether the job
// had ended.
std::string AssembleCapsule(const CapsuleInputs& in, bool complete);

}  // namespace tau::server
