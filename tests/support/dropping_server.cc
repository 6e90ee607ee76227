#include "support/dropping_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <utility>

namespace tau::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

}  // namespace

LoopbackListener::LoopbackListener(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(0);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  ::listen(listen_fd_, 8);
  thread_ = std::thread([this] { Run(); });
}

LoopbackListener::~LoopbackListener() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void LoopbackListener::Run() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    serve_(fd);
    ::close(fd);
    ++closed_;
  }
}

DroppingServer::DroppingServer(std::function<bool(int)> answer)
    : answer_(std::move(answer)), listener_([this](int fd) { Serve(fd); }) {}

void DroppingServer::Serve(int fd) {
  std::string buffer;
  while (!listener_.stopping()) {
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) {
        if (listener_.stopping()) return;
        continue;
      }
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      buffer.append(buf, static_cast<size_t>(n));
    }
    size_t length = 0;
    if (size_t at = buffer.find("Content-Length: "); at != std::string::npos && at < end) {
      length = std::stoul(buffer.substr(at + 16));
    }
    while (buffer.size() < end + 4 + length) {
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      buffer.append(buf, static_cast<size_t>(n));
    }
    buffer.erase(0, end + 4 + length);
    const int n = ++requests_;
    if (!answer_(n)) return;  // dropped: the request arrived, no reply
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    if (close_after_answer_.exchange(false)) return;
  }
}

DroppingProxy::DroppingProxy(int port) : target_port_(port), listener_([this](int fd) { Relay(fd); }) {}

void DroppingProxy::Relay(int client) {
  int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(target_port_);
  if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(server);
    return;
  }
  bool awaiting_submit_answer = false;
  std::string sent;
  while (!listener_.stopping()) {
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (::poll(p, 2, 50) <= 0) continue;
    char buf[65536];
    if (p[0].revents) {
      ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0) break;
      sent.append(buf, static_cast<size_t>(n));
      for (size_t at; (at = sent.find("POST /api/v1/jobs HTTP/1.1")) != std::string::npos;) {
        sent.erase(0, at + 10);
        ++submits_;
        awaiting_submit_answer = true;
      }
      if (::send(server, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
    if (p[1].revents) {
      ssize_t n = ::recv(server, buf, sizeof buf, 0);
      if (n <= 0) break;
      if (awaiting_submit_answer) {
        awaiting_submit_answer = false;
        // The first submit that made a job: the job exists now; its
        // answer is lost. (Others, a 412 for a snapshot not uploaded yet
        // among them, go through.)
        int none = 0;
        if (std::string_view(buf, static_cast<size_t>(n)).starts_with("HTTP/1.1 201") &&
            dropped_at_.compare_exchange_strong(none, submits_.load())) {
          break;
        }
      }
      if (::send(client, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
  }
  ::close(server);
}

}  // namespace tau::testing
