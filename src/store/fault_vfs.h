#pragma once

#include <atomic>
#include <string>

#include "common/result.h"

namespace tau::store {

// A SQLite VFS that passes every call to the platform's default VFS and can
// be told to fail writes the way a full disk does (SQLITE_FULL), so tests
// can break the store's disk on purpose (the role of LevelDB's Env).
// Databases opened with its name (Database::Open's `vfs`) use it.
class FaultVfs {
 public:
  // Registers (once per name; later calls return the same one) a VFS named
  // `name`. It lives until the process ends.
  static Result<FaultVfs*> Register(const std::string& name);

  const std::string& name() const { return name_; }
  // While set, every write to a database file fails with SQLITE_FULL.
  void SetDiskFull(bool full) { disk_full_.store(full); }
  bool disk_full() const { return disk_full_.load(); }

 private:
  explicit FaultVfs(std::string name) : name_(std::move(name)) {}

  std::string name_;
  std::atomic<bool> disk_full_{false};
};

}  // namespace tau::store
