#include "cli/evidence_commands.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/capsule_diff.h"
#include "cli/command_support.h"
#include "common/strings.h"
#include "common/tau_home.h"
#include "cli/exit_codes.h"
#include "cli/job_commands.h"
#include "cli/table.h"
#include "cli/terminal.h"

namespace tau::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Writes all of `data` to `fd`.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Streams GET `path` into `dest`, writing each piece as it arrives. The
// bytes go to an unnamed file in dest's folder (O_TMPFILE) that is linked
// in and renamed over `dest` only once complete and synced, so a failed or
// killed download leaves nothing behind. Where the file system has no
// O_TMPFILE, a named ".tau-partial-PID-N" file in that folder is used and
// removed on failure.
Status Download(ApiClient& client, const std::string& path, const fs::path& dest) {
  const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  // Short, so a DEST name of any allowed length still leaves room.
  static int downloads = 0;
  const fs::path partial = dir / fmt::format(".tau-partial-{}-{}", ::getpid(), ++downloads);
  bool named = false;
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    named = true;
  }
  if (fd < 0) return ErrnoError(errno, fmt::format("cannot write {}", dest.string()));
  int write_errno = 0;
  Status st = client.Stream(path, [&](std::string_view data) {
    if (WriteAll(fd, data)) return true;
    write_errno = errno;
    return false;
  });
  if (st.ok() && write_errno != 0) st = ErrnoError(write_errno, fmt::format("cannot write {}", dest.string()));
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoError(errno, fmt::format("cannot write {}", dest.string()));
  if (st.ok() && !named) {
    const std::string self = fmt::format("/proc/self/fd/{}", fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, partial.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      st = ErrnoError(errno, fmt::format("cannot write {}", dest.string()));
    } else {
      named = true;
    }
  }
  ::close(fd);
  if (st.ok() && ::rename(partial.c_str(), dest.c_str()) != 0) {
    st = ErrnoError(errno, fmt::format("cannot write {}", dest.string()));
  }
  if (!st.ok() && named) ::unlink(partial.c_str());
  return st;
}

// A path the server listed is used under DEST only when it stays there.
bool SafeListedPath(const std::string& p) {
  if (p.empty() || p.front() == '/') return false;
  for (const auto& part : fs::path(p)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

Result<json> Capsule(ApiClient& client, const std::string& job) {
  return client.Get(JobPath(job) + "/evidence");
}

}  // namespace

int RunEvidence(const std::string& job, const std::string& output, const std::string& export_file) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  if (!export_file.empty()) {
    if (Status st = Download(*client, JobPath(job) + "/evidence/export", export_file); !st.ok()) return Fail(st);
    std::error_code ec;
    std::printf("wrote %s (%s)\n", export_file.c_str(), FormatBytes(static_cast<int64_t>(fs::file_size(export_file, ec))).c_str());
    return kExitOk;
  }
  auto capsule = Capsule(*client, job);
  if (!capsule.ok()) return Fail(capsule.error());
  PrintJsonOrYaml(*capsule, output.empty() ? "yaml" : output);
  return kExitOk;
}

int RunReproduce(const std::string& job, const std::vector<std::string>& overrides, bool follow,
                 const std::string& command_line) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  // The server applies the overrides to the stored spec (whose secret
  // values the capsule does not show) and validates it again.
  auto submitted = client->Post(JobPath(job) + "/reproduce",
                                {{"set", overrides}, {"submit_command", command_line}, {"request_id", NewRequestId()}},
                                ApiClient::Resend::kSafe);
  if (!submitted.ok()) {
    if (submitted.error().code() == StatusCode::kInvalidArgument) {
      std::fprintf(stderr, "%s\n", submitted.error().message().c_str());
      return kExitUsage;
    }
    return Fail(submitted.error());
  }
  std::string new_id = submitted->value("id", "");
  std::printf("%s\n", new_id.c_str());
  std::fflush(stdout);
  return follow ? FollowJob(new_id) : kExitOk;
}

int RunDiff(const std::string& a, const std::string& b, const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto ca = Capsule(*client, a);
  if (!ca.ok()) return Fail(ca.error());
  auto cb = Capsule(*client, b);
  if (!cb.ok()) return Fail(cb.error());
  std::vector<std::string> lines = DiffCapsules(*ca, *cb);
  if (!output.empty()) {
    PrintJsonOrYaml(json{{"a", (*ca)["job"]["id"]}, {"b", (*cb)["job"]["id"]}, {"differences", lines}}, output);
    return kExitOk;
  }
  std::printf("--- %s (%s)\n+++ %s (%s)\n", (*ca)["job"].value("id", "").c_str(), (*ca)["job"].value("name", "").c_str(),
              (*cb)["job"].value("id", "").c_str(), (*cb)["job"].value("name", "").c_str());
  if (lines.empty()) std::printf("same spec, code and environment\n");
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  return kExitOk;
}

int RunOutputs(const std::string& job, const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto reply = client->Get(JobPath(job) + "/outputs");
  if (!reply.ok()) return Fail(reply.error());
  if (!output.empty()) {
    PrintJsonOrYaml(*reply, output);
    return kExitOk;
  }
  const json& files = (*reply)["files"];
  if (files.empty()) {
    std::printf("no outputs in %s\n", reply->value("output_dir", "").c_str());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& f : files) {
    rows.push_back({f.value("path", ""), FormatBytes(f.value("size", int64_t{0})), "sha256:" + f.value("sha256", "").substr(0, 12)});
  }
  std::printf("%s", RenderTable({"PATH", "SIZE", "DIGEST"}, rows, TerminalWidth(stdout)).c_str());
  return kExitOk;
}

int RunCopy(const std::string& source, const std::string& dest) {
  auto colon = source.find(':');
  if (colon == std::string::npos || colon == 0) {
    std::fprintf(stderr, "tau: cp: \"%s\" is not JOB:PATH (JOB: alone copies every output)\n", source.c_str());
    return kExitUsage;
  }
  const std::string job = source.substr(0, colon);
  std::string path = source.substr(colon + 1);
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto reply = client->Get(JobPath(job) + "/outputs");
  if (!reply.ok()) return Fail(reply.error());
  // PATH names a file, or a folder whose files are copied under DEST.
  std::vector<std::string> picked;
  for (const json& f : (*reply)["files"]) {
    std::string p = f.value("path", "");
    if (!SafeListedPath(p)) {
      std::fprintf(stderr, "tau: cp: the server listed an unsafe output path \"%s\"; it is skipped\n", p.c_str());
      continue;
    }
    if (path.empty() || p == path || p.rfind(path + "/", 0) == 0) picked.push_back(p);
  }
  if (picked.empty()) {
    std::fprintf(stderr, "tau: cp: job %s has no output \"%s\" (tau outputs %s lists them)\n", job.c_str(), path.c_str(),
                 job.c_str());
    return kExitFailure;
  }
  std::error_code ec;
  const bool single = picked.size() == 1 && picked[0] == path;
  for (const std::string& p : picked) {
    fs::path target;
    if (single) {
      target = fs::is_directory(dest, ec) ? fs::path(dest) / fs::path(p).filename() : fs::path(dest);
    } else {
      std::string rel = path.empty() ? p : p.substr(path.size() + 1);
      target = fs::path(dest) / rel;
    }
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    std::string url = JobPath(job) + "/outputs/";
    for (const auto& part : fs::path(p)) url += UrlEscape(part.string()) + "/";
    url.pop_back();
    if (Status st = Download(*client, url, target); !st.ok()) return Fail(st);
    std::printf("%s\n", target.c_str());
  }
  return kExitOk;
}

}  // namespace tau::cli
