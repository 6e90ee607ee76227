#pragma once

// Opening the files a job left behind (outputs, logs, checkpoints, the
// metrics file) without letting the job point the daemon elsewhere: every
// component of the path is resolved beneath a trusted folder, and none may
// be a symbolic link, so `ln -s /etc outputs/etc` or a log replaced by a
// link to a secret serves nothing.

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace tau {

enum class BeneathKind {
  kRegularFile,  // opened O_RDONLY; fifos, devices, sockets and folders are refused
  kDirectory,    // opened O_RDONLY | O_DIRECTORY
};

// Opens `relative` beneath the folder `root` (which is trusted and may
// itself be reached through links). `relative` is '/'-separated; empty and
// "." components are skipped, but a trailing '/' names a folder, so it
// never opens a file. Uses openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
// where the kernel has it, else walks the components with
// openat(O_NOFOLLOW). A fifo or device is never opened (it is
// checked with fstatat first and opened O_NONBLOCK), so it cannot block or
// have side effects. The descriptor is O_CLOEXEC. Errors:
//   InvalidArgument   `relative` is empty, absolute, holds ".." or a NUL
//   NotFound          a component does not exist (or `root` does not)
//   PermissionDenied  a component is a symbolic link, a folder on the way
//                     is not a folder, or the file is not of `kind`
Result<UniqueFd> OpenBeneath(const std::filesystem::path& root, std::string_view relative,
                             BeneathKind kind = BeneathKind::kRegularFile);
// Opens `path`, which must lie lexically under `root` (as the paths
// TauHome builds do), beneath `root`. A path outside it is InvalidArgument.
Result<UniqueFd> OpenPathBeneath(const std::filesystem::path& root, const std::filesystem::path& path,
                                 BeneathKind kind = BeneathKind::kRegularFile);
// The same beneath an already open folder.
Result<UniqueFd> OpenBeneathAt(int root_fd, std::string_view relative, BeneathKind kind = BeneathKind::kRegularFile);

// Whether this kernel accepts openat2 with RESOLVE_BENEATH (probed once).
bool HaveOpenat2();
// Tests: forces the component-wise walk even where openat2 exists.
void ForceComponentWalkForTesting(bool force);

}  // namespace tau
