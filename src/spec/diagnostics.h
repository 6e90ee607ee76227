#pragma once

#include <string>
#include <vector>

namespace tau::spec {

// Where a value came from: a file (1-based line and column) or a command-line
// override such as `--set compute.gpus=2` (file holds that text, line 0).
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  Location location;
  std::string message;
};

// Collects every problem found in a spec, so all of them are reported at
// once, the way a compiler does.
class Diagnostics {
 public:
  void Error(const Location& where, std::string message);
  void Warning(const Location& where, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  int error_count() const { return error_count_; }
  const std::vector<Diagnostic>& items() const { return items_; }

  // The diagnostics in reading order: files in first-seen order, then line
  // and column; --set overrides after the file; insertion order breaks ties.
  std::vector<Diagnostic> Sorted() const;

  // Diagnostics ordered by source (files in first-seen order, then line and
  // column; insertion order breaks ties), one per line:
  //   job.yaml:7:3: error: unknown field "gpu" in compute; did you mean "gpus"?
  //   --set compute.gpus=x: error: compute.gpus: expected an integer, got "x"
  std::string Format() const;

 private:
  std::vector<Diagnostic> items_;
  int error_count_ = 0;
};

std::string FormatDiagnostic(const Diagnostic& d);

}  // namespace tau::spec
