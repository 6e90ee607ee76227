#pragma once

// Test servers on 127.0.0.1 that drop connections on cue, to check what a
// client sends again after a lost connection: DroppingServer answers by
// itself, DroppingProxy relays to a real server and drops one answer.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace tau::testing {

// Listens on a free loopback port and hands each accepted connection, one
// at a time, to `serve` on its own thread; the connection is closed when
// `serve` returns. `serve` must return soon after stopping() turns true.
class LoopbackListener {
 public:
  explicit LoopbackListener(std::function<void(int fd)> serve);
  ~LoopbackListener();
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool stopping() const { return stop_; }
  // How many connections were served and closed.
  int closed() const { return closed_; }

 private:
  void Run();

  std::function<void(int)> serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> closed_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Serves one request at a time; `answer(n)` decides, for the n-th request
// (from 1), whether it is answered ("{}" and the connection kept) or the
// connection is closed without a reply.
class DroppingServer {
 public:
  explicit DroppingServer(std::function<bool(int)> answer);
  std::string url() const { return listener_.url(); }
  int requests() const { return requests_; }
  int closed() const { return listener_.closed(); }
  // Closes the current connection after its next answer, like a server's
  // keep-alive timeout.
  void CloseAfterAnswer() { close_after_answer_ = true; }

 private:
  void Serve(int fd);

  std::function<bool(int)> answer_;
  std::atomic<int> requests_{0};
  std::atomic<bool> close_after_answer_{false};
  LoopbackListener listener_;  // last: its thread stops before the rest goes
};

// Relays one connection at a time to 127.0.0.1:`port`; the answer to the
// first POST /api/v1/jobs that created a job (201) is dropped, with both
// connections closed.
class DroppingProxy {
 public:
  explicit DroppingProxy(int port);
  std::string url() const { return listener_.url(); }
  int submits() const { return submits_; }
  // Which submit (1, 2, ...) had its answer dropped; 0 while none has.
  int dropped_at() const { return dropped_at_; }

 private:
  void Relay(int client);

  int target_port_;
  std::atomic<int> submits_{0};
  std::atomic<int> dropped_at_{0};
  LoopbackListener listener_;  // last: its thread stops before the rest goes
};

}  // namespace tau::testing
