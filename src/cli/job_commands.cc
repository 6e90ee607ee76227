#include "cli/job_commands.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/api_client.h"
#include "cli/command_support.h"
#include "cli/connect.h"
#include "cli/exit_codes.h"
#include "cli/log_follow.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "cli/timeline.h"
#include "common/duration.h"
#include "common/tau_home.h"
#include "evidence/git_info.h"
#include "evidence/snapshot.h"
#include "render/yaml_emitter.h"
#include "spec/env_file.h"
#include "spec/json_codec.h"
#include "spec/load.h"

namespace tau::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Whether a refused submit asks for its snapshot: 412, or an older
// server's 400 that says so.
bool SnapshotMissing(int http_status, const Status& st) {
  if (http_status == 412) return true;
  return st.code() == StatusCode::kFailedPrecondition && st.message().find("has not been uploaded") != std::string::npos;
}

std::string Age(const json& time) {
  int64_t t = ParseTime(time);
  return t < 0 ? "-" : FormatDurationShort(Duration(NowMs() - t));
}

std::string Elapsed(const json& job) {
  int64_t start = ParseTime(job["started_at"]);
  if (start < 0) return "-";
  int64_t end = ParseTime(job["finished_at"]);
  return FormatDurationShort(Duration((end < 0 ? NowMs() : end) - start));
}

std::string StateText(const json& job) {
  std::string state = job.value("state", "");
  if (job.value("cancel_requested", false) && (state == "Running" || state == "Admitted")) return "Cancelling";
  return state;
}

// Splits a stream into lines and hands each whole line to `on_line`.
class LineSplitter {
 public:
  explicit LineSplitter(std::function<void(const std::string&)> on_line) : on_line_(std::move(on_line)) {}
  bool Feed(std::string_view data) {
    buffer_.append(data);
    size_t pos;
    while ((pos = buffer_.find('\n')) != std::string::npos) {
      on_line_(buffer_.substr(0, pos));
      buffer_.erase(0, pos + 1);
    }
    return true;
  }

 private:
  std::function<void(const std::string&)> on_line_;
  std::string buffer_;
};

void OnInterruptDetach(int) {
  static const char kMsg[] = "\ntau: detached; the job keeps running (tau logs -f to follow it again)\n";
  (void)!::write(2, kMsg, sizeof kMsg - 1);
  ::_exit(130);
}

}  // namespace

int FollowJob(const std::string& id) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  ::signal(SIGINT, OnInterruptDetach);
  Status st = FollowLog(&*client, JobPath(id) + "/logs?follow=true&attempt=all&rank=all", [](std::string_view data) {
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
  });
  if (!st.ok()) return Fail(st);
  auto job = client->Get(JobPath(id));
  if (!job.ok()) return Fail(job.error());
  std::string state = job->value("state", "");
  std::string reason = job->value("reason", "");
  if (state == "Succeeded") return 0;
  if (state == "Cancelled") return 130;
  if ((*job)["attempts"].size() > 1) {
    std::fprintf(stderr, "tau: job %s ended %s after %zu attempts: %s\n", id.c_str(), state.c_str(),
                 (*job)["attempts"].size(), job->value("message", "").c_str());
  }
  if (reason == "ExitCode" && (*job)["exit_code"].is_number_integer()) return (*job)["exit_code"].get<int>();
  const json& attempts = (*job)["attempts"];
  if (reason == "Signal" && !attempts.empty() && attempts.back()["signal"].is_number_integer()) {
    return 128 + attempts.back()["signal"].get<int>();
  }
  std::fprintf(stderr, "tau: job %s ended %s: %s (%s)\n", id.c_str(), state.c_str(), reason.c_str(),
               job->value("message", "").c_str());
  return 125;
}

