#include "spec/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tau::spec {

void Diagnostics::Error(const Location& where, std::string message) {
  items_.push_back({Severity::kError, where, std::move(message)});
  ++error_count_;
}

void Diagnostics::Warning(const Location& where, std::string message) {
  items_.push_back({Severity::kWarning, where, std::move(message)});
}

std::string FormatDiagnostic(const Diagnostic& d) {
  const char* kind = d.severity == Severity::kError ? "error" : "warning";
  if (d.location.line > 0) {
    return fmt::format("{}:{}:{}: {}: {}", d.location.file, d.location.line, d.location.column,
                       kind, d.message);
  }
  if (!d.location.file.empty()) return fmt::format("{}: {}: {}", d.location.file, kind, d.message);
  return fmt::format("{}: {}", kind, d.message);
}

std::vector<Diagnostic> Diagnostics::Sorted() const {
  std::map<std::string, size_t> file_order;
  for (const auto& d : items_) file_order.emplace(d.location.file, file_order.size());
  std::vector<size_t> order(items_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Location& la = items_[a].location;
    const Location& lb = items_[b].location;
    // Overrides (line 0) come after the file they apply to.
    auto key = [&](const Location& l) {
      return std::tuple(l.line == 0 ? 1 : 0, file_order[l.file], l.line, l.column);
    };
    return key(la) < key(lb);
  });
  std::vector<Diagnostic> out;
  out.reserve(order.size());
  for (size_t i : order) out.push_back(items_[i]);
  return out;
}

std::string Diagnostics::Format() const {
  std::string out;
  for (const Diagnostic& d : Sorted()) {
    out += FormatDiagnostic(d);
    out += '\n';
  }
  return out;
}

}  // namespace tau::spec
