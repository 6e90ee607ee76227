#include "cli/table.h"

#include <algorithm>
#include <numeric>

namespace tau::cli {

size_t DisplayWidth(const std::string& text) {
  size_t w = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++w;
  }
  return w;
}

namespace {

std::string Cut(const std::string& text, size_t width) {
  if (DisplayWidth(text) <= width) return text;
  if (width == 0) return "";
  std::string out;
  size_t w = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (w + 1 == width) break;
      ++w;
    }
    out += text[i];
  }
  return out + "\xE2\x80\xA6";
}

}  // namespace

std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows, int max_width) {
  const size_t n = header.size();
  std::vector<size_t> widths(n, 0);
  for (size_t c = 0; c < n; ++c) widths[c] = DisplayWidth(header[c]);
  for (const auto& row : rows) {
    for (size_t c = 0; c < n && c < row.size(); ++c) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  if (max_width > 0) {
    auto total = [&] { return std::accumulate(widths.begin(), widths.end(), size_t{0}) + 2 * (n - 1); };
    while (total() > static_cast<size_t>(max_width)) {
      auto widest = std::max_element(widths.begin(), widths.end());
      if (*widest <= 6) break;
      --*widest;
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < n; ++c) {
      std::string cell = Cut(c < cells.size() ? cells[c] : "", widths[c]);
      text += cell;
      if (c + 1 < n) text += std::string(widths[c] - DisplayWidth(cell) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

}  // namespace tau::cli
