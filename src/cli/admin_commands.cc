#include "cli/admin_commands.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/api_client.h"
#include "cli/command_support.h"
#include "cli/connect.h"
#include "cli/exit_codes.h"
#include "cli/file_args.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "common/strings.h"
#include "render/kueue_config.h"
#include "render/yaml_emitter.h"
#include "spec/load.h"
#include "spec/yaml_tree.h"

namespace tau::cli {
using nlohmann::json;


namespace {

// Errors for documents that are workloads rather than platform
// configuration (a TauGrid job spec, a batch/v1 Job, a RayJob): they are
// submitted with `tau run`, which `tau admin apply` must say instead of
// calling them unknown kinds. False when there were any.
// `file` names the text in messages; `path` is how to give it to tau run.
bool CheckNotAWorkload(const std::string& text, const std::string& file, const std::string& path,
                       spec::Diagnostics* diags) {
  std::vector<spec::Node> docs;
  spec::Diagnostics parse_diags;
  if (!spec::ReadYamlDocuments(text, file, {}, &docs, &parse_diags)) return true;  // decoding reports it
  bool ok = true;
  for (const spec::Node& doc : docs) {
    if (!doc.IsMapping()) continue;
    const spec::Node* api = doc.Find("apiVersion");
    const spec::Node* kind = doc.Find("kind");
    const std::string api_text = api && api->IsScalar() ? api->scalar : "";
    const std::string kind_text = kind && kind->IsScalar() ? kind->scalar : "";
    if (!api && (doc.Find("schema_version") || doc.Find("run"))) {
      diags->Error(doc.location, fmt::format("this is a TauGrid job spec, not platform configuration: "
                                             "submit it with `tau run {}`",
                                             ShellQuote(path)));
      ok = false;
    } else if ((api_text == "batch/v1" && kind_text == "Job") ||
               (api_text.starts_with("ray.io/") && kind_text == "RayJob")) {
      diags->Error(kind->location,
                   fmt::format("a {} {} is a workload, not platform configuration: write it as a job spec "
                               "and submit it with `tau run` (`tau render` shows the {} it becomes)",
                               api_text, kind_text, kind_text));
      ok = false;
    }
  }
  return ok;
}

}  // namespace

int RunAdminApply(const std::vector<std::string>& args, bool force_conflicts) {
  auto files = ExpandFileArgs(args);
  if (!files.ok()) {
    std::fprintf(stderr, "tau: %s\n", files.error().message().c_str());
    return kExitUsage;
  }
  // Check locally first: positioned errors without a server.
  std::vector<std::pair<std::string, std::string>> texts;
  bool bad = false;
  for (const std::string& path : *files) {
    auto text = ReadFileArg(path);
    if (!text.ok()) {
      std::fprintf(stderr, "tau: %s\n", text.error().message().c_str());
      return kExitUsage;
    }
    const std::string file = path == "-" ? std::string(spec::kStdinName) : path;
    spec::Diagnostics diags;
    if (!CheckNotAWorkload(*text, file, path, &diags)) {
      bad = true;
    } else {
      render::DecodedKueueConfig decoded;
      if (!render::DecodeKueueManifests(*text, file, &decoded, &diags)) bad = true;
    }
    for (const auto& d : diags.Sorted()) {
      if (d.severity == spec::Severity::kError) std::fprintf(stderr, "%s\n", spec::FormatDiagnostic(d).c_str());
    }
    texts.emplace_back(file, std::move(*text));
  }
  if (bad) return kExitUsage;
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  json body = {{"files", json::array()}};
  for (const auto& [file, text] : texts) body["files"].push_back({{"manifests", text}, {"file", file}});
  if (force_conflicts) body["force_conflicts"] = true;
  auto result = client->Post("/api/v1/admin/apply", body);
  if (!result.ok()) {
    std::fprintf(stderr, "%s", result.error().message().c_str());
    if (!result.error().message().ends_with("\n")) std::fprintf(stderr, "\n");
    return result.error().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  for (const json& w : (*result)["warnings"]) std::fprintf(stderr, "%s\n", w.get<std::string>().c_str());
  for (const json& c : (*result)["changes"]) std::printf("%s\n", c.get<std::string>().c_str());
  return kExitOk;
}

int RunAdminGet(const std::string& kind, const std::string& name, const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  std::string path = "/api/v1/admin/objects?kind=" + UrlEscape(kind) + "&name=" + UrlEscape(name);
  auto result = client->Get(path);
  if (!result.ok()) return Fail(result.error());
  const json& objects = (*result)["objects"];
  if (objects.empty() && !name.empty()) {
    std::fprintf(stderr, "tau: no %s named \"%s\"\n", kind.c_str(), name.c_str());
    return kExitFailure;
  }
  if (output == "json") {
    // One object as itself, several as a List, as kubectl prints them.
    const json shown = objects.size() == 1 && !name.empty()
                           ? objects[0]
                           : json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
    std::printf("%s\n", shown.dump(2).c_str());
    return kExitOk;
  }
  bool first = true;
  for (const json& o : objects) {
    if (!first) std::printf("---\n");
    first = false;
    std::printf("%s", render::EmitYaml(o).c_str());
  }
  return kExitOk;
}

int RunAdminDelete(const std::string& kind, const std::string& name, const std::string& workspace) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  std::string path = "/api/v1/admin/objects/" + UrlEscape(kind) + "/" + UrlEscape(name);
  if (!workspace.empty()) path += "?namespace=" + UrlEscape(workspace);
  Status st = client->Delete(path);
  if (!st.ok()) return Fail(st);
  std::printf("%s/%s deleted\n", kind.c_str(), name.c_str());
  return kExitOk;
}

int RunQueues(const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto result = client->Get("/api/v1/queues");
  if (!result.ok()) return Fail(result.error());
  if (!output.empty()) {
    PrintJsonOrYaml(*result, output);
    return kExitOk;
  }
  const bool fair = result->value("fair_sharing", false);
  auto share_text = [](const json& share) {
    if (!share.is_number_integer()) return std::string("-");
    return share.get<int64_t>() == INT64_MAX ? std::string("inf") : std::to_string(share.get<int64_t>());
  };
  std::vector<std::vector<std::string>> rows;
  for (const json& cq : (*result)["cluster_queues"]) {
    bool first = true;
    for (const json& r : cq["resources"]) {
      std::vector<std::string> row = {first ? cq.value("name", "") : "", first ? cq.value("cohort", "") : "",
                                      first ? std::to_string(cq.value("pending", 0)) : "",
                                      first ? std::to_string(cq.value("admitted", 0)) : "", r.value("flavor", ""),
                                      r.value("resource", ""), r.value("nominal", ""), r.value("used", ""),
                                      r.value("borrowed", "")};
      if (fair) {
        row.push_back(first ? cq.value("fair_sharing_weight", "1") : "");
        row.push_back(first ? share_text(cq["weighted_share"]) : "");
      }
      rows.push_back(std::move(row));
      first = false;
    }
  }
  int width = TerminalWidth(stdout);
  std::vector<std::string> header = {"CLUSTERQUEUE", "COHORT", "PENDING", "ADMITTED", "FLAVOR", "RESOURCE", "NOMINAL",
                                     "USED", "BORROWED"};
  if (fair) header.insert(header.end(), {"WEIGHT", "SHARE"});
  std::printf("%s", RenderTable(header, rows, width).c_str());
  if (fair && !(*result)["cohorts"].empty()) {
    std::vector<std::vector<std::string>> cohort_rows;
    for (const json& c : (*result)["cohorts"]) {
      cohort_rows.push_back({c.value("name", ""), c.value("parent", "").empty() ? "-" : c.value("parent", ""),
                             share_text(c["weighted_share"])});
    }
    std::printf("\n%s", RenderTable({"COHORT", "PARENT", "SHARE"}, cohort_rows, width).c_str());
  }
  std::vector<std::vector<std::string>> lq_rows;
  for (const json& lq : (*result)["local_queues"]) {
    lq_rows.push_back({lq.value("workspace", ""), lq.value("name", ""), lq.value("cluster_queue", ""),
                       std::to_string(lq.value("pending", 0)), std::to_string(lq.value("admitted", 0))});
  }
  std::printf("\n%s", RenderTable({"WORKSPACE", "LOCALQUEUE", "CLUSTERQUEUE", "PENDING", "ADMITTED"}, lq_rows, width).c_str());
  return kExitOk;
}

int RunWhy(const std::string& id, const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto why = client->Get("/api/v1/jobs/" + UrlEscape(id) + "/why");
  if (!why.ok()) return Fail(why.error());
  if (!output.empty()) {
    PrintJsonOrYaml(*why, output);
    return kExitOk;
  }
  std::string state = why->value("state", "");
  std::string reason = why->value("reason", "");
  std::string message = why->value("message", "");
  std::printf("%s (%s) is %s", why->value("id", "").c_str(), why->value("name", "").c_str(), state.c_str());
  if (why->value("held", false)) std::printf(", held");
  std::printf(".\n");
  if (state == "Queued") {
    if (reason.empty()) std::printf("It is about to be admitted.\n");
    else std::printf("%s: %s\n", reason.c_str(), message.c_str());
    const json& holders = (*why)["holders"];
    // Quota holders matter only to a job waiting for quota: not to one held,
    // waiting for its dependencies, backing off, or in a stopped or
    // inactive queue.
    static const std::set<std::string> kNotForQuota = {"Held", "WaitingForDependencies", "Backoff",
                                                       "LocalQueueStopped", "ClusterQueueStopped",
                                                       "ClusterQueueInactive"};
    if (!holders.empty() && !kNotForQuota.count(reason)) {
      std::printf("It can start when quota is released by:\n");
      for (const json& h : holders) {
        std::printf("  %s (%s) in %s/%s, using %s\n", h.value("id", "").c_str(), h.value("name", "").c_str(),
                    h.value("workspace", "").c_str(), h.value("queue", "").c_str(), h.value("resources", "").c_str());
      }
    }
  } else if (state == "Running" || state == "Admitted") {
    // It waits for nothing: no pending reason.
    std::printf("It %s (attempt %lld): no pending reason.\n", state == "Running" ? "runs" : "is starting",
                static_cast<long long>(why->value("attempt", int64_t{0})));
  } else if (!reason.empty()) {
    std::printf("%s: %s\n", reason.c_str(), message.c_str());
  }
  return kExitOk;
}

int RunSetPriority(const std::string& id, const std::string& priority_class) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto job = client->Post("/api/v1/jobs/" + UrlEscape(id) + "/priority", {{"priority_class", priority_class}});
  if (!job.ok()) return Fail(job.error());
  std::printf("%s: priority %s\n", job->value("id", id).c_str(), priority_class.c_str());
  return kExitOk;
}

int RunHold(const std::vector<std::string>& jobs, bool hold) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  int rc = kExitOk;
  for (const std::string& id : jobs) {
    auto job = client->Post("/api/v1/jobs/" + UrlEscape(id) + (hold ? "/hold" : "/release"), json::object());
    if (!job.ok()) {
      std::fprintf(stderr, "tau: %s: %s\n", id.c_str(), job.error().message().c_str());
      rc = kExitFailure;
      continue;
    }
    std::printf("%s: %s\n", job->value("id", id).c_str(), hold ? "held" : "released");
  }
  return rc;
}

}  // namespace tau::cli
