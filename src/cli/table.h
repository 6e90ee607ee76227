#pragma once

#include <string>
#include <vector>

namespace tau::cli {

// A plain-text table: left-aligned columns separated by two spaces. When
// `max_width` > 0 and the table is wider, the widest columns are cut with
// "…" until it fits.
std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows, int max_width);

// Display width of UTF-8 text (one column per code point; good enough for
// the names and states tables show).
size_t DisplayWidth(const std::string& text);

}  // namespace tau::cli
