#include "common/open_retrying.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace tau {

bool IsTransientOpenError(int err) { return err == EMFILE || err == ENFILE || err == ENOMEM || err == EINTR; }

bool IsTransientReadError(const Status& st) {
  return st.code() == StatusCode::kResourceExhausted || st.code() == StatusCode::kUnavailable;
}

int OpenRetrying(const char* path, int flags, std::chrono::milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    const int fd = ::open(path, flags);
    if (fd >= 0 || !IsTransientOpenError(errno)) return fd;
    const int err = errno;
    if (err != EINTR) {
      if (std::chrono::steady_clock::now() >= until) {
        errno = err;
        return -1;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }
}

}  // namespace tau
