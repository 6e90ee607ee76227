#pragma once

#include <string>
#include <string_view>

namespace tau {

// Lowercase hex SHA-256 of `data` (64 characters).
std::string Sha256Hex(std::string_view data);

}  // namespace tau
