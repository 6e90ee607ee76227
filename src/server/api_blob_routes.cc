// PUT /api/v1/blobs/sha256:HEX: a code snapshot, stored under its digest.

#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "evidence/snapshot.h"
#include "server/api_http.h"

namespace tau::server {
namespace fs = std::filesystem;

void ServeBlobUpload(const TauHome& home, const httplib::Request& req, httplib::Response& res) {
  std::string digest = req.matches[1];
  if (evidence::BlobDigest(req.body) != digest) {
    SendError(res, InvalidArgumentError("the uploaded bytes do not match the digest in the path"));
    return;
  }
  fs::path path = home.blob(digest);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path.string() + fmt::format(".tmp{}", ::gettid());
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary);
    out.write(req.body.data(), static_cast<std::streamsize>(req.body.size()));
    out.flush();
    if (!out) {
      const int err = errno;
      fs::remove(tmp, ec);
      // A full disk is answered 507 like a refused submit.
      SendSubmitError(res, err == ENOSPC || err == EDQUOT
                               ? ErrnoError(err, fmt::format("cannot store the snapshot in {}",
                                                             path.parent_path().string()))
                               : ResourceExhaustedError(fmt::format("cannot store the snapshot in {}: disk full?",
                                                                    path.parent_path().string())));
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    SendError(res, ErrnoError(ec.value(), "store the snapshot"));
    return;
  }
  SendJson(res, {{"digest", digest}, {"size", req.body.size()}}, 201);
}

}  // namespace tau::server
