#include "server/evidence_off_loop.h"

#include <utility>

namespace tau::server {

Result<std::string> EvidenceOffLoop(ControlLoop& loop, JobManager& jobs, const std::string& id_or_name) {
  TAU_ASSIGN_OR_RETURN(EvidenceSource source, loop.Call([&] { return jobs.EvidenceSourceOf(id_or_name); }));
  return jobs.AssembleEvidence(std::move(source));
}

}  // namespace tau::server
