#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tau {

using Duration = std::chrono::milliseconds;

// Parses a Go-style duration: one or more <number><unit> terms with units
// ms, s, m, h and d ("30s", "5m", "1h30m", "1.5h", "7d", "250ms"), or "0".
// Fractions must come out as whole milliseconds. Negative durations are
// rejected.
Result<Duration> ParseDuration(std::string_view text);

// Shortest exact text ParseDuration accepts back: "30s", "1h30m", "7d",
// "1m500ms", "0s".
std::string FormatDuration(Duration d);

// Human text for tables: "3s", "4m12s", "2h5m", "3d4h" (rounded down to the
// two largest units).
std::string FormatDurationShort(Duration d);

}  // namespace tau
