#include "sched/verdict_message.h"

#include <fmt/format.h>

#include "common/quantity.h"

namespace tau::sched {

std::string FormatAmount(const std::string& resource, int64_t milli) {
  return resource == "memory" ? Quantity::FromUnits(milli / 1000, Quantity::Format::kBinary).ToString()
                              : Quantity::FromMilli(milli).ToString();
}

std::string VerdictMessage::Text() const {
  switch (kind) {
    case Kind::kText: return text;
    case Kind::kNeverFits:
      return fmt::format("{} {} requested, at most {} of flavor {} can ever be available",
                         FormatAmount(resource, requested), resource, FormatAmount(resource, bound), flavor);
    case Kind::kShortfall:
      return fmt::format("{} {} of flavor {} requested, {} available", FormatAmount(resource, requested), resource,
                         flavor, FormatAmount(resource, bound));
  }
  return text;
}

}  // namespace tau::sched
