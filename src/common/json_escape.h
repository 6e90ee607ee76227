#pragma once

#include <string>
#include <string_view>

namespace tau {

// Appends `text` as a JSON string literal (with the quotes) to `out`.
// Control characters become \u00XX; invalid UTF-8 bytes become U+FFFD.
void AppendJsonString(std::string* out, std::string_view text);

}  // namespace tau
