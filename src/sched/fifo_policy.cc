#include <fmt/format.h>

#include "common/quantity.h"
#include "sched/admission_policy.h"

namespace tau::sched {

std::string Describe(const Resources& r) {
  std::string out = fmt::format("{} CPU, {} memory",
                                Quantity::FromMilli(r.cpus_milli).ToString(),
                                Quantity::FromUnits(r.memory_bytes, Quantity::Format::kBinary).ToString());
  if (r.gpus > 0) out += fmt::format(", {} GPU{}", r.gpus, r.gpus == 1 ? "" : "s");
  return out;
}

std::vector<std::string> FifoPolicy::Admit(std::span<const PendingJob> pending,
                                           const Resources& free) const {
  std::vector<std::string> admitted;
  Resources left = free;
  for (const PendingJob& job : pending) {
    if (job.request.FitsIn(left)) {
      left -= job.request;
      admitted.push_back(job.id);
    }
  }
  return admitted;
}

Status FifoPolicy::CheckFeasible(const Resources& request, const Resources& total) const {
  std::vector<std::string> gaps;
  if (request.cpus_milli > total.cpus_milli) {
    gaps.push_back(fmt::format("{} CPU requested, the machine has {}",
                               Quantity::FromMilli(request.cpus_milli).ToString(),
                               Quantity::FromMilli(total.cpus_milli).ToString()));
  }
  if (request.memory_bytes > total.memory_bytes) {
    gaps.push_back(fmt::format(
        "{} memory requested, the machine has {}",
        Quantity::FromUnits(request.memory_bytes, Quantity::Format::kBinary).ToString(),
        Quantity::FromUnits(total.memory_bytes, Quantity::Format::kBinary).ToString()));
  }
  if (request.gpus > total.gpus) {
    gaps.push_back(fmt::format("{} GPU{} requested, the machine has {}", request.gpus,
                               request.gpus == 1 ? "" : "s", total.gpus));
  }
  if (gaps.empty()) return Status::Ok();
  std::string msg = "the job can never run on this machine: ";
  for (size_t i = 0; i < gaps.size(); ++i) msg += (i ? "; " : "") + gaps[i];
  return FailedPreconditionError(msg);
}

}  // namespace tau::sched
