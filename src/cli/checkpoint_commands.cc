#include "cli/checkpoint_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command_support.h"
#include "common/strings.h"
#include "cli/exit_codes.h"
#include "cli/job_commands.h"
#include "cli/table.h"
#include "cli/terminal.h"

namespace tau::cli {
using nlohmann::json;

int RunCheckpoints(const std::string& job, const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto reply = client->Get(JobPath(job) + "/checkpoints");
  if (!reply.ok()) return Fail(reply.error());
  if (!output.empty()) {
    PrintJsonOrYaml(*reply, output);
    return kExitOk;
  }
  const json& list = (*reply)["checkpoints"];
  if (list.empty()) {
    std::printf("no complete checkpoints in %s\n", reply->value("checkpoint_dir", "").c_str());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& cp : list) {
    std::string digest = cp.value("digest", "");
    if (digest.empty()) digest = "(digesting)";
    else if (digest.size() > 19) digest = digest.substr(0, 19);  // "sha256:" + 12 hex
    rows.push_back({cp.value("name", "") + (cp.value("folder", false) ? "/" : ""),
                    FormatBytes(cp.value("size_bytes", int64_t{0})), cp.value("completed_at", ""), digest});
  }
  std::printf("%s", RenderTable({"NAME", "SIZE", "COMPLETED", "DIGEST"}, rows, TerminalWidth(stdout)).c_str());
  std::printf("newest first; keeping %d in %s\n", reply->value("keep", 0), reply->value("checkpoint_dir", "").c_str());
  return kExitOk;
}

int RunResume(const std::string& job, const std::string& from, bool follow) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  json body = json::object();
  if (!from.empty()) body["from"] = from;
  auto reply = client->Post(JobPath(job) + "/resume", body);
  if (!reply.ok()) return Fail(reply.error());
  std::string id = reply->value("id", job);
  std::printf("%s: %s\n", id.c_str(), reply->value("message", "").c_str());
  std::fflush(stdout);
  return follow ? FollowJob(id) : kExitOk;
}

}  // namespace tau::cli
