#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "spec/fields.h"

namespace tau::spec {

std::string FieldReferenceMarkdown() {
  std::string out;
  for (const FieldDoc& f : AllFields()) {
    size_t depth = static_cast<size_t>(std::count(f.path.begin(), f.path.end(), '.'));
    out += fmt::format("{} `{}`\n\n", depth == 0 ? "###" : "####", f.path);
    out += fmt::format("- **Type:** {}\n", f.type_text);
    if (!f.values.empty()) {
      std::vector<std::string> quoted;
      for (std::string_view v : f.values) quoted.push_back(fmt::format("`{}`", v));
      out += fmt::format("- **Values:** {}\n", Join(quoted, ", "));
    }
    if (f.required) out += "- **Required:** yes\n";
    else if (!f.default_text.empty()) out += fmt::format("- **Default:** {}\n", f.default_text);
    else out += "- **Default:** none\n";
    out += fmt::format("\n{}\n\n", f.description);
    // Nest the example under its parents so it can be pasted into a spec.
    std::vector<std::string> parts = Split(f.path, '.');
    std::string example, indent;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      example += indent + parts[i] + ":\n";
      indent += "  ";
    }
    for (const std::string& line : Split(f.example, '\n')) example += indent + line + "\n";
    out += fmt::format("```yaml\n{}```\n\n", example);
  }
  return out;
}

}  // namespace tau::spec
