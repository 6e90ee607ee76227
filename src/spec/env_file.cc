#include "spec/env_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "common/names.h"

namespace tau::spec {
namespace {

// The offset of the first byte of `text` that is not part of well-formed
// UTF-8 (or is a NUL, which no environment can carry), or npos.
size_t FirstBadByte(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0) return i;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned int min = 0;
    unsigned int cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return i;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= text.size()) return i;
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

}  // namespace

StringPairs ParseEnvFile(std::string_view text, std::string_view file_name, Diagnostics* diags) {
  StringPairs out;
  std::map<std::string, int> line_of;  // where each key was set
  int line_no = 0;
  size_t start = 0;
  // A byte-order mark some editors write first is not part of the first key.
  if (text.starts_with("\xEF\xBB\xBF")) start = 3;
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
        const size_t close = value.find(value.front(), 1);
        const std::string quote = value.front() == '"' ? "double" : "single";
        diags->Error(Location{std::string(file_name), line_no, static_cast<int>(column + eq + 1)},
                     close == std::string::npos
                         ? fmt::format("the {} quote that opens the value of {} is never closed on this line", quote, key)
                         : fmt::format("the value of {} goes on after its closing {} quote (at column {}); quote "
                                       "the whole value",
                                       key, quote, column + eq + 1 + close));
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
    // The value may be a secret: the message names where the bad byte is,
    // never the value's bytes.
    if (size_t bad = FirstBadByte(value); bad != std::string::npos) {
      diags->Error(at, fmt::format("the value of {} is not valid UTF-8 text: {} at byte {} of the value; an "
                                   "environment variable must be text",
                                   key, value[bad] == '\0' ? "a NUL byte" : "a byte that is not UTF-8", bad + 1));
      continue;
    }
    if (auto [it, fresh] = line_of.emplace(key, line_no); !fresh) {
      diags->Error(at, fmt::format("{} is set twice, on lines {} and {}; which one is meant?", key, it->second, line_no));
      continue;
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

std::optional<StringPairs> ReadEnvFile(const std::filesystem::path& path, const Location& at, Diagnostics* diags) {
  std::stringstream text;
  std::string name = path.string();
  if (path == "-") {
    name = "<stdin>";
    text << std::cin.rdbuf();
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      diags->Error(at, fmt::format("env file {} is a folder, not a file of KEY=VALUE lines", name));
      return std::nullopt;
    }
    std::ifstream in(path);
    if (!in) {
      diags->Error(at, fmt::format("cannot read env file {}: {}", name, std::strerror(errno)));
      return std::nullopt;
    }
    text << in.rdbuf();
    if (in.bad()) {
      diags->Error(at, fmt::format("cannot read env file {}: {}", name, std::strerror(errno)));
      return std::nullopt;
    }
  }
  const int errors_before = diags->error_count();
  StringPairs vars = ParseEnvFile(text.str(), name, diags);
  if (diags->error_count() != errors_before) return std::nullopt;
  return vars;
}

}  // namespace tau::spec