int RunRun(const RunOptions& o) {
  std::vector<std::string> overrides = o.overrides;
  if (!o.queue.empty()) overrides.push_back("queue=" + o.queue);
  if (!o.priority.empty()) overrides.push_back("priority=" + o.priority);
  if (!o.name.empty()) overrides.push_back("name=" + o.name);
  spec::Diagnostics diags;
  spec::LoadOptions load_options;
  load_options.overrides = overrides;
  auto loaded = spec::LoadJobSpecFile(o.file, load_options, &diags);
  for (const auto& d : diags.Sorted()) std::fprintf(stderr, "%s\n", spec::FormatDiagnostic(d).c_str());
  if (!loaded.ok()) {
    if (diags.items().empty()) std::fprintf(stderr, "tau: %s\n", loaded.error().message().c_str());
    return kExitUsage;
  }
  const spec::JobSpec& spec = loaded->spec;
  if (spec::IsPythonFileEntrypoint(spec.run.entrypoint) &&
      !fs::is_regular_file(loaded->working_dir / spec.run.entrypoint)) {
    std::fprintf(stderr, "%s: error: run.entrypoint: \"%s\" is not in working_dir %s; nothing was submitted\n",
                 o.file.c_str(), spec.run.entrypoint.c_str(), loaded->working_dir.c_str());
    return kExitUsage;
  }
  // Secret variables: runtime.env_from_file (relative to the spec's folder)
  // and --env-file, read now and sent apart from the spec.
  std::vector<std::string> env_files = o.env_files;
  if (!spec.runtime.env_from_file.empty()) {
    fs::path p = spec.runtime.env_from_file;
    env_files.insert(env_files.begin(), (p.is_absolute() ? p : fs::absolute(o.file).parent_path() / p).string());
  }
  json secret_env = json::object();
  for (const std::string& path : env_files) {
    spec::Diagnostics env_diags;
    if (path == "-" && o.file == spec::kStdinPath) {
      std::fprintf(stderr, "tau: --env-file -: standard input already holds the spec\n");
      return kExitUsage;
    }
    auto vars = spec::ReadEnvFile(path, spec::Location{}, &env_diags);
    for (const auto& d : env_diags.Sorted()) std::fprintf(stderr, "%s\n", spec::FormatDiagnostic(d).c_str());
    if (!vars) return kExitUsage;
    for (const auto& [k, v] : *vars) {
      if (secret_env.contains(k)) {
        std::fprintf(stderr, "tau: warning: %s is in more than one env file; the one from %s is used\n", k.c_str(),
                     path.c_str());
      }
      for (const auto& [spec_key, spec_value] : spec.runtime.env) {
        if (spec_key == k) {
          std::fprintf(stderr, "tau: warning: %s from env file %s replaces runtime.env's\n", k.c_str(), path.c_str());
        }
      }
      secret_env[k] = v;
    }
  }
  auto snapshot = evidence::PackSnapshot(loaded->working_dir, {.exclude = spec.run.exclude});
  if (!snapshot.ok()) return Fail(snapshot.error());
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  json body = {{"spec", spec::JobSpecToJsonValue(spec)},
               {"snapshot", snapshot->digest},
               {"submit_command", o.command_line}};
  if (!secret_env.empty()) body["secret_env"] = secret_env;
  json git = nullptr;
  if (auto info = evidence::ReadGitInfo(loaded->working_dir)) {
    git = {{"commit", info->commit},
           {"branch", info->branch},
           {"dirty", info->dirty},
           {"diff", info->diff},
           {"diff_truncated", info->diff_truncated}};
  }
  body["evidence"] = {{"git", git}};
  // The server creates one job per request id, so the submit may be sent
  // again after a lost connection without starting the job twice.
  body["request_id"] = NewRequestId();
  // Submitted first: the server has the snapshot of most submits (the
  // same code again), and says 412 when it has not; then it is uploaded
  // and the same submit (the same request id) sent again.
  int http_status = 0;
  auto job = client->Post("/api/v1/jobs", body, ApiClient::Resend::kSafe, &http_status);
  if (!job.ok() && SnapshotMissing(http_status, job.error())) {
    if (Status st = client->PutBlob(snapshot->digest, snapshot->blob); !st.ok()) return Fail(st);
    job = client->Post("/api/v1/jobs", body, ApiClient::Resend::kSafe);
  }
  if (!job.ok()) return Fail(job.error());
  std::string id = job->value("id", "");
  if (job->contains("warnings")) {
    for (const json& w : (*job)["warnings"]) std::fprintf(stderr, "tau: warning: %s\n", w.get<std::string>().c_str());
  }
  if (o.output == "json") std::printf("%s\n", job->dump(2).c_str());
  else std::printf("%s\n", id.c_str());
  std::fflush(stdout);
  if (!o.follow) return kExitOk;
  return FollowJob(id);
}

