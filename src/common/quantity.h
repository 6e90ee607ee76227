#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tau {

// A Kubernetes resource quantity ("500m", "2", "1.5", "64Gi", "1G", "1e3")
// held as an exact signed integer count of milli-units. Values that are not
// a whole number of milli-units ("1n", "0.0001") or that do not fit in int64
// milli-units (about 8Pi) are rejected, never rounded.
class Quantity {
 public:
  // How the quantity prefers to be printed: binary suffixes (Ki, Mi, ...)
  // or decimal ones (k, M, ...), as in the text it was parsed from.
  enum class Format { kDecimal, kBinary };

  constexpr Quantity() = default;
  static constexpr Quantity FromMilli(int64_t milli, Format f = Format::kDecimal) {
    return Quantity(milli, f);
  }
  static constexpr Quantity FromUnits(int64_t units, Format f = Format::kDecimal) {
    return Quantity(units * 1000, f);
  }

  // Parses Kubernetes quantity syntax. The error message says what is wrong
  // ("unknown suffix \"Gb\"; valid suffixes are ...").
  static Result<Quantity> Parse(std::string_view text);

  int64_t milli() const { return milli_; }
  // Whole units, rounded up (what a scheduler must reserve).
  int64_t CeilUnits() const;
  bool IsWholeUnits() const { return milli_ % 1000 == 0; }
  Format format() const { return format_; }

  // Canonical text in the quantity's format family: "500m", "2", "64Gi", "1G".
  std::string ToString() const;

  friend constexpr bool operator==(Quantity a, Quantity b) { return a.milli_ == b.milli_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) { return a.milli_ <=> b.milli_; }

 private:
  constexpr Quantity(int64_t milli, Format f) : milli_(milli), format_(f) {}
  int64_t milli_ = 0;
  Format format_ = Format::kDecimal;
};

}  // namespace tau
