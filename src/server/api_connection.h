#pragma once

// One API connection as httplib sees it (included only by api_*.cc files:
// it includes cpp-httplib).
//
// httplib 0.11 gives each read of a request its own timeout, so a client
// that sends its request head a byte at a time, each byte just within the
// read timeout, holds a thread for as long as it likes. This stream bounds
// the whole head instead: from the request's first byte to the end of its
// headers at most `head_timeout`, and between requests on a kept-alive
// connection at most `idle_timeout` of silence.

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace tau::server {

struct ConnectionTimeouts {
  // From a request's first byte to the end of its headers.
  std::chrono::milliseconds head_timeout{10000};
  // From the end of a request's headers to the end of its body: a client
  // that trickles a body (a byte now and then, each within read_timeout)
  // would otherwise hold its thread until the whole declared length came.
  std::chrono::milliseconds body_timeout{60000};
  // Each read of a request body, and each write of an answer.
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  // Silence before a request on a kept-alive connection (and before the
  // first one on a new connection).
  std::chrono::milliseconds idle_timeout{5000};
};

class ApiConnection : public httplib::Stream {
 public:
  ApiConnection(int sock, ConnectionTimeouts timeouts);

  // Waits up to idle_timeout (in slices, returning early once `stopping`
  // says so) for the next request's first byte; true when one is there.
  // Starts that request's head deadline.
  template <typename Stopping>
  bool NextRequest(const Stopping& stopping) {
    const auto until = std::chrono::steady_clock::now() + timeouts_.idle_timeout;
    while (!HasBufferedData()) {
      if (stopping()) return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      int ready = WaitReadable(std::min<std::chrono::milliseconds>(left, std::chrono::milliseconds(100)));
      if (ready < 0) return false;
      if (ready > 0) break;
    }
    BeginRequest();
    return true;
  }
  // Starts a request whose first bytes were read elsewhere (the head
  // gate), its head deadline counted from `head_started`.
  void Prime(std::string bytes, std::chrono::steady_clock::time_point head_started);
  // Whether bytes of the next request are already read.
  bool HasBufferedData() const { return buffer_start_ < buffer_end_; }
  // Whether the last request's head missed its deadline (httplib then
  // answers 400 or closes; the API makes that a 408).
  bool head_timed_out() const { return head_timed_out_; }
  // Whether the last request's body missed its deadline (httplib then
  // answers 400; the API makes that a 408 and ends the connection).
  bool body_timed_out() const { return body_timed_out_; }
  // The last request's head as received (request line, headers, the
  // empty line), its first `kept` bytes: httplib reads a head a byte at a
  // time, so these are exactly the head's bytes (see api_request_head.h).
  const std::string& head() const { return head_; }
  // Whether a read of the last request waited its whole time for bytes
  // that did not come (the read timeout, or what was left of a deadline).
  bool waited_out() const { return waited_out_; }
  // Whether the head was longer than the bytes kept of it (reads stop
  // there: the request is answered 431).
  bool head_too_long() const { return head_too_long_; }
  // How many bytes of a head are kept.
  static constexpr size_t kKeptHead = 64 * 1024;

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  // httplib asks for the peer's address once it has read the request's
  // headers: that ends the head deadline and starts the body's.
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

 private:
  void BeginRequest();
  // Keeps bytes handed to httplib while it reads a head.
  void KeepHead(const char* bytes, size_t n);
  // poll() for input: 1 ready, 0 timed out, -1 error.
  int WaitReadable(std::chrono::milliseconds timeout) const;
  // How long the next read may wait: the read timeout, or what is left of
  // the head deadline while the head is being read (of the body deadline
  // after it).
  std::chrono::milliseconds ReadBudget() const;

  int sock_;
  ConnectionTimeouts timeouts_;
  std::vector<char> buffer_;
  size_t buffer_start_ = 0;
  size_t buffer_end_ = 0;
  mutable bool in_head_ = false;
  mutable bool head_timed_out_ = false;
  mutable bool body_timed_out_ = false;
  std::string head_;
  bool head_too_long_ = false;
  mutable bool waited_out_ = false;
  std::chrono::steady_clock::time_point head_deadline_;
  mutable std::chrono::steady_clock::time_point body_deadline_;
};

}  // namespace tau::server
