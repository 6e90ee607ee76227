#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "progress/progress.h"
#include "store/records.h"

namespace tau::server {

// What readers see of one job: immutable once published.
struct JobView {
  store::JobRecord job;
  std::vector<store::AttemptRecord> attempts;  // oldest first
  int64_t workers = 1;
  int64_t ranks = 1;         // processes with a log of their own per attempt
  int64_t gpus = 0;          // all workers together
  int64_t cpus_milli = 0;    // all workers together
  int64_t memory_bytes = 0;  // all workers together
  std::string project;       // experiment.project
  std::vector<std::pair<std::string, std::string>> tags;  // experiment.tags
  int64_t max_restarts = 0;       // retry.max_restarts
  int64_t max_interruptions = 0;  // the daemon's limit
  std::string checkpoint_dir;     // TAU_CHECKPOINT_DIR
  int64_t checkpoint_keep = 0;    // checkpoint.keep
  // What the job reports through TAU_METRICS_FILE; nullopt before its
  // first line.
  std::optional<progress::Snapshot> progress;
  bool progress_stalled = false;  // no line for longer than the stall time while running
  // Why the ended job's evidence capsule is not sealed yet ("" when it is,
  // or is being sealed): its write failed and is tried again.
  std::string evidence_error;
  // Its end is shown but not written yet (a full disk): the database still
  // has it unfinished, so what counts jobs by state counts it from here.
  bool end_unrecorded = false;
  std::vector<std::string> secret_env_names;  // names only: values are never published
};

class JobHistory;

// An immutable picture of the jobs the control loop holds (those that have
// not ended, and ended ones it has not let go of yet), published after each
// batch of changes. HTTP handlers read it without taking any lock the loop
// needs; ended jobs are read from the database through `history`.
struct StateView {
  int64_t version = 0;
  int64_t last_event_id = 0;
  std::vector<std::shared_ptr<const JobView>> jobs;  // submission order
  std::unordered_map<std::string, size_t> by_id;     // index into jobs
  // Reads the jobs that are not in `jobs`; nullptr: none are read.
  std::shared_ptr<const JobHistory> history;
  // "DiskFull" while the database cannot commit changes because its disk
  // is full (changes are refused or kept in memory until it can), else "".
  std::string store_condition;
  std::string store_message;  // what the last failed commit said

  // The job with this id, else the newest job with this name, whether the
  // loop holds it or not; nullptr when there is none.
  std::shared_ptr<const JobView> Resolve(const std::string& id_or_name) const;
  // The job with this id when the view holds it, else nullptr.
  std::shared_ptr<const JobView> Find(const std::string& id) const;
};

// Hands the newest StateView from the control loop to readers, and lets
// readers wait for a newer one (log and event followers).
class StatePublisher {
 public:
  StatePublisher() : current_(std::make_shared<StateView>()) {}

  void Publish(std::shared_ptr<const StateView> view);
  std::shared_ptr<const StateView> Current() const;
  // Waits until a view newer than `version` is published or `timeout`
  // passes; returns the current view either way.
  std::shared_ptr<const StateView> WaitNewer(int64_t version, std::chrono::milliseconds timeout) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<const StateView> current_;
};

}  // namespace tau::server
