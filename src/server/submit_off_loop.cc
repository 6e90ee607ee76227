#include "server/submit_off_loop.h"

namespace tau::server {

Result<std::shared_ptr<const JobView>> SubmitOffLoop(ControlLoop& loop, JobManager& jobs, const SubmitRequest& request) {
  TAU_ASSIGN_OR_RETURN(PreparedJob prepared, jobs.PrepareSubmit(request));
  auto result = loop.Call([&] { return jobs.Submit(request, prepared); });
  // Submit removes the folder it does not use; this also covers a task
  // that threw.
  if (!result.ok() || (*result)->job.id != prepared.id) jobs.DiscardPrepared(prepared);
  return result;
}

}  // namespace tau::server
