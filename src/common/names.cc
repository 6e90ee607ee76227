#include "common/names.h"

#include <fmt/format.h>

namespace tau {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

}  // namespace

Status CheckDns1123Label(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("must not be empty");
  if (s.size() > 63) {
    return InvalidArgumentError(fmt::format("\"{}\" is {} characters; at most 63 are allowed", s, s.size()));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') {
      return InvalidArgumentError(fmt::format(
          "\"{}\" has an uppercase letter; use lowercase letters, digits and '-'", s));
    }
    if (!IsLowerAlnum(c) && c != '-') {
      return InvalidArgumentError(fmt::format(
          "\"{}\" contains '{}' at position {}; use lowercase letters, digits and '-'", s,
          c, i + 1));
    }
  }
  if (!IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) {
    return InvalidArgumentError(
        fmt::format("\"{}\" must start and end with a lowercase letter or digit", s));
  }
  return Status::Ok();
}

Status CheckDns1123Subdomain(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("must not be empty");
  if (s.size() > 253) {
    return InvalidArgumentError(fmt::format("\"{}\" is {} characters; at most 253 are allowed", s, s.size()));
  }
  if (s.find('.') == std::string_view::npos && s.size() <= 63) return CheckDns1123Label(s);
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty()) return InvalidArgumentError(fmt::format("\"{}\" has an empty part between dots", s));
    Status st = CheckDns1123Label(label);
    if (!st.ok()) {
      return InvalidArgumentError(fmt::format("\"{}\": part {}", s, st.message()));
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return Status::Ok();
}

Status CheckEnvVarName(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("an environment variable name must not be empty");
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) {
      return InvalidArgumentError(fmt::format(
          "\"{}\" is not a valid environment variable name: use letters, digits and '_', not "
          "starting with a digit",
          s));
    }
  }
  return Status::Ok();
}

Status CheckLabelValue(std::string_view s) {
  if (s.empty()) return Status::Ok();
  if (s.size() > 63) {
    return InvalidArgumentError(fmt::format("\"{}\" is {} characters; a label value has at most 63", s, s.size()));
  }
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return InvalidArgumentError(fmt::format(
          "\"{}\" contains '{}'; a label value uses letters, digits, '-', '_' and '.'", s, c));
    }
  }
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) {
    return InvalidArgumentError(fmt::format("\"{}\" must start and end with a letter or digit", s));
  }
  return Status::Ok();
}

Status CheckRequestId(std::string_view text) {
  if (text.empty() || text.size() > 128) {
    return InvalidArgumentError(fmt::format("request_id must be 1 to 128 characters long, not {}", text.size()));
  }
  for (char c : text) {
    if (!IsAlnum(c) && c != '.' && c != '_' && c != ':' && c != '-') {
      return InvalidArgumentError(fmt::format("request_id \"{}\" may hold only letters, digits and . _ : -", text));
    }
  }
  return Status::Ok();
}

}  // namespace tau
