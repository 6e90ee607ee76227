#pragma once

#include <cstdint>
#include <string>

namespace tau::sched {

// The message of a flavor-assignment verdict (why a workload does not fit
// now, or never can), kept as the amounts it names and formatted only when
// it is read: a pass parks most of the workloads it looks at, and only a
// few of those messages are ever shown. Text() is the same whenever it is
// called: the amounts are those of the moment the verdict was given.
struct VerdictMessage {
  enum class Kind {
    kText,       // `text` as it is
    kNeverFits,  // `requested` of `resource` is more than `bound` that can ever be available on `flavor`
    kShortfall,  // `requested` of `resource` on `flavor`, `bound` available now
  };
  Kind kind = Kind::kText;
  std::string text;
  std::string resource, flavor;
  int64_t requested = 0, bound = 0;  // milli-units of `resource`

  static VerdictMessage Of(std::string text) { return {Kind::kText, std::move(text), {}, {}, 0, 0}; }
  std::string Text() const;
};

// An amount of `resource` in milli-units as a quantity ("1500m", "64Gi" for
// memory).
std::string FormatAmount(const std::string& resource, int64_t milli);

}  // namespace tau::sched
