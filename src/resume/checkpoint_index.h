#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "spec/job_spec.h"

namespace tau::resume {

// The checkpoint contract (docs/checkpoints.md). A checkpoint is a direct
// child of the job's TAU_CHECKPOINT_DIR, a file or a folder, whose name
// matches checkpoint.include (default: its layout's globs,
// resume/checkpoint_layout.h):
//   - it is complete once renamed into place: names ending ".tmp" or
//     ".partial", starting with "." or "tmp-checkpoint-", or holding
//     ".orbax-checkpoint-tmp-", are never complete;
//   - plain layout: files or folders; when any folder carries a ".complete"
//     marker file, the job uses markers, and folders without one are not
//     complete (yet);
//   - huggingface: folders holding trainer_state.json (written last);
//   - orbax: folders; when any carries commit_success.txt, only those;
//   - deepspeed: folders: the tag `latest` names, and those finished before
//     `latest` was written;
//   - it became complete at its mtime (a folder: its marker's mtime, else
//     the newest mtime of anything in it); the newest checkpoint is the one
//     that became complete last, ties broken by the greater name.
struct Checkpoint {
  std::string name;
  bool folder = false;
  int64_t size_bytes = 0;      // a folder: all its files together
  int64_t completed_at_ms = 0;  // ms since the Unix epoch
  // "sha256:HEX" of a file's bytes; of a folder, the SHA-256 of its sorted
  // "relative/path<TAB>sha256-hex<LF>" lines. Empty until digested.
  std::string digest;
  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

// True for names that never denote a complete checkpoint.
bool IsIncompleteName(std::string_view name);

// The complete checkpoints under `dir`, newest first, without digests
// (cheap: stat calls only). A missing folder lists nothing.
Result<std::vector<Checkpoint>> ListCheckpoints(const std::filesystem::path& dir,
                                                const spec::CheckpointSpec& rules = {});

// Like ListCheckpoints, with digests. Entries of `known` with the same name,
// size and completion time keep their digest instead of being read again.
Result<std::vector<Checkpoint>> IndexCheckpoints(const std::filesystem::path& dir, const std::vector<Checkpoint>& known,
                                                 const spec::CheckpointSpec& rules = {});

// Deletes the complete checkpoints beyond the `keep` newest of `index`
// (newest first), never one named in `protect`. Returns the index of what
// is left and appends the names deleted to `deleted`.
std::vector<Checkpoint> PruneCheckpoints(const std::filesystem::path& dir, std::vector<Checkpoint> index, int64_t keep,
                                         const std::vector<std::string>& protect, std::vector<std::string>* deleted);

// The index as stored with the job (a JSON array) and back; unreadable
// text gives an empty index.
std::string CheckpointsToJson(const std::vector<Checkpoint>& index);
std::vector<Checkpoint> CheckpointsFromJson(std::string_view json);

}  // namespace tau::resume
