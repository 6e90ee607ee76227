#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tau::cli {

// A minimal HTTP/1.1 client connection over plain TCP, enough for the API
// of a local taugridd: keep-alive, Content-Length and chunked bodies,
// streamed responses, timeouts. (It keeps `tau` free of TLS libraries
// whose start-up costs more than the whole request to a local daemon.)
class HttpConnection {
 public:
  struct Response {
    int status = 0;
    std::string body;
    std::string trace_id;  // the X-Trace-Id header, empty when none
  };

  // `url` is "http://HOST:PORT"; https is refused with InvalidArgument.
  static Result<HttpConnection> Open(const std::string& url, int connect_timeout_ms);
  HttpConnection(HttpConnection&& other) noexcept;
  HttpConnection& operator=(HttpConnection&& other) noexcept;
  ~HttpConnection();

  // Sends a request and reads the whole response. `read_timeout_ms` bounds
  // each wait for data.
  Result<Response> Request(std::string_view method, std::string_view path,
                           const std::map<std::string, std::string>& headers,
                           std::string_view body, int read_timeout_ms);

  // True when the server has closed this idle connection (or sent
  // something unasked): a request sent on it now would be lost.
  bool PeerClosed() const;

  // Like Request, but hands the body to `on_data` as it arrives when the
  // status is below 400 (an error body is collected in the Response).
  // `on_data` returning false closes the connection and ends the call.
  Result<Response> Stream(std::string_view path, const std::map<std::string, std::string>& headers,
                          const std::function<bool(std::string_view)>& on_data, int read_timeout_ms);

 private:
  HttpConnection(int fd, std::string host) : fd_(fd), host_(std::move(host)) {}
  Status Send(std::string_view method, std::string_view path,
              const std::map<std::string, std::string>& headers, std::string_view body);
  Result<Response> Receive(const std::function<bool(std::string_view)>* on_data, int read_timeout_ms);
  // Reads more bytes into buffer_; false on EOF, error or timeout.
  Status Fill(int read_timeout_ms);

  int fd_ = -1;
  std::string host_;
  std::string buffer_;
};

}  // namespace tau::cli
