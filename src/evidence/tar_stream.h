#pragma once

// A tar archive compressed with zstd, written as it is produced: each
// entry's bytes are read, compressed and handed to a sink piece by piece,
// so an archive of files of any size takes a few MiB of memory.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tau::evidence {

// One 512-byte ustar header. A size of 8 GiB or more, which does not fit
// the octal field, is written in GNU base-256 form (as GNU tar does).
std::string TarHeader(const std::string& name, char type, uint64_t mode, uint64_t size, const std::string& link);

class TarZstStream {
 public:
  // Receives compressed bytes; false stops the archive (the next call
  // fails with Aborted).
  using Sink = std::function<bool(std::string_view)>;

  static Result<std::unique_ptr<TarZstStream>> Create(Sink sink, int level = 3);
  ~TarZstStream();
  TarZstStream(const TarZstStream&) = delete;
  TarZstStream& operator=(const TarZstStream&) = delete;

  // A regular file holding `data`.
  Status AddBytes(const std::string& name, std::string_view data, uint32_t mode = 0644);
  // A regular file of `size` bytes read from `fd` from its current offset
  // in chunks of at most 1 MiB. A file that ends before `size` bytes fails
  // with Aborted (the archive is then unusable).
  Status AddFile(const std::string& name, int fd, int64_t size, uint32_t mode = 0644);
  // Ends the archive (two zero blocks) and the zstd frame.
  Status Finish();

 private:
  TarZstStream(Sink sink, void* cctx) : sink_(std::move(sink)), cctx_(cctx) {}
  Status Header(const std::string& name, uint64_t size, uint32_t mode);
  Status Pad(uint64_t size);
  // Compresses `raw` and passes what zstd emits to the sink.
  Status Write(std::string_view raw, bool end = false);

  Sink sink_;
  void* cctx_;  // ZSTD_CCtx
  std::string out_;
  bool stopped_ = false;
};

}  // namespace tau::evidence
