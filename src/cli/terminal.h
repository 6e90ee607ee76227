#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace tau::cli {

// Whether `stream` should get ANSI colours: it is a terminal, NO_COLOR is
// unset or empty, and TERM is not "dumb".
bool UseColor(std::FILE* stream);

enum class Style { kBold, kRed, kYellow, kGreen, kDim, kCyan };

// `text` wrapped in the style's escape codes when `color` is set.
std::string Styled(std::string_view text, Style style, bool color);

// Columns of the terminal on `stream`, or 0 when it is not a terminal.
int TerminalWidth(std::FILE* stream);

}  // namespace tau::cli
