#include "evidence/tar_stream.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

namespace tau::evidence {
namespace {

namespace fs = std::filesystem;

std::string Decompress(const std::string& compressed) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::string out, buf(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    size_t rc = ZSTD_decompressStream(d, &o, &in);
    EXPECT_FALSE(ZSTD_isError(rc)) << ZSTD_getErrorName(rc);
    if (ZSTD_isError(rc)) break;
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

uint64_t ParseSize(const char* field) {
  if (static_cast<unsigned char>(field[0]) & 0x80) {
    uint64_t v = 0;
    for (int i = 4; i < 12; ++i) v = (v << 8) | static_cast<unsigned char>(field[i]);
    return v;
  }
  uint64_t v = 0;
  for (int i = 0; i < 12 && field[i] >= '0' && field[i] <= '7'; ++i) v = v * 8 + static_cast<uint64_t>(field[i] - '0');
  return v;
}

// name -> content of a plain tar (GNU long names followed).
std::map<std::string, std::string> Entries(const std::string& tar) {
  std::map<std::string, std::string> out;
  std::string long_name;
  for (size_t off = 0; off + 512 <= tar.size();) {
    const char* h = tar.data() + off;
    if (h[0] == '\0') break;
    uint64_t size = ParseSize(h + 124);
    std::string data = tar.substr(off + 512, size);
    off += 512 + (size + 511) / 512 * 512;
    if (h[156] == 'L') {
      long_name = data.substr(0, data.find('\0'));
      continue;
    }
    std::string name = long_name.empty() ? std::string(h, strnlen(h, 100)) : long_name;
    long_name.clear();
    out[name] = data;
  }
  return out;
}

TEST(TarZstStreamTest, WritesBytesAndFilesAsAReadableArchive) {
  fs::path file = fs::temp_directory_path() / ("tau-tarstream-" + std::to_string(::getpid()));
  std::string content;
  for (int i = 0; i < 300000; ++i) content += static_cast<char>('a' + i % 26);
  {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    ::close(fd);
  }
  std::string compressed;
  int pieces = 0;
  auto stream = TarZstStream::Create([&](std::string_view d) {
    compressed.append(d);
    ++pieces;
    return true;
  });
  ASSERT_TRUE(stream.ok());
  const std::string long_name = "j_x/" + std::string(120, 'n') + ".log";
  ASSERT_TRUE((*stream)->AddBytes("j_x/capsule.json", "{}").ok());
  int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_TRUE((*stream)->AddFile(long_name, fd, static_cast<int64_t>(content.size())).ok());
  ::close(fd);
  ASSERT_TRUE((*stream)->Finish().ok());
  fs::remove(file);
  auto entries = Entries(Decompress(compressed));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries["j_x/capsule.json"], "{}");
  EXPECT_EQ(entries[long_name], content);
  EXPECT_GT(pieces, 0);
}

TEST(TarZstStreamTest, AFileThatEndsEarlyAborts) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "abc", 3), 3);
  ::close(fds[1]);
  auto stream = TarZstStream::Create([](std::string_view) { return true; });
  ASSERT_TRUE(stream.ok());
  Status st = (*stream)->AddFile("short", fds[0], 10);
  ::close(fds[0]);
  EXPECT_EQ(st.code(), StatusCode::kAborted);
}

TEST(TarZstStreamTest, AReaderThatGoesAwayStopsTheArchive) {
  auto stream = TarZstStream::Create([](std::string_view) { return false; });
  ASSERT_TRUE(stream.ok());
  Status st = (*stream)->AddBytes("a", std::string(1 << 20, 'x'));
  if (st.ok()) st = (*stream)->Finish();
  EXPECT_EQ(st.code(), StatusCode::kAborted);
}

TEST(TarZstStreamTest, SizesOf8GiBAndMoreUseBase256) {
  const uint64_t size = (uint64_t{10} << 30) + 7;
  std::string h = TarHeader("big", '0', 0644, size, "");
  EXPECT_EQ(static_cast<unsigned char>(h[124]), 0x80);
  EXPECT_EQ(ParseSize(h.data() + 124), size);
  std::string small = TarHeader("small", '0', 0644, 1234, "");
  EXPECT_EQ(std::string(small.data() + 124, 11), "00000002322");
}

}  // namespace
}  // namespace tau::evidence
