#include "render/yaml_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <nlohmann/json.hpp>

namespace tau::render {
namespace {

using nlohmann::json;

bool IsIndicator(char c) {
  static constexpr std::string_view kIndicators = "-?:,[]{}#&*!|>'\"%@`";
  return kIndicators.find(c) != std::string_view::npos;
}

// Words YAML 1.1 resolves to booleans or null (go-yaml quotes them too).
bool IsReservedWord(std::string_view s) {
  static constexpr std::string_view kWords[] = {
      "~",   "null", "Null", "NULL", "y",   "Y",    "yes",  "Yes",   "YES",   "n",
      "N",   "no",   "No",   "NO",   "true", "True", "TRUE", "false", "False", "FALSE",
      "on",  "On",   "ON",   "off",  "Off", "OFF",  "<<",   "=",     ".inf",  ".Inf",
      ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN"};
  return std::find(std::begin(kWords), std::end(kWords), s) != std::end(kWords);
}

// What a YAML 1.1 or 1.2 parser resolves to an int or a float (go-yaml and
// PyYAML still read 1.1 forms such as 0777, 0b101, 1_000 and 1:30).
bool LooksNumeric(std::string_view s) {
  static const std::regex kNumber(
      "[-+]?(0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?"
      "|([0-9][0-9_]*)?\\.?[0-9_]*([eE][-+]?[0-9]+)?|\\.(inf|Inf|INF)|\\.(nan|NaN|NAN))");
  if (s.empty() || s.find_first_of("0123456789") == std::string_view::npos) {
    static const std::regex kWordNumber("[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
    return std::regex_match(s.begin(), s.end(), kWordNumber);
  }
  return std::regex_match(s.begin(), s.end(), kNumber);
}

// Characters YAML 1.1 readers (PyYAML, go-yaml) take for line breaks in
// any scalar, and the byte-order mark, which no document may hold: NEL,
// LINE SEPARATOR, PARAGRAPH SEPARATOR, ZERO WIDTH NO-BREAK SPACE. Each
// with the escape that writes it in a double-quoted scalar.
struct SpecialChar {
  std::string_view utf8;
  std::string_view escape;
};
constexpr SpecialChar kSpecialChars[] = {
    {"\xC2\x85", "\\N"}, {"\xE2\x80\xA8", "\\L"}, {"\xE2\x80\xA9", "\\P"}, {"\xEF\xBB\xBF", "\\uFEFF"}};

bool HasSpecialChar(std::string_view s) {
  return std::any_of(std::begin(kSpecialChars), std::end(kSpecialChars),
                     [&](const SpecialChar& c) { return s.find(c.utf8) != std::string_view::npos; });
}

void AppendDoubleQuoted(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto special = std::find_if(std::begin(kSpecialChars), std::end(kSpecialChars),
                                      [&](const SpecialChar& sc) { return s.substr(i).starts_with(sc.utf8); });
    if (special != std::end(kSpecialChars)) {
      out->append(special->escape);
      i += special->utf8.size() - 1;
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\t': out->append("\\t"); break;
      case '\r': out->append("\\r"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out->append(fmt::format("\\x{:02x}", static_cast<unsigned char>(c)));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// A literal block keeps the text exactly when no line has leading or
// trailing blanks and nothing needs escaping.
bool FitsLiteralBlock(std::string_view s) {
  if (s.find('\n') == std::string_view::npos || HasSpecialChar(s)) return false;
  if (s.find("\n\n\n") != std::string_view::npos && s.ends_with("\n\n")) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    std::string_view line = s.substr(start, end == std::string_view::npos ? s.npos : end - start);
    // Only the first line fixes the block's indentation; later lines may be
    // indented further. Trailing blanks would be invisible, so avoid them.
    bool first = start == 0;
    if (!line.empty() && ((first && (line.front() == ' ' || line.front() == '\t')) ||
                          line.back() == ' ' || line.back() == '\t')) {
      return false;
    }
    for (char c : line) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) return false;
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  // "|" keeps one trailing newline, "|-" none; more trailing newlines need "|+".
  return !s.ends_with("\n\n") && !s.starts_with("\n");
}

void AppendScalar(std::string* out, const json& v) {
  switch (v.type()) {
    case json::value_t::null: out->append("null"); break;
    case json::value_t::boolean: out->append(v.get<bool>() ? "true" : "false"); break;
    case json::value_t::number_integer: out->append(std::to_string(v.get<int64_t>())); break;
    case json::value_t::number_unsigned: out->append(std::to_string(v.get<uint64_t>())); break;
    case json::value_t::number_float: out->append(v.dump()); break;
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (NeedsQuotes(s)) AppendDoubleQuoted(out, s);
      else out->append(s);
      break;
    }
    default: break;
  }
}

bool IsEmptyCollection(const json& v) { return (v.is_object() || v.is_array()) && v.empty(); }

void AppendIndent(std::string* out, int n) { out->append(static_cast<size_t>(n), ' '); }

void EmitValueAfterKey(std::string* out, const json& v, int indent);

// Emits the entries of a non-empty object; the first line's indentation is
// already written when `first_inline` is set (after "- ").
void EmitObject(std::string* out, const json& obj, int indent, bool first_inline) {
  bool first = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!(first && first_inline)) AppendIndent(out, indent);
    first = false;
    if (NeedsQuotes(it.key())) AppendDoubleQuoted(out, it.key());
    else out->append(it.key());
    out->push_back(':');
    EmitValueAfterKey(out, it.value(), indent);
  }
}

void EmitArray(std::string* out, const json& arr, int indent, bool first_inline) {
  bool first = true;
  for (const json& item : arr) {
    if (!(first && first_inline)) AppendIndent(out, indent);
    first = false;
    out->append("- ");
    if (item.is_object() && !item.empty()) {
      EmitObject(out, item, indent + 2, true);
    } else if (item.is_array() && !item.empty()) {
      EmitArray(out, item, indent + 2, true);
    } else if (IsEmptyCollection(item)) {
      out->append(item.is_object() ? "{}\n" : "[]\n");
    } else if (item.is_string() && FitsLiteralBlock(item.get_ref<const std::string&>())) {
      out->pop_back();  // EmitValueAfterKey writes its own separating space
      EmitValueAfterKey(out, item, indent);
    } else {
      AppendScalar(out, item);
      out->push_back('\n');
    }
  }
}

void EmitValueAfterKey(std::string* out, const json& v, int indent) {
  if (v.is_object() && !v.empty()) {
    out->push_back('\n');
    EmitObject(out, v, indent + 2, false);
  } else if (v.is_array() && !v.empty()) {
    out->push_back('\n');
    EmitArray(out, v, indent, false);
  } else if (IsEmptyCollection(v)) {
    out->append(v.is_object() ? " {}\n" : " []\n");
  } else if (v.is_string() && FitsLiteralBlock(v.get_ref<const std::string&>())) {
    const std::string& s = v.get_ref<const std::string&>();
    out->append(s.ends_with('\n') ? " |\n" : " |-\n");
    size_t start = 0;
    std::string_view body = s.ends_with('\n') ? std::string_view(s).substr(0, s.size() - 1) : s;
    while (true) {
      size_t end = body.find('\n', start);
      std::string_view line = body.substr(start, end == std::string_view::npos ? body.npos : end - start);
      if (!line.empty()) AppendIndent(out, indent + 2);
      out->append(line);
      out->push_back('\n');
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
  } else {
    out->push_back(' ');
    AppendScalar(out, v);
    out->push_back('\n');
  }
}

// What a YAML 1.1 parser resolves to a timestamp (PyYAML and go-yaml read
// `2024-01-01` as a date): YAML 1.1's timestamp regular expression.
bool LooksLikeTimestamp(std::string_view s) {
  if (s.size() < 8 || s[0] < '0' || s[0] > '9') return false;
  static const std::regex kTimestamp(
      "[0-9]{4}-[0-9]{2}-[0-9]{2}"
      "|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\\.[0-9]*)?"
      "([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?");
  return std::regex_match(s.begin(), s.end(), kTimestamp);
}

}  // namespace

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  if (IsReservedWord(s) || LooksNumeric(s) || LooksLikeTimestamp(s)) return true;
  // '-', '?' and ':' start a plain scalar when a non-space follows ("--lr").
  const bool dash_like = s[0] == '-' || s[0] == '?' || s[0] == ':';
  if (dash_like && (s.size() == 1 || s[1] == ' ')) return true;
  if (!dash_like && IsIndicator(s[0])) return true;
  if (s[0] == ' ' || s.back() == ' ' || s.back() == ':') return true;
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) return true;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return HasSpecialChar(s);
}

std::string EmitYaml(const json& value) {
  std::string out;
  if (value.is_object() && !value.empty()) {
    EmitObject(&out, value, 0, false);
  } else if (value.is_array() && !value.empty()) {
    EmitArray(&out, value, 0, false);
  } else if (IsEmptyCollection(value)) {
    out = value.is_object() ? "{}\n" : "[]\n";
  } else {
    AppendScalar(&out, value);
    out.push_back('\n');
  }
  return out;
}

}  // namespace tau::render
