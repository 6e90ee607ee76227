#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tau {

// Streaming SHA-256: Update any number of times, then FinalHex once.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Lowercase hex of the digest (64 characters). Call once.
  std::string FinalHex();

 private:
  std::array<uint32_t, 8> h_;
  std::array<unsigned char, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

// Lowercase hex SHA-256 of `data` (64 characters).
std::string Sha256Hex(std::string_view data);

}  // namespace tau