int RunList(const ListOptions& o) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  std::string query = "?";
  if (!o.state.empty()) query += "state=" + UrlEscape(o.state) + "&";
  if (!o.workspace.empty()) query += "workspace=" + UrlEscape(o.workspace) + "&";
  if (!o.project.empty()) query += "project=" + UrlEscape(o.project) + "&";
  for (const std::string& t : o.tags) {
    if (t.find('=') == std::string::npos) {
      std::fprintf(stderr, "tau: --tag \"%s\" is not KEY=VALUE\n", t.c_str());
      return kExitUsage;
    }
    query += "tag=" + UrlEscape(t) + "&";
  }
  const bool whole = o.output == "json" || o.output == "yaml";
  if (whole) {
    // Every job (or --limit of them), page by page, as one array.
    json all = json::array();
    std::string token = o.continue_token;
    while (true) {
      int page = 1000;
      if (o.limit > 0) page = std::min<int>(page, o.limit - static_cast<int>(all.size()));
      std::string path = "/api/v1/jobs" + query + fmt::format("limit={}", page);
      if (!token.empty()) path += "&continue=" + UrlEscape(token);
      auto result = client->Get(path);
      if (!result.ok()) return Fail(result.error());
      for (json& j : (*result)["jobs"]) all.push_back(std::move(j));
      const json& next = (*result)["next"];
      if (!next.is_string() || (o.limit > 0 && static_cast<int>(all.size()) >= o.limit)) break;
      token = next.get<std::string>();
    }
    PrintJsonOrYaml(all, o.output);
    std::fflush(stdout);
    return kExitOk;
  }
  query += fmt::format("limit={}", o.limit > 0 ? o.limit : 100);
  if (!o.continue_token.empty()) query += "&continue=" + UrlEscape(o.continue_token);
  while (true) {
    auto result = client->Get("/api/v1/jobs" + query);
    if (!result.ok()) return Fail(result.error());
    const json& jobs = (*result)["jobs"];
    {
      bool wide = o.output == "wide";
      std::vector<std::string> header = {"ID", "NAME", "WORKSPACE", "QUEUE", "STATE", "AGE", "DURATION", "GPUS"};
      if (wide) {
        header.insert(header.end(), {"ATTEMPT", "EXIT", "REASON", "PROGRESS", "PROJECT"});
      }
      std::vector<std::vector<std::string>> rows;
      for (const json& j : jobs) {
        std::vector<std::string> row = {j["id"], j["name"], j["workspace"], j["queue"], StateText(j),
                                        Age(j["created_at"]), Elapsed(j),
                                        std::to_string(j["resources"].value("gpus", 0))};
        if (wide) {
          row.push_back(std::to_string(j.value("attempt", 0)));
          row.push_back(j["exit_code"].is_null() ? "-" : j["exit_code"].dump());
          row.push_back(j.value("reason", ""));
          row.push_back(ProgressText(j, false));
          row.push_back(j.value("project", ""));
        }
        rows.push_back(std::move(row));
      }
      if (o.watch) std::printf("\033[H\033[2J");
      std::printf("%s", RenderTable(header, rows, TerminalWidth(stdout)).c_str());
      const json& next = (*result)["next"];
      if (next.is_string()) {
        // On stderr: stdout stays the table alone.
        std::fprintf(stderr, "(the newest %zu shown; older ones: tau list --continue %s, or -o json for all)\n",
                     jobs.size(), next.get<std::string>().c_str());
      }
    }
    std::fflush(stdout);
    if (!o.watch) return kExitOk;
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

int RunStatus(const std::string& id, const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto job = client->Get(JobPath(id));
  if (!job.ok()) return Fail(job.error());
  std::vector<json> events;
  LineSplitter splitter([&](const std::string& line) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_discarded()) events.push_back(std::move(e));
  });
  if (Status st = client->Stream(JobPath(job->value("id", id)) + "/events",
                                 [&](std::string_view d) { return splitter.Feed(d); });
      !st.ok()) {
    return Fail(st);
  }
  if (output == "json" || output == "yaml") {
    json out = *job;
    out["timeline"] = events;
    PrintJsonOrYaml(out, output);
    return kExitOk;
  }
  const json& j = *job;
  const bool color = UseColor(stdout);
  auto field = [&](const char* name, const std::string& value) {
    std::printf("%s %s\n", Styled(fmt::format("{:<11}", name), Style::kBold, color).c_str(), value.c_str());
  };
  field("Job:", fmt::format("{} ({})", j.value("id", ""), j.value("name", "")));
  field("Workspace:", fmt::format("{}   Queue: {}", j.value("workspace", ""), j.value("queue", "")));
  std::string state = StateText(j);
  if (!j.value("reason", "").empty()) state += fmt::format(" ({}: {})", j.value("reason", ""), j.value("message", ""));
  field("State:", state);
  if (j.contains("store") && j["store"].value("condition", "Ok") != "Ok") {
    field("Daemon:", fmt::format("{}: changes cannot be recorded ({})", j["store"].value("condition", ""),
                                 j["store"].value("message", "")));
  }
  const json& r = j["resources"];
  field("Resources:", fmt::format("{} worker{}, {} CPU, {} memory, {} GPU{}", r.value("workers", 1),
                                  r.value("workers", 1) == 1 ? "" : "s", r.value("cpus", ""), r.value("memory", ""),
                                  r.value("gpus", 0), r.value("gpus", 0) == 1 ? "" : "s"));
  if (!j.value("project", "").empty()) field("Project:", j.value("project", ""));
  if (j.contains("tags") && !j["tags"].empty()) {
    std::vector<std::string> tags;
    for (auto it = j["tags"].begin(); it != j["tags"].end(); ++it) tags.push_back(it.key() + "=" + it.value().get<std::string>());
    field("Tags:", fmt::format("{}", fmt::join(tags, ", ")));
  }
  if (j.contains("reproduces") && j["reproduces"].is_string()) field("Reproduces:", j["reproduces"].get<std::string>());
  field("Created:", fmt::format("{} ({} ago)", j["created_at"].get<std::string>(), Age(j["created_at"])));
  if (!j["started_at"].is_null()) field("Started:", j["started_at"].get<std::string>());
  if (!j["finished_at"].is_null()) field("Finished:", j["finished_at"].get<std::string>());
  field("Duration:", Elapsed(j));
  if (j.contains("progress") && j["progress"].is_object()) field("Progress:", ProgressText(j, true));
  if (j.contains("retries")) {
    const json& rt = j["retries"];
    std::string retries = fmt::format("{} of {} restarts, {} of {} interruptions", rt.value("restarts", 0),
                                      rt.value("max_restarts", 0), rt.value("interruptions", 0),
                                      rt.value("max_interruptions", 0));
    if (!rt["retry_at"].is_null()) {
      int64_t at = ParseTime(rt["retry_at"]);
      retries += fmt::format("; next attempt at {} (in {})", rt["retry_at"].get<std::string>(),
                             FormatDurationShort(Duration(std::max<int64_t>(0, at - NowMs()))));
    }
    field("Retries:", retries);
  }
  if (j.contains("checkpoints") && !j["checkpoints"].empty()) {
    const json& newest = j["checkpoints"][0];
    field("Checkpoint:", fmt::format("{} (newest of {}; tau checkpoints {})", newest.value("path", ""),
                                     j["checkpoints"].size(), j.value("id", "")));
  }
  if (!j["attempts"].empty()) {
    std::printf("\n%s\n", Styled("Attempts:", Style::kBold, color).c_str());
    std::vector<std::vector<std::string>> rows;
    for (const json& a : j["attempts"]) {
      std::string exit = a["exit_code"].is_null() ? (a["signal"].is_null() ? "-" : "signal " + a["signal"].dump())
                                                  : a["exit_code"].dump();
      std::string resumed = a.value("resumed_from", "");
      if (!resumed.empty()) resumed = fs::path(resumed).filename().string();
      rows.push_back({std::to_string(a.value("number", 0)), a.value("state", ""), exit, a.value("reason", ""),
                      a.value("retry_reason", "").empty() ? "-" : a.value("retry_reason", ""),
                      resumed.empty() ? "-" : resumed,
                      a["started_at"].is_null() ? "-" : a["started_at"].get<std::string>(),
                      a["finished_at"].is_null() ? "-" : a["finished_at"].get<std::string>()});
    }
    std::printf("%s", RenderTable({"  #", "STATE", "EXIT", "REASON", "RETRY REASON", "RESUMED FROM", "STARTED", "FINISHED"},
                                  rows, TerminalWidth(stdout)).c_str());
  }
  std::printf("\n%s\n", Styled("Timeline:", Style::kBold, color).c_str());
  std::vector<std::vector<std::string>> rows;
  // Routine checkpoints fold into one row per attempt (tau events --all lists each).
  for (const json& e : FoldCheckpointEvents(events)) {
    rows.push_back({e.value("at", ""), e.value("type", ""), e.value("reason", ""), e.value("message", "")});
  }
  std::printf("%s", RenderTable({"TIME", "EVENT", "REASON", "MESSAGE"}, rows, TerminalWidth(stdout)).c_str());
  return kExitOk;
}

