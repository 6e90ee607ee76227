#include "spec/env_file.h"

#include <fmt/format.h>

#include "common/names.h"

namespace tau::spec {

StringPairs ParseEnvFile(std::string_view text, std::string_view file_name, Diagnostics* diags) {
  StringPairs out;
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++line_no;
    Location at{std::string(file_name), line_no, 1};
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    size_t column = first + 1;  // of line[0] in the file
    if (line.starts_with("export ")) {
      line = line.substr(7);
      column += 7;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      diags->Error(at, "expected KEY=VALUE");
      continue;
    }
    std::string key = line.substr(0, eq);
    std::string value = line.substr(eq + 1);
    if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
      // A value that opens a quote must close it on the same line; taking
      // the text with its stray quote would hand the job a different secret.
      if (value.size() < 2 || value.back() != value.front()) {
        diags->Error(Location{std::string(file_name), line_no, static_cast<int>(column + eq + 1)},
                     fmt::format("the {} quote that opens the value of {} is never closed on this line",
                                 value.front() == '"' ? "double" : "single", key));
        continue;
      }
      value = value.substr(1, value.size() - 2);
    }
    if (Status st = CheckEnvVarName(key); !st.ok()) {
      diags->Error(at, st.message());
      continue;
    }
    if (IsReservedEnvName(key)) {
      diags->Error(at, fmt::format("{} is set by TauGrid and cannot be set here", key));
      continue;
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

}  // namespace tau::spec
