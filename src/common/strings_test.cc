#include "common/strings.h"

#include <gtest/gtest.h>

#include "common/digest.h"
#include "common/subprocess.h"

namespace tau {
namespace {

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("gpus", "gpus"), 0u);
  EXPECT_EQ(EditDistance("gpu", "gpus"), 1u);
  EXPECT_EQ(EditDistance("memroy", "memory"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

TEST(StringsTest, ClosestMatchFindsTypos) {
  std::string_view keys[] = {"gpus", "workers", "cpus", "memory", "gpu_class"};
  EXPECT_EQ(ClosestMatch("gpu", keys), "gpus");
  EXPECT_EQ(ClosestMatch("memroy", keys), "memory");
  EXPECT_EQ(ClosestMatch("worker", keys), "workers");
  EXPECT_EQ(ClosestMatch("zzzzzz", keys), std::nullopt);
}

TEST(StringsTest, ShellQuote) {
  EXPECT_EQ(ShellQuote("train.py"), "train.py");
  EXPECT_EQ(ShellQuote("--lr=0.1"), "--lr=0.1");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\"'\"'s'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("torch>=2.4.0"), "'torch>=2.4.0'");
}

TEST(StringsTest, SplitAndJoin) {
  auto parts = Split("a.b..c", '.');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[2], "");
  EXPECT_EQ(Join(parts, "/"), "a/b//c");
}

TEST(DigestTest, Sha256) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // FIPS 180-2 vectors: two blocks of padding, and many blocks.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(Sha256Hex(std::string(55, 'x')).size(), 64u);
  EXPECT_EQ(Sha256Hex(std::string(64, 'x')), Sha256Hex(std::string(64, 'x')));
}

TEST(DigestTest, StreamingEqualsOneShotForEveryChunking) {
  std::string data;
  for (int i = 0; i < 300; ++i) data += static_cast<char>('a' + i % 26);
  for (size_t chunk : {1u, 7u, 63u, 64u, 65u, 130u}) {
    Sha256 hasher;
    for (size_t at = 0; at < data.size(); at += chunk) hasher.Update(std::string_view(data).substr(at, chunk));
    EXPECT_EQ(hasher.FinalHex(), Sha256Hex(data)) << "chunk " << chunk;
  }
}

TEST(SubprocessTest, CapturesStdoutAndTheExitCode) {
  auto run = RunCapture({"sh", "-c", "echo out; echo err >&2; exit 4"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->out, "out\n");
  EXPECT_EQ(run->exit_code, 4);
  auto cut = RunCapture({"sh", "-c", "printf 123456"}, "/", 3);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->out, "123");
  EXPECT_TRUE(cut->truncated);
}

TEST(SubprocessTest, AProgramThatCannotStartIsAnError) {
  auto run = RunCapture({"tau-no-such-program"});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("cannot run tau-no-such-program"), std::string::npos);
}

TEST(Utf8PrefixTest, NeverEndsInsideACharacter) {
  const std::string name = "r\u00e9sum\u00e9-\u6a21\u578b-\U0001F680";  // 1-, 2-, 3- and 4-byte characters
  for (size_t n = 0; n <= name.size(); ++n) {
    std::string_view prefix = Utf8Prefix(name, n);
    EXPECT_LE(prefix.size(), n);
    EXPECT_GE(prefix.size() + 3, n) << n;  // at most one character is dropped
    EXPECT_EQ(name.compare(0, prefix.size(), prefix), 0);
    // What follows the cut starts a character.
    if (prefix.size() < name.size()) {
      EXPECT_NE(static_cast<unsigned char>(name[prefix.size()]) & 0xC0, 0x80) << n;
    }
  }
  EXPECT_EQ(Utf8Prefix("\xe6\xa8", 1), "");  // a lead byte without its whole sequence
  EXPECT_EQ(Utf8Prefix("ab\x80\x80\x80\x80" "c", 5), "ab\x80\x80\x80");  // stray bytes count one each
}

TEST(Utf8PrefixTest, ShortenKeepsShortTextAndMarksCuts) {
  EXPECT_EQ(ShortenUtf8("short", 40), "short");
  EXPECT_EQ(ShortenUtf8("\u00e9\u00e9\u00e9\u00e9", 6), "\u00e9...");
}

}  // namespace
}  // namespace tau
