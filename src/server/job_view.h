#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/tau_home.h"
#include "sched/resources.h"
#include "server/state_view.h"
#include "spec/job_spec.h"
#include "store/records.h"

namespace tau::server {

// The stored (canonical JSON) spec of a job, decoded again.
Result<spec::JobSpec> DecodeStoredSpec(const std::string& json);

// The part of a stored spec a JobView shows (workload kind, compute,
// retry.max_restarts, checkpoint.keep, experiment), read straight from the
// canonical JSON; the rest of the JobSpec keeps its defaults. Much cheaper
// than DecodeStoredSpec, for reading many ended jobs; falls back to it when
// the JSON is not in the canonical shape.
Result<spec::JobSpec> DecodeViewedSpec(const std::string& json);

// What a job of `spec` asks of the machine: all workers together.
sched::Resources RequestOf(const spec::JobSpec& spec);

// What readers see of a job, from its record, attempts (oldest first) and
// decoded spec: everything but its progress. Secret values are left out;
// their names are kept.
std::shared_ptr<JobView> NewJobView(const store::JobRecord& rec, std::vector<store::AttemptRecord> attempts,
                                    const spec::JobSpec& spec, const TauHome& home, int64_t max_interruptions);

// The line that starts attempt `a`'s output in a log of several attempts:
// "--- attempt 2 (gpu_fault, resumed from step-00025) ---\n", with the
// retry reason (TAU_RETRY_REASON) and the checkpoint's name when it
// resumed from one.
std::string AttemptSeparatorLine(const store::AttemptRecord& a);

}  // namespace tau::server
