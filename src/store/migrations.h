#pragma once

#include <span>
#include <string_view>

namespace tau::store {

// The schema as an ordered list of migrations: migration i (0-based) moves
// the database from user_version i to i + 1. Migrations are append-only;
// a released migration is never edited.
std::span<const std::string_view> Migrations();

}  // namespace tau::store
