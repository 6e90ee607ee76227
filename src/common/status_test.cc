#include <gtest/gtest.h>

#include <cerrno>

#include "common/result.h"

namespace tau {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  TAU_ASSIGN_OR_RETURN(int h, Half(x));
  TAU_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  TAU_RETURN_IF_ERROR(Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = NotFoundError("job j_1 not found");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: job j_1 not found");
  EXPECT_EQ(s.WithContext("tau status").message(), "tau status: job j_1 not found");
  EXPECT_EQ(StatusCodeName(StatusCode::kFailedPrecondition), "FailedPrecondition");
}

TEST(StatusTest, ErrnoMapsToCodes) {
  EXPECT_EQ(ErrnoError(ENOENT, "open x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError(ENOSPC, "write x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoError(EACCES, "open x").code(), StatusCode::kPermissionDenied);
  EXPECT_NE(ErrnoError(ENOENT, "open x").message().find("open x: "), std::string::npos);
}

TEST(ResultTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).error().message(), "odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Result<int>(3).status().ok());
}

}  // namespace
}  // namespace tau
