#include "common/names.h"

#include <gtest/gtest.h>

#include "common/tau_home.h"

namespace tau {
namespace {

TEST(NamesTest, Dns1123Label) {
  EXPECT_TRUE(CheckDns1123Label("aks-gpu-quickstart").ok());
  EXPECT_TRUE(CheckDns1123Label("a").ok());
  EXPECT_TRUE(CheckDns1123Label("1abc").ok());
  EXPECT_TRUE(CheckDns1123Label(std::string(63, 'a')).ok());
  EXPECT_NE(CheckDns1123Label(std::string(64, 'a')).message().find("at most 63"), std::string::npos);
  EXPECT_NE(CheckDns1123Label("").message().find("empty"), std::string::npos);
  EXPECT_NE(CheckDns1123Label("My-Job").message().find("uppercase"), std::string::npos);
  EXPECT_NE(CheckDns1123Label("my_job").message().find("'_' at position 3"), std::string::npos);
  // A character beyond ASCII is shown whole, at its position in characters.
  EXPECT_EQ(CheckDns1123Label("caf\xC3\xA9-job").message(),
            "\"caf\xC3\xA9-job\" contains '\xC3\xA9' (U+00E9) at position 4; use lowercase letters, digits and '-'");
  EXPECT_NE(CheckDns1123Label("ab\xFF").message().find("\"ab\\xFF\" contains byte 0xFF (not UTF-8) at position 3"),
            std::string::npos);
  EXPECT_EQ(CheckDns1123Label("a\xE2\x80\xAE" "b").message(),
            "\"a\\u202Eb\" contains U+202E at position 2; use lowercase letters, digits and '-'")
      << "a right-to-left override would reorder the message on a terminal";
  EXPECT_NE(CheckDns1123Label("a\nb").message().find("\"a\\x0Ab\" contains U+000A at position 2"), std::string::npos);
  EXPECT_NE(CheckDns1123Label(std::string(70, 'a') + "_").message().find("'_' at position 71"), std::string::npos)
      << "the wrong character is named before the length";
  EXPECT_NE(CheckDns1123Label("-job").message().find("start and end"), std::string::npos);
  EXPECT_NE(CheckDns1123Label("job-").message().find("start and end"), std::string::npos);
  EXPECT_FALSE(CheckDns1123Label("a.b").ok());
}

TEST(NamesTest, Dns1123Subdomain) {
  EXPECT_TRUE(CheckDns1123Subdomain("high-priority").ok());
  EXPECT_TRUE(CheckDns1123Subdomain("a.b.c").ok());
  EXPECT_FALSE(CheckDns1123Subdomain("a..b").ok());
  EXPECT_FALSE(CheckDns1123Subdomain("A.b").ok());
  EXPECT_FALSE(CheckDns1123Subdomain(std::string(254, 'a')).ok());
}

TEST(NamesTest, EnvVarName) {
  EXPECT_TRUE(CheckEnvVarName("HF_HOME").ok());
  EXPECT_TRUE(CheckEnvVarName("_x1").ok());
  EXPECT_FALSE(CheckEnvVarName("1X").ok());
  EXPECT_FALSE(CheckEnvVarName("A-B").ok());
  EXPECT_FALSE(CheckEnvVarName("").ok());
}

TEST(NamesTest, LabelValue) {
  EXPECT_TRUE(CheckLabelValue("").ok());
  EXPECT_TRUE(CheckLabelValue("v1.2_beta-3").ok());
  EXPECT_FALSE(CheckLabelValue("-x").ok());
  EXPECT_FALSE(CheckLabelValue("a b").ok());
  EXPECT_FALSE(CheckLabelValue(std::string(64, 'a')).ok());
}

TEST(NamesTest, RequestId) {
  EXPECT_TRUE(CheckRequestId("r_abc2").ok());
  EXPECT_TRUE(CheckRequestId("550e8400-e29b-41d4-a716-446655440000").ok());
  EXPECT_TRUE(CheckRequestId(NewRequestId()).ok());
  EXPECT_NE(NewRequestId(), NewRequestId());
  EXPECT_FALSE(CheckRequestId("").ok());
  EXPECT_FALSE(CheckRequestId(std::string(129, 'a')).ok());
  Status st = CheckRequestId("a/b");
  EXPECT_NE(st.message().find("may hold only"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tau
