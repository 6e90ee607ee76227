#pragma once

#include <string>

#include "common/result.h"
#include "server/control_loop.h"
#include "server/job_manager.h"

namespace tau::server {

// The job's evidence capsule the way the API serves it: only copying the
// job's state runs on `loop` (JobManager::EvidenceSourceOf); reading the
// blobs, the events and the log sizes runs on the calling thread, so a job
// with large logs or a long timeline never stalls the control loop. Must
// not be called on the loop.
Result<std::string> EvidenceOffLoop(ControlLoop& loop, JobManager& jobs, const std::string& id_or_name);

}  // namespace tau::server
