#include "evidence/tar_stream.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tau::evidence {
namespace {

constexpr size_t kBlock = 512;
constexpr size_t kReadChunk = size_t{1} << 20;

void PutOctal(char* field, size_t width, uint64_t value) {
  std::string digits = fmt::format("{:0{}o}", value, width - 1);
  std::memcpy(field, digits.data(), std::min(digits.size(), width - 1));
}

ZSTD_CCtx* Ctx(void* p) { return static_cast<ZSTD_CCtx*>(p); }

}  // namespace

std::string TarHeader(const std::string& name, char type, uint64_t mode, uint64_t size, const std::string& link) {
  std::string h(kBlock, '\0');
  std::memcpy(&h[0], name.data(), std::min<size_t>(name.size(), 100));
  PutOctal(&h[100], 8, mode);
  PutOctal(&h[108], 8, 0);
  PutOctal(&h[116], 8, 0);
  if (size < (uint64_t{1} << 33)) {
    PutOctal(&h[124], 12, size);
  } else {
    h[124] = static_cast<char>(0x80);
    for (int i = 11; i >= 4; --i) {
      h[124 + static_cast<size_t>(i)] = static_cast<char>(size & 0xff);
      size >>= 8;
    }
  }
  PutOctal(&h[136], 12, 0);
  std::memset(&h[148], ' ', 8);
  h[156] = type;
  std::memcpy(&h[157], link.data(), std::min<size_t>(link.size(), 100));
  std::memcpy(&h[257], "ustar\0" "00", 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::string chk = fmt::format("{:06o}", sum);
  std::memcpy(&h[148], chk.data(), 6);
  h[154] = '\0';
  h[155] = ' ';
  return h;
}

Result<std::unique_ptr<TarZstStream>> TarZstStream::Create(Sink sink, int level) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  if (!cctx) return ResourceExhaustedError("zstd: cannot allocate a compression context");
  size_t rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  if (ZSTD_isError(rc)) {
    ZSTD_freeCCtx(cctx);
    return InternalError(fmt::format("zstd: {}", ZSTD_getErrorName(rc)));
  }
  std::unique_ptr<TarZstStream> stream(new TarZstStream(std::move(sink), cctx));
  stream->out_.resize(ZSTD_CStreamOutSize());
  return stream;
}

TarZstStream::~TarZstStream() { ZSTD_freeCCtx(Ctx(cctx_)); }

Status TarZstStream::Write(std::string_view raw, bool end) {
  if (stopped_) return AbortedError("the archive's reader went away");
  ZSTD_inBuffer in{raw.data(), raw.size(), 0};
  while (true) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    size_t left = ZSTD_compressStream2(Ctx(cctx_), &out, &in, end ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(left)) return InternalError(fmt::format("zstd: {}", ZSTD_getErrorName(left)));
    if (out.pos > 0 && !sink_(std::string_view(out_.data(), out.pos))) {
      stopped_ = true;
      return AbortedError("the archive's reader went away");
    }
    const bool done = end ? left == 0 : in.pos == in.size;
    if (done) return Status::Ok();
  }
}

Status TarZstStream::Header(const std::string& name, uint64_t size, uint32_t mode) {
  if (name.size() > 100) {
    TAU_RETURN_IF_ERROR(Write(TarHeader("././@LongLink", 'L', 0, name.size() + 1, "")));
    std::string long_name = name;
    long_name.push_back('\0');
    TAU_RETURN_IF_ERROR(Write(long_name));
    TAU_RETURN_IF_ERROR(Pad(long_name.size()));
  }
  return Write(TarHeader(name, '0', mode, size, ""));
}

Status TarZstStream::Pad(uint64_t size) {
  static const std::string kZeros(kBlock, '\0');
  return Write(std::string_view(kZeros).substr(0, (kBlock - size % kBlock) % kBlock));
}

Status TarZstStream::AddBytes(const std::string& name, std::string_view data, uint32_t mode) {
  TAU_RETURN_IF_ERROR(Header(name, data.size(), mode));
  TAU_RETURN_IF_ERROR(Write(data));
  return Pad(data.size());
}

Status TarZstStream::AddFile(const std::string& name, int fd, int64_t size, uint32_t mode) {
  if (size < 0) return InvalidArgumentError(fmt::format("{}: a negative size", name));
  TAU_RETURN_IF_ERROR(Header(name, static_cast<uint64_t>(size), mode));
  std::string buf(static_cast<size_t>(std::min<int64_t>(size, kReadChunk)), '\0');
  int64_t left = size;
  while (left > 0) {
    ssize_t n = ::read(fd, buf.data(), static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size()))));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, fmt::format("reading {}", name));
    if (n == 0) return AbortedError(fmt::format("{} shrank while it was archived", name));
    TAU_RETURN_IF_ERROR(Write(std::string_view(buf.data(), static_cast<size_t>(n))));
    left -= n;
  }
  return Pad(static_cast<uint64_t>(size));
}

Status TarZstStream::Finish() {
  static const std::string kEnd(2 * kBlock, '\0');
  TAU_RETURN_IF_ERROR(Write(kEnd));
  return Write("", /*end=*/true);
}

}  // namespace tau::evidence
