#include "server/api_body.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tau::server {
using nlohmann::json;

namespace {

// Length of the well-formed UTF-8 character at text[i], 0 when there is
// none (RFC 3629, Table 3-7 of the Unicode standard).
size_t CharLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  const unsigned c = byte(i);
  if (c < 0x80) return 1;
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return byte(k) >= lo && byte(k) <= hi; };
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c == 0xE0) return cont(i + 1, 0xA0, 0xBF) && cont(i + 2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
  if (c == 0xF0) return cont(i + 1, 0x90, 0xBF) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

// Follows a parse to know, when it fails, which field it was in.
class FieldTracker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    levels_.push_back({true, "", false, 0});
    return true;
  }
  bool key(string_t& k) override {
    levels_.back().key = k;
    levels_.back().expecting_value = true;
    return true;
  }
  bool end_object() override {
    levels_.pop_back();
    return Value();
  }
  bool start_array(std::size_t) override {
    levels_.push_back({false, "", false, 0});
    return true;
  }
  bool end_array() override {
    levels_.pop_back();
    return Value();
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    failed_at_ = position;
    message_ = e.what();
    return false;
  }

  // Where the parse stopped: the field ("spec.name", "env[2]"), or "a key
  // of spec" when it was reading a key; "" at the top level.
  std::string Where() const {
    std::string path;
    bool in_key = false;
    for (size_t i = 0; i < levels_.size(); ++i) {
      const Level& l = levels_[i];
      const bool last = i + 1 == levels_.size();
      if (l.object) {
        if (last && !l.expecting_value) {
          in_key = true;
          break;
        }
        path += (path.empty() ? "" : ".") + l.key;
      } else {
        path += fmt::format("[{}]", l.count);
      }
    }
    if (in_key) return path.empty() ? "a key of the top-level object" : "a key of " + path;
    return path;
  }
  // The parser's position when it failed (bytes read, the failing one
  // included), 0 when it did not.
  size_t failed_at() const { return failed_at_; }
  const std::string& message() const { return message_; }

 private:
  struct Level {
    bool object;
    std::string key;       // objects: the last key read
    bool expecting_value;  // objects: a key was read, its value not yet
    size_t count;          // arrays: elements read
  };
  bool Value() {
    if (levels_.empty()) return true;
    Level& l = levels_.back();
    if (l.object) l.expecting_value = false;
    else ++l.count;
    return true;
  }
  std::vector<Level> levels_;
  size_t failed_at_ = 0;
  std::string message_;
};

std::string_view KindOf(const json& j) {
  switch (j.type()) {
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    default: return "not an object";
  }
}

}  // namespace

size_t FirstInvalidUtf8Byte(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = CharLength(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

namespace {

// Where `body` first nests deeper than `limit` arrays and objects (strings
// skipped), or npos. Checked before parsing: code that walks a parsed
// value recursively (dump, spec checks) must not meet a depth that
// overflows a thread's stack.
size_t FirstTooDeep(std::string_view body, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Result<json> ParseJsonObjectBody(std::string_view body, json* details) {
  if (body.empty()) return InvalidArgumentError("the request body is empty; send a JSON object");
  if (const size_t deep = FirstTooDeep(body, kMaxJsonBodyDepth); deep != std::string_view::npos) {
    if (details) *details = {{"offset", deep}};
    return InvalidArgumentError(fmt::format("the request body nests arrays and objects deeper than {} levels "
                                            "(at offset {})",
                                            kMaxJsonBodyDepth, deep));
  }
  json value = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!value.is_discarded()) {
    if (!value.is_object()) {
      return InvalidArgumentError(fmt::format("the request body is {}; send a JSON object", KindOf(value)));
    }
    return value;
  }
  // Parsed again, only to say where it fails.
  const size_t bad = FirstInvalidUtf8Byte(body);
  FieldTracker tracker;
  const bool parsed = json::sax_parse(body, &tracker, json::input_format_t::json, /*strict=*/true);
  if (!parsed && bad != std::string_view::npos && tracker.failed_at() >= bad + 1) {
    // The parser stopped at (or within the character begun by) the first
    // byte that is not UTF-8.
    const std::string where = tracker.Where();
    const unsigned byte = static_cast<unsigned char>(body[bad]);
    if (details) *details = {{"offset", bad}, {"byte", fmt::format("0x{:02X}", byte)}, {"field", where}};
    return InvalidArgumentError(fmt::format("the request body is not valid UTF-8: byte 0x{:02X} at offset {} ({}) "
                                            "does not begin or continue a UTF-8 character",
                                            byte, bad, where.empty() ? "outside any field" : "in " + where));
  }
  {
    std::string message = tracker.message();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (size_t close = message.find("] "); message.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
      message.erase(0, close + 2);
    }
    const std::string where = tracker.Where();
    return InvalidArgumentError(fmt::format("the request body is not JSON{}: {}",
                                            where.empty() ? "" : " (in " + where + ")", message));
  }
}

}  // namespace tau::server
