#pragma once

// Where the API's connections wait for their next request head without a
// thread (the accept-filter / nginx pattern).
//
// A thread per connection is what lets a followed log never hold up other
// requests, but a connection that has not yet sent a whole request head
// (a new one, a kept-alive one between requests, or a client that sends
// half a head and stops: slowloris) would hold its thread for the idle or
// head timeout. The gate holds such sockets in one epoll set instead,
// reading what arrives, and hands a socket back through `ready`, with the
// bytes it read, once they hold a whole head (an empty line ends it), once
// they are `max_head` long with no end or the peer closed its side after
// them (the HTTP layer answers those), or once its head deadline passed
// (the HTTP layer then answers 408). A socket whose peer closed or failed
// before sending a byte, or that stayed silent for
// `idle_timeout` since it was parked with no byte of a head, is closed.
// Thread-safe; no HTTP parsing beyond finding the empty line.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tau::server {

struct HeadGateOptions {
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds idle_timeout{5000};
  // Sockets parked at most; past that Park refuses (the caller waits on
  // its own thread as before).
  size_t max_parked = 65536;
  // A head this long with no end in sight is handed on as it is.
  size_t max_head = 64 * 1024;
  // Closes a socket the gate is done with (empty: close(2) after
  // shutdown(2)).
  std::function<void(int sock)> closed;
  // The whole HTTP answer to a head past its deadline (a 408). The gate
  // sends it itself, then reads and drops what the client still sends for
  // `linger` before it closes (closing with unread bytes would reset the
  // connection and could lose the answer), so heads that run late
  // together take no thread each. Empty: such sockets are handed back.
  std::string late_answer;
  std::chrono::milliseconds linger{250};
};

class HeadGate {
 public:
  using Clock = std::chrono::steady_clock;
  // Called on the gate's thread with a socket it hands back, the bytes it
  // read from it (a head, or the start of one past its deadline) and when
  // their first byte came. Must not block: it queues the socket for a
  // thread.
  // `tag` is the caller's, from Park.
  using Ready = std::function<void(int sock, std::string bytes, Clock::time_point head_started, uint64_t tag)>;

  HeadGate(HeadGateOptions options, Ready ready);
  // Shuts down (see Shutdown).
  ~HeadGate();
  HeadGate(const HeadGate&) = delete;
  HeadGate& operator=(const HeadGate&) = delete;

  // Reads, without waiting, what `sock` has sent after `bytes` (up to
  // max_head in all) and says whether the bytes now hold a whole head (or
  // all the peer will send: it closed its side after them), or whether the
  // peer closed or failed before sending any.
  // `scanned`: how much of `bytes` is known to hold no end of a head.
  enum class Head { kWhole, kPartial, kClosed };
  Head ReadAvailable(int sock, std::string* bytes, size_t* scanned) const;

  // Takes `sock`, with the bytes of its next request read so far, until
  // its head is whole (see above). `head_started` is when their first byte
  // came (ignored when there are none). False (and the socket stays the
  // caller's) when the gate is full or shut down. `tag` comes back with
  // the socket.
  bool Park(int sock, std::string bytes = {}, Clock::time_point head_started = {}, uint64_t tag = 0);

  // Closes every parked socket and stops the gate's thread; Park refuses
  // from then on. Ready is not called once this returns.
  void Shutdown();

  // Sockets parked now.
  size_t parked() const;
  // Heads the gate answered late_answer to, since it started.
  uint64_t late_answers() const;

 private:
  struct Entry {
    Clock::time_point deadline;
    Clock::time_point head_started;
    std::string bytes;
    size_t scanned = 0;
    uint64_t tag = 0;
    bool answered = false;  // late_answer sent; lingering until closed
  };
  struct HandBack {
    int sock;
    std::string bytes;
    Clock::time_point head_started;
    uint64_t tag;
  };
  void Run();
  // With mutex_ held: removes `sock` from the set and the timers.
  void ForgetLocked(int sock, const Entry& entry);
  void Close(int sock) const;

  const HeadGateOptions options_;
  const Ready ready_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  mutable std::mutex mutex_;
  bool stopped_ = false;
  uint64_t late_answers_ = 0;
  std::map<int, Entry> parked_;
  std::set<std::pair<Clock::time_point, int>> deadlines_;
  std::thread thread_;
};

}  // namespace tau::server
