#include "store/records.h"

namespace tau::store {

namespace {
constexpr std::string_view kJobStates[] = {"Queued",    "Admitted", "Running",  "Retrying",
                                           "Succeeded", "Failed",   "Cancelled"};
constexpr std::string_view kAttemptStates[] = {"Starting", "Running", "Succeeded", "Failed",
                                               "Cancelled"};
}  // namespace

std::string_view JobStateName(JobState s) { return kJobStates[static_cast<int>(s)]; }

std::optional<JobState> ParseJobState(std::string_view name) {
  for (size_t i = 0; i < std::size(kJobStates); ++i) {
    if (kJobStates[i] == name) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

std::string_view AttemptStateName(AttemptState s) { return kAttemptStates[static_cast<int>(s)]; }

std::optional<AttemptState> ParseAttemptState(std::string_view name) {
  for (size_t i = 0; i < std::size(kAttemptStates); ++i) {
    if (kAttemptStates[i] == name) return static_cast<AttemptState>(i);
  }
  return std::nullopt;
}

}  // namespace tau::store
