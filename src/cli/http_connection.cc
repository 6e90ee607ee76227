#include "cli/http_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tau::cli {

Result<HttpConnection> HttpConnection::Open(const std::string& url, int connect_timeout_ms) {
  if (url.starts_with("https://")) {
    return InvalidArgumentError(fmt::format("{}: https is not supported by this tau yet", url));
  }
  if (!url.starts_with("http://")) return InvalidArgumentError(fmt::format("\"{}\" is not an http:// URL", url));
  std::string hostport = url.substr(7);
  if (size_t slash = hostport.find('/'); slash != std::string::npos) hostport.resize(slash);
  std::string host = hostport, port = "80";
  if (size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &addrs); rc != 0) {
    return UnavailableError(fmt::format("cannot resolve {}: {}", host, gai_strerror(rc)));
  }
  Status last = UnavailableError(fmt::format("cannot connect to {}", hostport));
  for (addrinfo* a = addrs; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, connect_timeout_ms) == 1 ? 0 : -1;
      int err = 0;
      socklen_t len = sizeof err;
      if (rc == 0 && (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)) {
        errno = err;
        rc = -1;
      } else if (rc != 0) {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(addrs);
      return HttpConnection(fd, hostport);
    }
    last = UnavailableError(fmt::format("cannot connect to {}: {}", hostport, std::strerror(errno)));
    ::close(fd);
  }
  ::freeaddrinfo(addrs);
  return last;
}

HttpConnection::HttpConnection(HttpConnection&& o) noexcept
    : fd_(o.fd_), host_(std::move(o.host_)), buffer_(std::move(o.buffer_)) {
  o.fd_ = -1;
}

HttpConnection& HttpConnection::operator=(HttpConnection&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    host_ = std::move(o.host_);
    buffer_ = std::move(o.buffer_);
    o.fd_ = -1;
  }
  return *this;
}

HttpConnection::~HttpConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool HttpConnection::PeerClosed() const {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, 0);
  } while (rc < 0 && errno == EINTR);
  return rc != 0;
}

Status HttpConnection::Send(std::string_view method, std::string_view path,
                            const std::map<std::string, std::string>& headers, std::string_view body) {
  if (fd_ < 0) return UnavailableError("the connection is closed");
  std::string head = fmt::format("{} {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", method, path, host_,
                                 body.size());
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  for (std::string_view part : {std::string_view(head), body}) {
    size_t done = 0;
    while (done < part.size()) {
      ssize_t n = ::send(fd_, part.data() + done, part.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return UnavailableError(fmt::format("lost the connection to {}: {}", host_, std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
  }
  return Status::Ok();
}

Status HttpConnection::Fill(int read_timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, read_timeout_ms);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return DeadlineExceededError(fmt::format("{} did not answer in time", host_));
  char buf[65536];
  ssize_t n;
  do {
    n = ::recv(fd_, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return UnavailableError(fmt::format("the connection to {} closed", host_));
  buffer_.append(buf, static_cast<size_t>(n));
  return Status::Ok();
}

Result<HttpConnection::Response> HttpConnection::Receive(const std::function<bool(std::string_view)>* on_data,
                                                         int read_timeout_ms) {
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (buffer_.size() > (1 << 20)) return InternalError("response headers are too large");
    TAU_RETURN_IF_ERROR(Fill(read_timeout_ms));
  }
  std::string head = buffer_.substr(0, end);
  buffer_.erase(0, end + 4);
  Response res;
  if (head.size() < 12 || !head.starts_with("HTTP/1.")) return InternalError("not an HTTP response");
  res.status = std::atoi(head.c_str() + 9);
  int64_t length = -1;
  bool chunked = false, close_after = false;
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos) {
    size_t next = head.find("\r\n", pos + 2);
    std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    pos = next;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    std::string lower = value;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (key == "content-length") length = std::atoll(value.c_str());
    if (key == "transfer-encoding" && lower.find("chunked") != std::string::npos) chunked = true;
    if (key == "connection" && lower.find("close") != std::string::npos) close_after = true;
    if (key == "x-trace-id") res.trace_id = value.substr(0, value.find_last_not_of(' ') + 1);
  }
  const bool stream = on_data && res.status < 400;
  auto deliver = [&](std::string_view data) -> bool {
    if (stream) return (*on_data)(data);
    res.body.append(data);
    return true;
  };
  bool stopped = false;
  if (chunked) {
    while (!stopped) {
      size_t eol;
      while ((eol = buffer_.find("\r\n")) == std::string::npos) TAU_RETURN_IF_ERROR(Fill(read_timeout_ms));
      size_t size = std::strtoull(buffer_.c_str(), nullptr, 16);
      buffer_.erase(0, eol + 2);
      const bool last = size == 0;
      // Hand each piece over as it arrives so a slow stream shows at once.
      while (size > 0 && !stopped) {
        if (buffer_.empty()) TAU_RETURN_IF_ERROR(Fill(read_timeout_ms));
        size_t part = std::min(buffer_.size(), size);
        stopped = !deliver(std::string_view(buffer_).substr(0, part));
        buffer_.erase(0, part);
        size -= part;
      }
      if (stopped) break;
      while (buffer_.size() < 2) TAU_RETURN_IF_ERROR(Fill(read_timeout_ms));
      buffer_.erase(0, 2);  // the CRLF after the chunk (or after the last, empty one)
      if (last) break;
    }
  } else if (length >= 0) {
    // Handed over as it arrives: a body of any size takes one read's worth
    // of memory when streamed.
    int64_t left = length;
    while (left > 0 && !stopped) {
      if (buffer_.empty()) TAU_RETURN_IF_ERROR(Fill(read_timeout_ms));
      size_t part = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buffer_.size())));
      stopped = !deliver(std::string_view(buffer_).substr(0, part));
      buffer_.erase(0, part);
      left -= static_cast<int64_t>(part);
    }
  } else {
    close_after = true;
    while (Fill(read_timeout_ms).ok()) {}
    stopped = !deliver(buffer_);
    buffer_.clear();
  }
  if (close_after || stopped) {
    ::close(fd_);
    fd_ = -1;
  }
  return res;
}

Result<HttpConnection::Response> HttpConnection::Request(std::string_view method, std::string_view path,
                                                         const std::map<std::string, std::string>& headers,
                                                         std::string_view body, int read_timeout_ms) {
  TAU_RETURN_IF_ERROR(Send(method, path, headers, body));
  return Receive(nullptr, read_timeout_ms);
}

Result<HttpConnection::Response> HttpConnection::Stream(std::string_view path,
                                                        const std::map<std::string, std::string>& headers,
                                                        const std::function<bool(std::string_view)>& on_data,
                                                        int read_timeout_ms) {
  TAU_RETURN_IF_ERROR(Send("GET", path, headers, ""));
  return Receive(&on_data, read_timeout_ms);
}

}  // namespace tau::cli
