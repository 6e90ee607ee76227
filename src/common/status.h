#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace tau {

// The one error-code set of the project (abseil's canonical codes, minus the
// ones we never need). Each maps to one HTTP status in the API layer.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kUnauthenticated,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kDeadlineExceeded,
  kUnavailable,
  kInternal,
};

// "InvalidArgument", "NotFound", ... (the names the API's error JSON uses).
std::string_view StatusCodeName(StatusCode code);

// Status is either OK or a code with a human-readable message. Cheap to
// move; an OK status carries no message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

  // "NotFound: job j_abc not found", or "OK".
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status UnauthenticatedError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status DeadlineExceededError(std::string message);
Status UnavailableError(std::string message);
Status InternalError(std::string message);

// "<what>: <strerror(errnum)>" with a code chosen from errnum (ENOENT ->
// NotFound, ENOSPC -> ResourceExhausted, EACCES -> PermissionDenied, ...).
Status ErrnoError(int errnum, std::string_view what);

}  // namespace tau
