#include "server/api_request_head.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

namespace tau::server {
namespace {

// (strchr finds the terminating NUL too: it is no token character.)
bool IsTokenChar(unsigned char c) {
  return c != 0 && (std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string ShownBytes(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7F) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (text.size() > 40) out += "...";
  return out;
}

Status CheckHeaderLine(std::string_view line, std::string_view where) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError(fmt::format("the line \"{}\" {} is not a header: a header is name: value", ShownBytes(line), where));
  }
  const std::string_view name = line.substr(0, colon);
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return IsTokenChar(static_cast<unsigned char>(c)); })) {
    return InvalidArgumentError(fmt::format("the header name \"{}\" {} is malformed: "
                                            "a header name is letters, digits and !#$%&'*+-.^_`|~ followed at "
                                            "once by ':'",
                                            ShownBytes(name), where));
  }
  std::string_view value = line.substr(colon + 1);
  if (std::any_of(value.begin(), value.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && u != '\t') || u == 0x7F;
      })) {
    return InvalidArgumentError(fmt::format("the value of the header \"{}\" {} holds a "
                                            "control character",
                                            ShownBytes(name), where));
  }
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding")) {
    if (value.empty()) {
      return InvalidArgumentError(fmt::format("the header \"{}\" {} has no value",
                                              ShownBytes(name), where));
    }
    if (value.find('%') != std::string_view::npos) {
      return InvalidArgumentError(fmt::format("the header \"{}: {}\" {} is not a "
                                              "framing the API reads ('%' in it)",
                                              ShownBytes(name), ShownBytes(value), where));
    }
  }
  return Status::Ok();
}

Status CheckRequestHead(std::string_view head) {
  size_t start = 0;
  for (int number = 1; start < head.size(); ++number) {
    const size_t lf = head.find('\n', start);
    if (lf == std::string_view::npos) return Status::Ok();  // cut short: httplib answers it
    if (lf == start || head[lf - 1] != '\r') {
      return InvalidArgumentError(fmt::format("line {} of the request head ends with a bare LF; lines end with CRLF",
                                              number));
    }
    const std::string_view line = head.substr(start, lf - 1 - start);
    start = lf + 1;
    if (number == 1) continue;        // the request line: httplib checks it
    if (line.empty()) return Status::Ok();  // the end of the headers
    if (line[0] == ' ' || line[0] == '\t') {
      return InvalidArgumentError(fmt::format("line {} of the request head begins with white space (a folded "
                                              "header line); send each header on one line",
                                              number));
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("line {} of the request head (\"{}\") is not a header: a header is "
                                              "name: value",
                                              number, ShownBytes(line)));
    }
    const std::string where = fmt::format("on line {} of the request head", number);
    if (Status st = CheckHeaderLine(line, where); !st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace tau::server
