#include "server/api_http_server.h"

#include <poll.h>

namespace tau::server {
namespace {

thread_local ApiConnection* current_connection = nullptr;
thread_local std::chrono::steady_clock::time_point request_started;
thread_local bool close_after_answer = false;

}  // namespace

// The largest request body a route takes.
size_t MaxBodyFor(const std::string& method, const std::string& pattern) {
  if (method == "PUT" && pattern.rfind("/api/v1/blobs/", 0) == 0) return kMaxBlobBody;
  if (pattern == "/api/v1/admin/apply") return kMaxApplyBody;
  return kMaxJsonBody;
}

ApiConnection* CurrentConnection() { return current_connection; }
void SetCurrentConnection(ApiConnection* connection) { current_connection = connection; }
void MarkRequestStarted() { request_started = std::chrono::steady_clock::now(); }
std::chrono::steady_clock::time_point RequestStarted() { return request_started; }

void CloseAfterAnswer(httplib::Response& res) {
  EndConnectionAfterAnswer(res);
  close_after_answer = true;
}

bool TakeCloseAfterAnswer() {
  const bool close = close_after_answer;
  close_after_answer = false;
  return close;
}

void LingeringClose(int fd, std::chrono::milliseconds wait) {
  if (fd < 0) return;
  ::shutdown(fd, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  size_t dropped = 0;
  char buf[16384];
  while (dropped < (size_t{64} << 20)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    dropped += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_RD);
}

}  // namespace tau::server
