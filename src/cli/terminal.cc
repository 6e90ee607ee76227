#include "cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace tau::cli {

bool UseColor(std::FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(::fileno(stream)) == 1;
}

std::string Styled(std::string_view text, Style style, bool color) {
  if (!color) return std::string(text);
  const char* code = "";
  switch (style) {
    case Style::kBold: code = "\033[1m"; break;
    case Style::kRed: code = "\033[1;31m"; break;
    case Style::kYellow: code = "\033[1;33m"; break;
    case Style::kGreen: code = "\033[32m"; break;
    case Style::kDim: code = "\033[2m"; break;
    case Style::kCyan: code = "\033[36m"; break;
  }
  std::string out = code;
  out += text;
  out += "\033[0m";
  return out;
}

int TerminalWidth(std::FILE* stream) {
  struct winsize ws {};
  if (::ioctl(::fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

}  // namespace tau::cli
