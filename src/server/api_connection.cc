#include "server/api_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tau::server {
namespace {

constexpr size_t kReadBuffer = 4096;

int PollFor(int sock, short events, std::chrono::milliseconds timeout) {
  pollfd p{sock, events, 0};
  while (true) {
    int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, timeout.count())));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n;
    return (p.revents & (events | POLLHUP | POLLERR)) != 0 ? 1 : 0;
  }
}

void AddressOf(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    port = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    port = ntohs(in6.sin6_port);
  }
  ip = text;
}

}  // namespace

ApiConnection::ApiConnection(int sock, ConnectionTimeouts timeouts)
    : sock_(sock), timeouts_(timeouts), buffer_(kReadBuffer) {}

void ApiConnection::BeginRequest() {
  in_head_ = true;
  head_timed_out_ = false;
  body_timed_out_ = false;
  head_.clear();
  head_too_long_ = false;
  waited_out_ = false;
  head_deadline_ = std::chrono::steady_clock::now() + timeouts_.head_timeout;
  body_deadline_ = head_deadline_ + timeouts_.body_timeout;
}

void ApiConnection::Prime(std::string bytes, std::chrono::steady_clock::time_point head_started) {
  if (buffer_.size() < bytes.size()) buffer_.resize(bytes.size());
  std::memcpy(buffer_.data(), bytes.data(), bytes.size());
  buffer_start_ = 0;
  buffer_end_ = bytes.size();
  BeginRequest();
  head_deadline_ = head_started + timeouts_.head_timeout;
  body_deadline_ = head_deadline_ + timeouts_.body_timeout;
}

int ApiConnection::WaitReadable(std::chrono::milliseconds timeout) const { return PollFor(sock_, POLLIN, timeout); }

std::chrono::milliseconds ApiConnection::ReadBudget() const {
  const auto deadline = in_head_ ? head_deadline_ : body_deadline_;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(std::chrono::milliseconds(0), std::min(left, timeouts_.read_timeout));
}

bool ApiConnection::is_readable() const {
  if (HasBufferedData()) return true;
  const auto budget = ReadBudget();
  if (WaitReadable(budget) > 0) return true;
  waited_out_ = true;
  // Nothing came within what was left of the head's (or body's) time: it
  // is late (not merely one slow read).
  if (budget < timeouts_.read_timeout) (in_head_ ? head_timed_out_ : body_timed_out_) = true;
  return false;
}

ssize_t ApiConnection::read(char* ptr, size_t size) {
  // A head past what is kept of it is not read further: httplib would
  // keep every line of it (8 KiB each, without end) until the deadline.
  if (in_head_ && head_too_long_) return -1;
  if (!HasBufferedData()) {
    if (!is_readable()) return -1;
    // Large reads (bodies) go straight to the caller.
    if (size >= buffer_.size()) {
      ssize_t n;
      do {
        n = ::recv(sock_, ptr, size, 0);
      } while (n < 0 && errno == EINTR);
      if (n > 0) KeepHead(ptr, static_cast<size_t>(n));
      return n;
    }
    ssize_t n;
    do {
      n = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    buffer_start_ = 0;
    buffer_end_ = static_cast<size_t>(n);
  }
  size_t n = std::min(size, buffer_end_ - buffer_start_);
  std::memcpy(ptr, buffer_.data() + buffer_start_, n);
  buffer_start_ += n;
  KeepHead(ptr, n);
  return static_cast<ssize_t>(n);
}

void ApiConnection::KeepHead(const char* bytes, size_t n) {
  if (!in_head_) return;
  const size_t room = kKeptHead - std::min(kKeptHead, head_.size());
  head_.append(bytes, std::min(room, n));
  if (n > room) head_too_long_ = true;
}

bool ApiConnection::is_writable() const {
  if (PollFor(sock_, POLLOUT, timeouts_.write_timeout) <= 0) return false;
  // A peer that has closed reads as readable with nothing to read: a
  // stream to it should end (httplib's own streams check the same).
  if (PollFor(sock_, POLLIN, std::chrono::milliseconds(0)) == 0) return true;
  char byte;
  return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

ssize_t ApiConnection::write(const char* ptr, size_t size) {
  if (PollFor(sock_, POLLOUT, timeouts_.write_timeout) <= 0) return -1;
  ssize_t n;
  do {
    n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

void ApiConnection::get_remote_ip_and_port(std::string& ip, int& port) const {
  if (in_head_) body_deadline_ = std::chrono::steady_clock::now() + timeouts_.body_timeout;
  in_head_ = false;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ip.clear();
  port = 0;
  if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) AddressOf(a, ip, port);
}

void ApiConnection::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ip.clear();
  port = 0;
  if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) AddressOf(a, ip, port);
}

}  // namespace tau::server