int RunLogs(const LogsOptions& o) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  std::string path = JobPath(o.job) + "/logs?rank=" + UrlEscape(o.rank.empty() ? "0" : o.rank);
  if (o.follow) path += "&follow=true";
  if (!o.attempt.empty()) path += "&attempt=" + UrlEscape(o.attempt);
  if (o.tail >= 0) path += fmt::format("&tail={}", o.tail);
  auto write = [](std::string_view data) {
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
  };
  if (o.follow) {
    ::signal(SIGINT, [](int) { ::_exit(130); });
    Status st = FollowLog(&*client, path, write);
    return st.ok() ? kExitOk : Fail(st);
  }
  Status st = client->Stream(path, [&](std::string_view data) {
    write(data);
    return true;
  });
  return st.ok() ? kExitOk : Fail(st);
}

int RunCancel(const std::vector<std::string>& jobs) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  int rc = kExitOk;
  for (const std::string& id : jobs) {
    auto job = client->Post(JobPath(id) + "/cancel", json::object());
    if (!job.ok()) {
      std::fprintf(stderr, "tau: %s: %s\n", id.c_str(), job.error().message().c_str());
      rc = kExitFailure;
      continue;
    }
    std::printf("%s: %s\n", job->value("id", id).c_str(),
                job->value("state", "") == "Cancelled" ? "cancelled" : "cancelling (SIGTERM sent, SIGKILL after its grace period)");
  }
  return rc;
}

