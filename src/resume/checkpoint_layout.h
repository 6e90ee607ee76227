#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/job_spec.h"

namespace tau::resume {

// The layouts a checkpoint folder is known in (docs/checkpoints.md#layouts)
// and which of its entries each one offers as checkpoints:
//   - plain: files or folders named like checkpoints (step-N, *.pt, ...);
//   - huggingface: transformers' Trainer, checkpoint-N/ folders;
//   - orbax: orbax-checkpoint's CheckpointManager, one folder per step
//     named by the step, written as N.orbax-checkpoint-tmp-T and renamed;
//   - deepspeed: DeepSpeed's save_checkpoint, a folder per tag
//     (global_stepN) and a `latest` file naming the newest tag.

// The layout the folder's contents show (never kAuto):
//   - a regular file `latest`: deepspeed;
//   - a folder named by digits only or holding _CHECKPOINT_METADATA, or a
//     child with ".orbax-checkpoint-tmp-" in its name: orbax;
//   - a folder named checkpoint-N or tmp-checkpoint-N: huggingface;
//   - else plain.
spec::CheckpointLayout DetectLayout(const std::filesystem::path& dir);

// `layout`, with kAuto resolved by DetectLayout.
spec::CheckpointLayout ResolveLayout(const std::filesystem::path& dir, spec::CheckpointLayout layout);

// The globs a layout includes when checkpoint.include is not given
// (deepspeed adds the tag its `latest` names to these).
const std::vector<std::string>& DefaultInclude(spec::CheckpointLayout layout);

// The globs a layout leaves out when checkpoint.include is not given:
// for plain, names of logs, locks, tables and text (steps.log,
// checkpoint.lock, epoch_1.csv, 2024-01-01.txt), which its globs would
// otherwise take. An explicit checkpoint.include has no exclusions.
const std::vector<std::string>& DefaultExclude(spec::CheckpointLayout layout);

// Whether `name` matches one of `globs` (fnmatch(3), no flags).
bool MatchesAny(std::string_view name, const std::vector<std::string>& globs);

// The tag DeepSpeed's `latest` file in `dir` names (its text without
// surrounding white space); nullopt when there is no such regular file, it
// is empty or larger than 4 KiB, or the tag is not a plain name.
std::optional<std::string> DeepSpeedLatestTag(const std::filesystem::path& dir);

}  // namespace tau::resume
