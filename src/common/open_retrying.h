#pragma once

// open(2) that rides out a brief shortage. A status or lock file the
// daemon reads to learn how an attempt ended must not be taken for absent
// because, for a moment, the process had no free descriptor (EMFILE), the
// system none (ENFILE), or the kernel no memory (ENOMEM): that would make
// a job that ran to its end look lost.

#include <chrono>

#include "common/status.h"

namespace tau {

// Opens `path` with `flags` (no O_CREAT: no mode), trying again every few
// milliseconds for up to `patience` while open fails with EMFILE, ENFILE,
// ENOMEM or EINTR. Returns the descriptor, or -1 with errno set by the
// last try.
int OpenRetrying(const char* path, int flags, std::chrono::milliseconds patience = std::chrono::milliseconds(250));

// Whether `err` is one of the shortages OpenRetrying waits out.
bool IsTransientOpenError(int err);

// Whether a failed read says only that the process was short of
// something for a while (ErrnoError of EMFILE, ENFILE, ENOMEM: the code
// ResourceExhausted; EAGAIN, EBUSY: Unavailable), so that the read should
// be made again rather than anything concluded from it.
bool IsTransientReadError(const Status& st);

}  // namespace tau