int RunEvents(const std::string& job, bool follow, const std::string& output, bool all) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  std::string path = job.empty() ? "/api/v1/events?" : JobPath(job) + "/events?";
  if (follow) path += "follow=true";
  if (follow) ::signal(SIGINT, [](int) { ::_exit(130); });
  // -o json|yaml followed: one JSON line or one YAML document per event as
  // it comes (listed: the events as one list, below).
  auto print = [&](const std::string& line) {
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded()) return;
    if (output == "json") {
      std::printf("%s\n", e.dump().c_str());
    } else if (output == "yaml") {
      std::printf("---\n%s", render::EmitYaml(e).c_str());
    } else {
      std::printf("%s  %s  %-15s %-12s %s\n", e.value("at", "").c_str(), e.value("job_id", "").c_str(),
                  e.value("type", "").c_str(), e.value("reason", "").c_str(), e.value("message", "").c_str());
    }
    std::fflush(stdout);
  };
  Status st;
  if (follow) {
    // Across a daemon restart it goes on after the last event shown.
    st = FollowEvents(&*client, path, print);
  } else {
    // Listed whole, so that routine checkpoints fold into one row per
    // attempt unless --all asks for each.
    std::vector<json> events;
    LineSplitter splitter([&](const std::string& line) {
      json e = json::parse(line, nullptr, false);
      if (!e.is_discarded()) events.push_back(std::move(e));
    });
    st = client->Stream(path, [&](std::string_view d) { return splitter.Feed(d); });
    if (st.ok() && !output.empty()) {
      PrintJsonOrYaml(events, output);
    } else if (st.ok()) {
      for (const json& e : all ? events : FoldCheckpointEvents(events)) print(e.dump());
    }
  }
  return st.ok() ? kExitOk : Fail(st);
}

