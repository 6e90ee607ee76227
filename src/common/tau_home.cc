#include "common/tau_home.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <cstdlib>
#include <random>

namespace tau {

std::filesystem::path TauHome::DefaultRoot() {
  if (const char* home = std::getenv("TAU_HOME"); home && *home) return home;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "taugrid";
  }
  const char* user_home = std::getenv("HOME");
  return std::filesystem::path(user_home && *user_home ? user_home : "/tmp") / ".local/share/taugrid";
}

bool TauHome::IsBlobDigest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.size() != kPrefix.size() + 64 || !digest.starts_with(kPrefix)) return false;
  for (char c : digest.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::filesystem::path TauHome::blob(const std::string& digest) const {
  std::string hex = digest.starts_with("sha256:") ? digest.substr(7) : digest;
  return root_ / "blobs" / "sha256" / hex;
}

std::filesystem::path TauHome::attempt_dir(const std::string& id, int64_t attempt) const {
  return job_dir(id) / "attempts" / std::to_string(attempt);
}

std::filesystem::path TauHome::log_file(const std::string& id, int64_t attempt, int rank) const {
  return attempt_dir(id, attempt) / fmt::format("rank-{}.log", rank);
}

std::filesystem::path TauHome::status_file(const std::string& id, int64_t attempt, int rank) const {
  return attempt_dir(id, attempt) / fmt::format("rank-{}.status.json", rank);
}

std::filesystem::path TauHome::attempt_lock(const std::string& id, int64_t attempt, int rank) const {
  return shim_dir(id) / std::to_string(attempt) / fmt::format("rank-{}.lock", rank);
}

std::filesystem::path TauHome::legacy_attempt_lock(const std::string& id, int64_t attempt, int rank) const {
  return attempt_dir(id, attempt) / fmt::format("rank-{}.lock", rank);
}

std::string NewJobId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  unsigned char bytes[10];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    std::random_device rd;
    for (auto& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string id = "j_";
  for (unsigned char b : bytes) id += kAlphabet[b % 32];
  return id;
}

std::string NewRequestId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  unsigned char bytes[26];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    std::random_device rd;
    for (auto& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string id = "r_";
  for (unsigned char b : bytes) id += kAlphabet[b % 32];
  return id;
}

bool IsJobId(std::string_view s) {
  if (s.size() != 12 || !s.starts_with("j_")) return false;
  for (char c : s.substr(2)) {
    if (!((c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'))) return false;
  }
  return true;
}

}  // namespace tau
