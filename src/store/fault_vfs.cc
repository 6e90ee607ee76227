#include "store/fault_vfs.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <map>
#include <memory>
#include <mutex>

namespace tau::store {
namespace {

// One registered VFS: SQLite's struct first, so a sqlite3_vfs* is one.
struct Registered {
  sqlite3_vfs vfs;
  sqlite3_vfs* real;
  FaultVfs* faults;
};

// An open file: ours first, the real VFS's file right after it.
struct File {
  sqlite3_file base;
  FaultVfs* faults;
  sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};

File* AsFile(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return AsFile(f)->real(); }

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) { return Real(f)->pMethods->xRead(Real(f), buf, n, off); }
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  if (AsFile(f)->faults->disk_full()) return SQLITE_FULL;
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) { return Real(f)->pMethods->xTruncate(Real(f), size); }
int Sync(sqlite3_file* f, int flags) {
  if (AsFile(f)->faults->disk_full()) return SQLITE_FULL;
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) { return Real(f)->pMethods->xFileSize(Real(f), size); }
int Lock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) { return Real(f)->pMethods->xCheckReservedLock(Real(f), out); }
int FileControl(sqlite3_file* f, int op, void* arg) { return Real(f)->pMethods->xFileControl(Real(f), op, arg); }
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) { return Real(f)->pMethods->xDeviceCharacteristics(Real(f)); }
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** pp) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, pp);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) { return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags); }
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** pp) {
  if (Real(f)->pMethods->iVersion < 3) {
    *pp = nullptr;
    return SQLITE_OK;
  }
  return Real(f)->pMethods->xFetch(Real(f), off, n, pp);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  if (Real(f)->pMethods->iVersion < 3) return SQLITE_OK;
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

const sqlite3_io_methods kMethods = {
    3,         Close,       Read,     Write,    Truncate,   Sync,     FileSize,  Lock,
    Unlock,    CheckReservedLock, FileControl, SectorSize, DeviceCharacteristics, ShmMap, ShmLock,
    ShmBarrier, ShmUnmap,   Fetch,    Unfetch,
};

Registered* AsRegistered(sqlite3_vfs* vfs) { return reinterpret_cast<Registered*>(vfs); }

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  Registered* reg = AsRegistered(vfs);
  File* file = AsFile(f);
  file->base.pMethods = nullptr;
  file->faults = reg->faults;
  int rc = reg->real->xOpen(reg->real, name, file->real(), flags, out_flags);
  if (rc == SQLITE_OK && file->real()->pMethods != nullptr) file->base.pMethods = &kMethods;
  return rc;
}
int Delete(sqlite3_vfs* vfs, const char* name, int sync) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xDelete(real, name, sync);
}
int Access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xAccess(real, name, flags, out);
}
int FullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xFullPathname(real, name, n, out);
}
void* DlOpen(sqlite3_vfs* vfs, const char* name) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xDlOpen(real, name);
}
void DlError(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  real->xDlError(real, n, out);
}
void (*DlSym(sqlite3_vfs* vfs, void* handle, const char* sym))(void) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xDlSym(real, handle, sym);
}
void DlClose(sqlite3_vfs* vfs, void* handle) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  real->xDlClose(real, handle);
}
int Randomness(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xRandomness(real, n, out);
}
int Sleep(sqlite3_vfs* vfs, int micros) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xSleep(real, micros);
}
int CurrentTime(sqlite3_vfs* vfs, double* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xCurrentTime(real, out);
}
int GetLastError(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xGetLastError ? real->xGetLastError(real, n, out) : 0;
}
int CurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  sqlite3_vfs* real = AsRegistered(vfs)->real;
  return real->xCurrentTimeInt64(real, out);
}

}  // namespace

Result<FaultVfs*> FaultVfs::Register(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Registered>> registered;
  static std::map<std::string, std::unique_ptr<FaultVfs>> faults;
  std::lock_guard lock(mu);
  if (auto it = faults.find(name); it != faults.end()) return it->second.get();
  sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
  if (real == nullptr) return InternalError("SQLite has no default VFS");
  if (real->iVersion < 2) return InternalError("SQLite's default VFS is too old to wrap");
  auto f = std::unique_ptr<FaultVfs>(new FaultVfs(name));
  auto reg = std::make_unique<Registered>();
  reg->real = real;
  reg->faults = f.get();
  sqlite3_vfs& v = reg->vfs;
  v = sqlite3_vfs{};
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(sizeof(File)) + real->szOsFile;
  v.mxPathname = real->mxPathname;
  v.zName = f->name_.c_str();
  v.xOpen = Open;
  v.xDelete = Delete;
  v.xAccess = Access;
  v.xFullPathname = FullPathname;
  v.xDlOpen = DlOpen;
  v.xDlError = DlError;
  v.xDlSym = DlSym;
  v.xDlClose = DlClose;
  v.xRandomness = Randomness;
  v.xSleep = Sleep;
  v.xCurrentTime = CurrentTime;
  v.xGetLastError = GetLastError;
  v.xCurrentTimeInt64 = CurrentTimeInt64;
  if (int rc = sqlite3_vfs_register(&v, 0); rc != SQLITE_OK) {
    return InternalError(fmt::format("cannot register the SQLite VFS {}: {}", name, sqlite3_errstr(rc)));
  }
  FaultVfs* out = f.get();
  registered[name] = std::move(reg);
  faults[name] = std::move(f);
  return out;
}

}  // namespace tau::store