int RunRemove(const std::vector<std::string>& jobs) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  int rc = kExitOk;
  for (const std::string& id : jobs) {
    if (Status st = client->Delete(JobPath(id)); !st.ok()) {
      std::fprintf(stderr, "tau: %s: %s\n", id.c_str(), st.message().c_str());
      rc = kExitFailure;
    } else {
      std::printf("%s: removed\n", id.c_str());
    }
  }
  return rc;
}

int RunPrune(const std::string& older_than, int64_t keep) {
  json body = json::object();
  if (!older_than.empty()) {
    if (auto d = ParseDuration(older_than); !d.ok()) {
      std::fprintf(stderr, "tau prune: --older-than: %s\n", d.error().message().c_str());
      return kExitUsage;
    }
    body["older_than"] = older_than;
  }
  if (keep >= 0) body["keep"] = keep;
  if (body.empty()) {
    std::fprintf(stderr, "tau prune: give --older-than DURATION, --keep N, or both\n");
    return kExitUsage;
  }
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto result = client->Post("/api/v1/prune", body);
  if (!result.ok()) return Fail(result.error());
  std::printf("removed %zu finished job%s\n", (*result)["removed"].size(), (*result)["removed"].size() == 1 ? "" : "s");
  return kExitOk;
}

int RunServerStart(bool foreground, const std::string& listen, std::vector<std::string> daemon_args) {
  TauHome home(TauHome::DefaultRoot());
  if (!listen.empty()) {
    // ADDR:PORT; taugridd checks the rest, this catches a bare port early.
    const size_t colon = listen.rfind(':');
    const std::string port = colon == std::string::npos ? "" : listen.substr(colon + 1);
    if (colon == std::string::npos || colon == 0 || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stol(port) > 65535) {
      std::fprintf(stderr,
                   "tau: --listen %s: expected ADDR:PORT, e.g. 127.0.0.1:38123 (this machine only) or 0.0.0.0:38123 "
                   "(every interface)\n",
                   listen.c_str());
      return kExitUsage;
    }
    daemon_args.insert(daemon_args.end(), {"--listen", listen});
  }
  if (auto info = ReadServerJson(home); info && ServerAnswers(info->url)) {
    if (!listen.empty() && info->listen != listen) {
      return Fail(FailedPreconditionError(fmt::format(
          "taugridd is already running (pid {}) listening on {}; stop it first (tau server stop) to listen on {}",
          info->pid, info->listen.empty() ? info->url : info->listen, listen)));
    }
    std::printf("taugridd is already running (pid %lld) at %s\n", static_cast<long long>(info->pid), info->url.c_str());
    return kExitOk;
  }
  if (DaemonHoldsLock(home)) {
    auto busy = WaitForBusyServer(home);
    if (busy.ok()) {
      std::printf("taugridd is already running at %s\n", busy->url.c_str());
      return kExitOk;
    }
    if (DaemonHoldsLock(home)) return Fail(busy.error());
  }
  if (foreground) {
    std::string daemon = TaugriddPath();
    std::vector<std::string> args = {daemon, "--home", home.root().string()};
    args.insert(args.end(), daemon_args.begin(), daemon_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(daemon.c_str(), argv.data());
    return Fail(ErrnoError(errno, "start " + daemon));
  }
  auto pid = StartBackgroundServer(home, daemon_args);
  if (!pid.ok()) return Fail(pid.error());
  auto info = ReadServerJson(home);
  std::printf("started taugridd (pid %lld) at %s; log: %s\n", static_cast<long long>(*pid),
              info ? info->url.c_str() : "?", home.server_log().c_str());
  return kExitOk;
}

int RunServerStop() {
  TauHome home(TauHome::DefaultRoot());
  auto info = ReadServerJson(home);
  // A daemon that holds the lock runs, whether it answers or not.
  if (!info || (!ServerAnswers(info->url) && !DaemonHoldsLock(home))) {
    std::printf("no taugridd is running for %s\n", home.root().c_str());
    return kExitOk;
  }
  if (::kill(static_cast<pid_t>(info->pid), SIGTERM) != 0) return Fail(ErrnoError(errno, "stop taugridd"));
  // The daemon holds its lock until it exits (a zombie awaiting its reaper
  // would still answer kill(pid, 0)).
  for (int i = 0; i < 400; ++i) {
    int fd = ::open(home.daemon_lock().c_str(), O_RDWR | O_CLOEXEC);
    bool free = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0) ::close(fd);
    if (free) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("stopped taugridd (pid %lld); running jobs keep running\n", static_cast<long long>(info->pid));
  return kExitOk;
}

int RunServerToken() {
  TauHome home(TauHome::DefaultRoot());
  std::ifstream in(home.token());
  std::string token;
  std::getline(in, token);
  if (!in.good() && token.empty()) {
    std::fprintf(stderr, "tau: no token in %s: no taugridd has started with TAU_HOME %s\n", home.token().c_str(),
                 home.root().c_str());
    return kExitFailure;
  }
  // For TAU_TOKEN elsewhere: `kubectl exec deploy/taugrid -- tau server token`.
  std::printf("%s\n", token.c_str());
  return kExitOk;
}

int RunServerStatus() {
  auto endpoint = ConnectToServer(/*start_if_needed=*/false);
  if (!endpoint.ok()) {
    std::printf("%s\n", endpoint.error().message().c_str());
    return kExitFailure;
  }
  ApiClient client(*endpoint);
  auto info = client.Get("/api/v1/info");
  if (!info.ok()) return Fail(info.error());
  std::string summary;
  if (info->contains("jobs") && (*info)["jobs"].is_object()) {
    for (const auto& [state, n] : (*info)["jobs"].items()) {
      if (n.get<int64_t>() > 0) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n.get<int64_t>(), state);
    }
  }
  std::printf("taugridd %s (pid %lld) at %s\ncapacity: %s CPU, %s memory, %lld GPUs\njobs: %s\n",
              info->value("version", "").c_str(), static_cast<long long>(info->value("pid", int64_t{0})),
              endpoint->url.c_str(), (*info)["capacity"].value("cpus", "").c_str(),
              (*info)["capacity"].value("memory", "").c_str(),
              static_cast<long long>((*info)["capacity"].value("gpus", int64_t{0})),
              summary.empty() ? "none" : summary.c_str());
  if (info->contains("store") && (*info)["store"].value("condition", "Ok") != "Ok") {
    std::printf("database: %s: changes cannot be recorded (%s)\n", (*info)["store"].value("condition", "").c_str(),
                (*info)["store"].value("message", "").c_str());
  }
  return kExitOk;
}

}  // namespace tau::cli
