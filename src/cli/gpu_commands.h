#pragma once

#include <string>

namespace tau::cli {

// tau nodes [-o json|yaml] (alias tau gpus): the machine's GPUs with their
// health, telemetry and the job on each, then recent GPU events.
int RunNodes(const std::string& output);

// tau admin gpu clear|drain|undrain GPU (an index, a UUID or the start of one).
int RunAdminGpu(const std::string& action, const std::string& gpu);

}  // namespace tau::cli
