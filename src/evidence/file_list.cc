#include "evidence/file_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "common/digest.h"

namespace tau::evidence {
namespace fs = std::filesystem;

Result<std::string> FileSha256Hex(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot read {}", path.string()));
  Sha256 hasher;
  std::string buf(1 << 20, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    hasher.Update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return InternalError(fmt::format("reading {} failed", path.string()));
  return hasher.FinalHex();
}

Result<std::vector<FileDigest>> ListFileDigests(const fs::path& root) {
  std::vector<FileDigest> out;
  std::error_code ec;
  if (!fs::exists(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    if (!it->is_regular_file(e) || it->is_symlink(e)) continue;
    FileDigest f;
    f.path = fs::relative(it->path(), root, e).generic_string();
    f.size = static_cast<int64_t>(it->file_size(e));
    auto digest = FileSha256Hex(it->path());
    if (!digest.ok()) continue;  // removed while listing
    f.sha256 = *digest;
    out.push_back(std::move(f));
  }
  if (ec) return ErrnoError(ec.value(), fmt::format("listing {}", root.string()));
  std::sort(out.begin(), out.end(), [](const FileDigest& a, const FileDigest& b) { return a.path < b.path; });
  return out;
}

bool IsSecretEnvName(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return false;
}

}  // namespace tau::evidence
