#include "portal/assets.h"

namespace tau::portal {

const Asset* FindAsset(std::string_view name) {
  for (const Asset& a : Assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace tau::portal
