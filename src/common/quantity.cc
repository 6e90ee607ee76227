#include "common/quantity.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>

namespace tau {
namespace {

using Int128 = __int128;

constexpr std::string_view kSuffixHelp =
    "valid suffixes are m, k, M, G, T, P, E (powers of 1000), Ki, Mi, Gi, Ti, Pi, Ei "
    "(powers of 1024) and e<N> (powers of 10)";

struct Suffix {
  int pow2 = 0;   // multiplier 2^pow2
  int pow10 = 0;  // multiplier 10^pow10
  Quantity::Format format = Quantity::Format::kDecimal;
};

bool ParseSuffix(std::string_view s, Suffix* out, std::string* error) {
  if (s.empty()) return true;
  static constexpr struct { std::string_view name; int pow2; int pow10; bool binary; } kTable[] = {
      {"n", 0, -9, false}, {"u", 0, -6, false}, {"m", 0, -3, false}, {"k", 0, 3, false},
      {"M", 0, 6, false},  {"G", 0, 9, false},  {"T", 0, 12, false}, {"P", 0, 15, false},
      {"E", 0, 18, false}, {"Ki", 10, 0, true}, {"Mi", 20, 0, true}, {"Gi", 30, 0, true},
      {"Ti", 40, 0, true}, {"Pi", 50, 0, true}, {"Ei", 60, 0, true},
  };
  for (const auto& e : kTable) {
    if (s == e.name) {
      out->pow2 = e.pow2;
      out->pow10 = e.pow10;
      out->format = e.binary ? Quantity::Format::kBinary : Quantity::Format::kDecimal;
      return true;
    }
  }
  if (s[0] == 'e' || s[0] == 'E') {
    std::string_view exp = s.substr(1);
    bool negative = false;
    if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) {
      negative = exp[0] == '-';
      exp.remove_prefix(1);
    }
    if (!exp.empty() && exp.size() <= 3) {
      int value = 0;
      bool digits = true;
      for (char c : exp) {
        if (!std::isdigit(static_cast<unsigned char>(c))) digits = false;
        else value = value * 10 + (c - '0');
      }
      if (digits) {
        out->pow10 = negative ? -value : value;
        return true;
      }
    }
  }
  *error = fmt::format("unknown suffix \"{}\"; {}", s, kSuffixHelp);
  return false;
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty quantity");
  std::string_view s = text;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::string int_digits, frac_digits;
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) int_digits += s[i++];
  bool has_point = false;
  if (i < s.size() && s[i] == '.') {
    has_point = true;
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) frac_digits += s[i++];
  }
  if (int_digits.empty() && frac_digits.empty()) {
    return InvalidArgumentError(fmt::format(
        "\"{}\" is not a quantity: expected a number with an optional suffix, like 500m, 2, 1.5 "
        "or 64Gi",
        text));
  }
  (void)has_point;
  Suffix suffix;
  std::string error;
  if (!ParseSuffix(s.substr(i), &suffix, &error)) {
    return InvalidArgumentError(fmt::format("\"{}\": {}", text, error));
  }

  // value = digits * 10^(pow10 - frac) * 2^pow2, in milli-units: * 10^3.
  size_t lead = int_digits.find_first_not_of('0');
  int_digits = lead == std::string::npos ? "" : int_digits.substr(lead);
  while (!frac_digits.empty() && frac_digits.back() == '0') frac_digits.pop_back();
  std::string digits = int_digits + frac_digits;
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Quantity(0, suffix.format);
  const std::string too_large =
      fmt::format("\"{}\" is too large (the largest quantity is about 8Pi)", text);
  if (digits.size() - first > 30) return InvalidArgumentError(too_large);

  Int128 mantissa = 0;
  for (char c : digits) mantissa = mantissa * 10 + (c - '0');
  int pow10 = suffix.pow10 - static_cast<int>(frac_digits.size()) + 3;
  constexpr Int128 kLimit = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < suffix.pow2; ++k) {
    mantissa *= 2;
    if (mantissa > kLimit) return InvalidArgumentError(too_large);
  }
  for (; pow10 > 0; --pow10) {
    mantissa *= 10;
    if (mantissa > kLimit) return InvalidArgumentError(too_large);
  }
  for (; pow10 < 0; ++pow10) {
    if (mantissa % 10 != 0) {
      return InvalidArgumentError(fmt::format(
          "\"{}\" is finer than the smallest unit, 1m (one thousandth)", text));
    }
    mantissa /= 10;
  }
  if (mantissa > kLimit) return InvalidArgumentError(too_large);
  int64_t milli = static_cast<int64_t>(mantissa);
  return Quantity(negative ? -milli : milli, suffix.format);
}

int64_t Quantity::CeilUnits() const {
  if (milli_ >= 0) return milli_ / 1000 + (milli_ % 1000 != 0 ? 1 : 0);
  return milli_ / 1000;
}

std::string Quantity::ToString() const {
  if (milli_ % 1000 != 0) return fmt::format("{}m", milli_);
  int64_t units = milli_ / 1000;
  if (units == 0) return "0";
  const int64_t magnitude = units < 0 ? -units : units;
  if (format_ == Format::kBinary) {
    static constexpr std::string_view kBinary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    for (int k = 6; k >= 1; --k) {
      int64_t base = int64_t{1} << (10 * k);
      if (magnitude % base == 0) return fmt::format("{}{}", units / base, kBinary[k - 1]);
    }
    return fmt::format("{}", units);
  }
  static constexpr std::string_view kDecimal[] = {"k", "M", "G", "T", "P", "E"};
  int64_t base = 1;
  int best = 0;
  for (int k = 1; k <= 6; ++k) {
    if (base > std::numeric_limits<int64_t>::max() / 1000) break;
    base *= 1000;
    if (magnitude % base == 0) best = k;
  }
  if (best == 0) return fmt::format("{}", units);
  int64_t div = 1;
  for (int k = 0; k < best; ++k) div *= 1000;
  return fmt::format("{}{}", units / div, kDecimal[best - 1]);
}

}  // namespace tau
