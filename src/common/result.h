#pragma once

#include <tl/expected.hpp>
#include <utility>

#include "common/status.h"

namespace tau {

// Result<T> holds either a T or a non-OK Status. It is a tl::expected (the
// same API as C++23 std::expected) that can also be built from a Status, so
// `return NotFoundError("...")` works in a function returning Result<T>.
template <typename T>
class [[nodiscard]] Result : public tl::expected<T, Status> {
 public:
  using Base = tl::expected<T, Status>;
  using Base::Base;

  // REQUIRES: !status.ok().
  Result(Status status) : Base(tl::unexpect, std::move(status)) {}  // NOLINT

  bool ok() const { return this->has_value(); }

  // OK when a value is held, the error otherwise.
  Status status() const { return ok() ? Status::Ok() : this->error(); }
};

namespace internal {
inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
Status AsStatus(const Result<T>& r) { return r.status(); }
}  // namespace internal

}  // namespace tau

#define TAU_CONCAT_INNER_(a, b) a##b
#define TAU_CONCAT_(a, b) TAU_CONCAT_INNER_(a, b)

// Returns the Status of `expr` (a Status or a Result) from the enclosing
// function when it is not OK.
#define TAU_RETURN_IF_ERROR(expr)                                         \
  do {                                                                    \
    ::tau::Status tau_status_ = ::tau::internal::AsStatus((expr));        \
    if (!tau_status_.ok()) return tau_status_;                            \
  } while (0)

// `TAU_ASSIGN_OR_RETURN(auto x, F());` declares/assigns the value of a
// Result, or returns its error from the enclosing function.
#define TAU_ASSIGN_OR_RETURN(lhs, expr) \
  TAU_ASSIGN_OR_RETURN_IMPL_(TAU_CONCAT_(tau_result_, __LINE__), lhs, expr)
#define TAU_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.has_value()) return std::move(tmp).error(); \
  lhs = std::move(*tmp)
