#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace tau::portal {

// A static file of the web portal, embedded in taugridd at build time
// (cmake/EmbedFiles.cmake from src/portal/assets/).
struct Asset {
  std::string_view name;          // "app.js"
  std::string_view content_type;  // "application/javascript; charset=utf-8"
  const char* data;
  size_t size;
};

const std::vector<Asset>& Assets();

// The asset of that name, or nullptr.
const Asset* FindAsset(std::string_view name);

}  // namespace tau::portal
