#include "server/submit_off_loop.h"

namespace tau::server {

Result<std::shared_ptr<const JobView>> SubmitOffLoop(ControlLoop& loop, JobManager& jobs, const SubmitRequest& request,
                                                     const JobHistory* history) {
  // A submit sent again (its answer was lost) gets its job without a new
  // folder: nothing to unpack, so it is answered on a full disk too.
  bool maybe_seen = !request.request_id.empty();
  if (maybe_seen && history) {
    auto seen = history->SubmitRequestSeen(request.request_id);
    maybe_seen = !seen.ok() || *seen;  // unreadable: the loop looks
  }
  if (maybe_seen) {
    auto repeated = loop.Call([&] { return jobs.FindRepeatedSubmit(request); });
    if (!repeated.ok() || *repeated) return repeated;
  }
  TAU_ASSIGN_OR_RETURN(PreparedJob prepared, jobs.PrepareSubmit(request));
  auto result = loop.Call([&] { return jobs.Submit(request, prepared); });
  // Submit removes the folder it does not use; this also covers a task
  // that threw.
  if (!result.ok() || (*result)->job.id != prepared.id) jobs.DiscardPrepared(prepared);
  return result;
}

}  // namespace tau::server
