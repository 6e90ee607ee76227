#include "server/api_head_gate.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tau::server {
namespace {

constexpr int kEvents = 256;

}  // namespace

HeadGate::HeadGate(HeadGateOptions options, Ready ready) : options_(options), ready_(std::move(ready)) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    stopped_ = true;  // Park refuses: connections wait on their threads
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
}

HeadGate::~HeadGate() {
  Shutdown();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

HeadGate::Head HeadGate::ReadAvailable(int sock, std::string* bytes, size_t* scanned) const {
  char buf[8192];
  while (bytes->size() < options_.max_head) {
    const size_t want = std::min(sizeof buf, options_.max_head - bytes->size());
    ssize_t n = ::recv(sock, buf, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n == 0 && !bytes->empty()) {
      // The peer is done sending: what came is all the request there is,
      // for the HTTP layer to serve or refuse (a half-closed client still
      // reads the answer).
      *scanned = bytes->size();
      return Head::kWhole;
    }
    if (n <= 0) return Head::kClosed;  // the peer closed, or the socket failed
    bytes->append(buf, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < want) break;
  }
  // The end of a head is an empty line; only what came since the last look
  // (and the three bytes before it) can hold a new one.
  size_t from = *scanned >= 3 ? *scanned - 3 : 0;
  bool whole = bytes->find("\r\n\r\n", from) != std::string::npos || bytes->size() >= options_.max_head;
  *scanned = bytes->size();
  return whole ? Head::kWhole : Head::kPartial;
}

bool HeadGate::Park(int sock, std::string bytes, Clock::time_point head_started, uint64_t tag) {
  std::lock_guard lock(mutex_);
  if (stopped_ || parked_.size() >= options_.max_parked || parked_.count(sock)) return false;
  const auto now = Clock::now();
  Entry entry;
  entry.bytes = std::move(bytes);
  entry.scanned = entry.bytes.size();
  entry.tag = tag;
  entry.head_started = entry.bytes.empty() ? Clock::time_point{} : head_started;
  entry.deadline = entry.bytes.empty() ? now + options_.idle_timeout : head_started + options_.head_timeout;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = sock;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sock, &ev) != 0) return false;
  deadlines_.emplace(entry.deadline, sock);
  parked_.emplace(sock, std::move(entry));
  // The gate's thread sleeps until the earliest deadline it knew of.
  if (deadlines_.begin()->second == sock) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  return true;
}

void HeadGate::ForgetLocked(int sock, const Entry& entry) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sock, nullptr);
  deadlines_.erase({entry.deadline, sock});
}

void HeadGate::Close(int sock) const {
  if (options_.closed) {
    options_.closed(sock);
    return;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

void HeadGate::Shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_ && !thread_.joinable()) return;
    stopped_ = true;
  }
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  std::lock_guard lock(mutex_);
  for (auto& [sock, entry] : parked_) {
    ForgetLocked(sock, entry);
    Close(sock);
  }
  parked_.clear();
  deadlines_.clear();
}

size_t HeadGate::parked() const {
  std::lock_guard lock(mutex_);
  return parked_.size();
}

uint64_t HeadGate::late_answers() const {
  std::lock_guard lock(mutex_);
  return late_answers_;
}

void HeadGate::Run() {
  epoll_event events[kEvents];
  while (true) {
    int timeout_ms = -1;
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      if (!deadlines_.empty()) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadlines_.begin()->first - Clock::now());
        timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60000));
      }
    }
    int n = ::epoll_wait(epoll_fd_, events, kEvents, timeout_ms);
    if (n < 0 && errno != EINTR) return;
    std::vector<HandBack> hand_back;
    std::vector<int> to_close;
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      const auto now = Clock::now();
      for (int i = 0; i < n; ++i) {
        const int sock = events[i].data.fd;
        if (sock == wake_fd_) {
          uint64_t count;
          (void)!::read(wake_fd_, &count, sizeof count);
          continue;
        }
        auto it = parked_.find(sock);
        if (it == parked_.end()) continue;
        Entry& entry = it->second;
        if (entry.answered) {
          // Lingering after the late answer: what comes is dropped; the
          // client's close ends it.
          char drop[4096];
          ssize_t got;
          while ((got = ::recv(sock, drop, sizeof drop, MSG_DONTWAIT)) > 0) {
          }
          if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            ForgetLocked(sock, entry);
            to_close.push_back(sock);
            parked_.erase(it);
          }
          continue;
        }
        const bool had_bytes = !entry.bytes.empty();
        const Head head = ReadAvailable(sock, &entry.bytes, &entry.scanned);
        if (head == Head::kPartial && !had_bytes && !entry.bytes.empty()) {
          // The head's first byte: its deadline starts now.
          deadlines_.erase({entry.deadline, sock});
          entry.head_started = now;
          entry.deadline = now + options_.head_timeout;
          deadlines_.emplace(entry.deadline, sock);
        }
        if (head == Head::kPartial) continue;
        ForgetLocked(sock, entry);
        if (head == Head::kWhole) {
          hand_back.push_back({sock, std::move(entry.bytes), had_bytes ? entry.head_started : now, entry.tag});
        } else {
          to_close.push_back(sock);
        }
        parked_.erase(it);
      }
      // Deadlines: a head that is late goes back (to be answered 408); a
      // connection silent since it was parked is closed.
      while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
        const int sock = deadlines_.begin()->second;
        auto it = parked_.find(sock);
        if (it == parked_.end()) {
          deadlines_.erase(deadlines_.begin());
          continue;
        }
        Entry& entry = it->second;
        if (!entry.answered && !entry.bytes.empty() && !options_.late_answer.empty()) {
          // Late: answered here, then a short linger in the gate.
          (void)!::send(sock, options_.late_answer.data(), options_.late_answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
          ::shutdown(sock, SHUT_WR);
          ++late_answers_;
          deadlines_.erase(deadlines_.begin());
          entry.answered = true;
          entry.bytes.clear();
          entry.deadline = now + options_.linger;
          deadlines_.emplace(entry.deadline, sock);
          continue;
        }
        ForgetLocked(sock, entry);
        if (entry.answered || entry.bytes.empty()) {
          to_close.push_back(sock);
        } else {
          hand_back.push_back({sock, std::move(entry.bytes), entry.head_started, entry.tag});
        }
        parked_.erase(it);
      }
    }
    for (int sock : to_close) Close(sock);
    for (auto& h : hand_back) ready_(h.sock, std::move(h.bytes), h.head_started, h.tag);
  }
}

}  // namespace tau::server
