#pragma once

#include <string>

namespace tau::cli {

// tau checkpoints JOB [-o json|yaml]: the job's complete checkpoints,
// newest first (docs/checkpoints.md).
int RunCheckpoints(const std::string& job, const std::string& output);

// tau resume JOB [--from CHECKPOINT] [-f]: a new attempt of an ended job
// from its newest (or the named) checkpoint.
int RunResume(const std::string& job, const std::string& from, bool follow);

}  // namespace tau::cli
