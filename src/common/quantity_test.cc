#include "common/quantity.h"

#include <gtest/gtest.h>

namespace tau {
namespace {

int64_t Milli(std::string_view text) {
  auto q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
  return q.ok() ? q->milli() : -1;
}

std::string Error(std::string_view text) {
  auto q = Quantity::Parse(text);
  EXPECT_FALSE(q.ok()) << text << " parsed as " << (q.ok() ? q->milli() : 0);
  return q.ok() ? "" : q.error().message();
}

TEST(QuantityTest, ParsesKubernetesForms) {
  EXPECT_EQ(Milli("500m"), 500);
  EXPECT_EQ(Milli("2"), 2000);
  EXPECT_EQ(Milli("1.5"), 1500);
  EXPECT_EQ(Milli("0.1"), 100);
  EXPECT_EQ(Milli(".5"), 500);
  EXPECT_EQ(Milli("1."), 1000);
  EXPECT_EQ(Milli("64Gi"), int64_t{64} * 1024 * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli("1G"), int64_t{1000000000} * 1000);
  EXPECT_EQ(Milli("1e3"), 1000 * 1000);
  EXPECT_EQ(Milli("1E3"), 1000 * 1000);
  EXPECT_EQ(Milli("5e-3"), 5);
  EXPECT_EQ(Milli("1k"), 1000 * 1000);
  EXPECT_EQ(Milli("1Ki"), 1024 * 1000);
  EXPECT_EQ(Milli("1.5Gi"), int64_t{1536} * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli("+3"), 3000);
  EXPECT_EQ(Milli("-3"), -3000);
  EXPECT_EQ(Milli("0"), 0);
  EXPECT_EQ(Milli("000"), 0);
  EXPECT_EQ(Milli("1000000u"), 1000);
  EXPECT_EQ(Milli("2000000000n"), 2000);
  EXPECT_EQ(Milli("1Pi"), int64_t{1} << 50 > 0 ? (int64_t{1} << 50) * 1000 : 0);
}

TEST(QuantityTest, RejectsWithTheReason) {
  EXPECT_NE(Error("").find("empty"), std::string::npos);
  EXPECT_NE(Error("abc").find("not a quantity"), std::string::npos);
  EXPECT_NE(Error("64GB").find("unknown suffix \"GB\""), std::string::npos);
  EXPECT_NE(Error("64gi").find("unknown suffix"), std::string::npos);
  EXPECT_NE(Error("1n").find("finer than the smallest unit"), std::string::npos);
  EXPECT_NE(Error("0.0001").find("finer"), std::string::npos);
  EXPECT_NE(Error("10Ei").find("too large"), std::string::npos);
  EXPECT_NE(Error("99999999999999999999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(Error("1 Gi").find("unknown suffix"), std::string::npos);
  EXPECT_NE(Error("1e").find("unknown suffix"), std::string::npos);
  EXPECT_NE(Error("--1").find("not a quantity"), std::string::npos);
  EXPECT_NE(Error(".").find("not a quantity"), std::string::npos);
}

TEST(QuantityTest, FormatsCanonicallyInItsFamily) {
  auto text = [](std::string_view in) { return Quantity::Parse(in)->ToString(); };
  EXPECT_EQ(text("500m"), "500m");
  EXPECT_EQ(text("1.5"), "1500m");
  EXPECT_EQ(text("16"), "16");
  EXPECT_EQ(text("64Gi"), "64Gi");
  EXPECT_EQ(text("1024Mi"), "1Gi");
  EXPECT_EQ(text("1G"), "1G");
  EXPECT_EQ(text("1e3"), "1k");
  EXPECT_EQ(text("0"), "0");
  EXPECT_EQ(text("1500Mi"), "1500Mi");
  EXPECT_EQ(Quantity::FromUnits(3).ToString(), "3");
}

TEST(QuantityTest, CeilUnitsRoundsUp) {
  EXPECT_EQ(Quantity::FromMilli(1).CeilUnits(), 1);
  EXPECT_EQ(Quantity::FromMilli(1000).CeilUnits(), 1);
  EXPECT_EQ(Quantity::FromMilli(1001).CeilUnits(), 2);
  EXPECT_EQ(Quantity::FromMilli(0).CeilUnits(), 0);
}

TEST(QuantityTest, ComparesByValue) {
  EXPECT_EQ(*Quantity::Parse("1Ki"), *Quantity::Parse("1024"));
  EXPECT_LT(*Quantity::Parse("999m"), *Quantity::Parse("1"));
}

}  // namespace
}  // namespace tau
