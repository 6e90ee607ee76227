#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tau {

// The layout of TAU_HOME, the embedded control plane's state folder
// (docs/state.md):
//   taugrid.db            SQLite database (WAL)
//   taugridd.lock         held by the running taugridd
//   server.json, token    how clients find and authenticate to it
//   server.log            its log when started in the background
//   blobs/sha256/HEX      uploaded code snapshots (content-addressed)
//   jobs/ID/code/         the job's unpacked snapshot (its working folder)
//   jobs/ID/attempts/N/   rank-R.log, rank-R.status.json
//   jobs/ID/checkpoints/  jobs/ID/outputs/  jobs/ID/metrics.jsonl
//   shims/ID/N/rank-R.lock  each rank's shim lock and record, kept out of
//                           the job's folder so nothing it does there
//                           removes them
class TauHome {
 public:
  explicit TauHome(std::filesystem::path root) : root_(std::move(root)) {}

  // $TAU_HOME, else $XDG_DATA_HOME/taugrid, else ~/.local/share/taugrid.
  static std::filesystem::path DefaultRoot();

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path database() const { return root_ / "taugrid.db"; }
  std::filesystem::path daemon_lock() const { return root_ / "taugridd.lock"; }
  std::filesystem::path server_json() const { return root_ / "server.json"; }
  std::filesystem::path token() const { return root_ / "token"; }
  std::filesystem::path server_log() const { return root_ / "server.log"; }
  // `digest` is "sha256:HEX".
  std::filesystem::path blob(const std::string& digest) const;
  // Whether `digest` names a blob: "sha256:" and 64 lowercase hex digits
  // (anything else, "../x" included, is no path under blobs/).
  static bool IsBlobDigest(std::string_view digest);
  std::filesystem::path job_dir(const std::string& id) const { return root_ / "jobs" / id; }
  std::filesystem::path code_dir(const std::string& id) const { return job_dir(id) / "code"; }
  std::filesystem::path attempt_dir(const std::string& id, int64_t attempt) const;
  std::filesystem::path log_file(const std::string& id, int64_t attempt, int rank) const;
  std::filesystem::path status_file(const std::string& id, int64_t attempt, int rank = 0) const;
  // The lock a rank's tau-shim holds, with its record (docs/shim.md).
  std::filesystem::path attempt_lock(const std::string& id, int64_t attempt, int rank = 0) const;
  // Where shims started by an earlier version kept it, in the job's folder.
  std::filesystem::path legacy_attempt_lock(const std::string& id, int64_t attempt, int rank = 0) const;
  // Every lock of a job's shims.
  std::filesystem::path shim_dir(const std::string& id) const { return root_ / "shims" / id; }
  std::filesystem::path checkpoint_dir(const std::string& id) const { return job_dir(id) / "checkpoints"; }
  std::filesystem::path output_dir(const std::string& id) const { return job_dir(id) / "outputs"; }
  std::filesystem::path metrics_file(const std::string& id) const { return job_dir(id) / "metrics.jsonl"; }

 private:
  std::filesystem::path root_;
};

// A new job id: "j_" and 10 random characters from a-z and 2-7 (base32),
// which is never a valid job name (names cannot contain '_').
std::string NewJobId();
// A fresh random submit request id: "r_" + 26 characters of a-z2-7.
std::string NewRequestId();
bool IsJobId(std::string_view text);

}  // namespace tau
