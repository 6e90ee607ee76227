#pragma once

#include <memory>

#include "common/result.h"
#include "server/control_loop.h"
#include "server/job_history.h"
#include "server/job_manager.h"

namespace tau::server {

// Submits `request` the way the API does: the slow file work (unpacking
// the snapshot, digesting its files) runs on the calling thread, and only
// the checks against the state and the commit run on `loop`, so a large
// snapshot never stalls the control loop. Must not be called on the loop.
// With `history`, whether the request id is new is read from the database
// on the calling thread: a new id (nearly every submit) costs the loop
// only the commit. (Submit checks the id again in the commit's task.)
Result<std::shared_ptr<const JobView>> SubmitOffLoop(ControlLoop& loop, JobManager& jobs, const SubmitRequest& request,
                                                     const JobHistory* history = nullptr);

}  // namespace tau::server
