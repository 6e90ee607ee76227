#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "cli/api_client.h"
#include "common/result.h"

namespace tau::cli {

// Splits a log stream sent with positions=true into its pieces: each frame
// is a header line "<bytes> <position>\n" and then <bytes> bytes of log,
// handed to `on_text` once the whole frame has arrived.
class LogFrameReader {
 public:
  explicit LogFrameReader(std::function<void(std::string_view)> on_text) : on_text_(std::move(on_text)) {}
  // False when the stream is not made of frames.
  bool Feed(std::string_view data);
  // Where the stream stood after the last whole frame ("" before one).
  const std::string& position() const { return position_; }

 private:
  std::function<void(std::string_view)> on_text_;
  std::string header_;
  std::string pending_position_;
  std::string body_;
  size_t remaining_ = 0;
  bool in_body_ = false;
  std::string position_;
};

// Follows a job's log (`path`: a logs URL with follow=true) onto `on_text`.
// When the connection to taugridd is lost (it was killed or restarted),
// says so on stderr, waits for a taugridd to answer again (at most
// TAU_RECONNECT_TIMEOUT, default 10m) and resumes where the stream stood:
// no byte is lost or shown twice. `client` is pointed at the server that
// answered last.
Status FollowLog(ApiClient* client, const std::string& path, const std::function<void(std::string_view)>& on_text);

// Follows an event stream (`path`: an events URL with follow=true and no
// `after`) onto `on_line`, one whole JSON line per event. Across a lost
// connection it reconnects as FollowLog does and goes on after the last
// event it handed over (by its "id"): no event is lost or shown twice.
Status FollowEvents(ApiClient* client, const std::string& path, const std::function<void(const std::string&)>& on_line);

}  // namespace tau::cli
