#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "sched/resources.h"

namespace tau::sched {

// A job waiting to be admitted, in submission order.
struct PendingJob {
  std::string id;
  Resources request;  // all workers together
};

// The seam the admission engine fills: decides which pending jobs start
// now. Pure: no I/O, no clock, no threads; the same inputs give the same
// answer.
class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;

  // Ids of the jobs to start now, in the order to start them. `free` is
  // what the machine has not handed out.
  virtual std::vector<std::string> Admit(std::span<const PendingJob> pending,
                                         const Resources& free) const = 0;

  // OK when a job asking for `request` can ever run on a machine of
  // `total` capacity; otherwise FailedPrecondition naming the gap, so it is
  // refused at submit instead of queueing forever.
  virtual Status CheckFeasible(const Resources& request, const Resources& total) const = 0;
};

// First in, first out over free capacity, best effort: walks the queue in
// submission order and starts every job that fits what is still free, so a
// large job waiting at the head does not hold back small ones behind it.
class FifoPolicy final : public AdmissionPolicy {
 public:
  std::vector<std::string> Admit(std::span<const PendingJob> pending,
                                 const Resources& free) const override;
  Status CheckFeasible(const Resources& request, const Resources& total) const override;
};

}  // namespace tau::sched
