#include "cli/top_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command_support.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "common/clock.h"
#include "common/duration.h"

namespace tau::cli {
using nlohmann::json;

namespace {

// One screen: everything is fetched first, then drawn at once.
Result<std::string> Screen(ApiClient& client) {
  TAU_ASSIGN_OR_RETURN(json queues, client.Get("/api/v1/queues"));
  TAU_ASSIGN_OR_RETURN(json info, client.Get("/api/v1/info"));
  // The newest running jobs (one page each); the counts cover them all.
  TAU_ASSIGN_OR_RETURN(json running_jobs, client.Get("/api/v1/jobs?state=Running&limit=1000"));
  TAU_ASSIGN_OR_RETURN(json admitted_jobs, client.Get("/api/v1/jobs?state=Admitted&limit=1000"));
  TAU_ASSIGN_OR_RETURN(json gpus, client.Get("/api/v1/gpus"));
  const int width = TerminalWidth(stdout);
  const json counts = info.value("jobs", json::object());
  const int64_t running = counts.value("Running", int64_t{0}) + counts.value("Admitted", int64_t{0});
  const int64_t pending = counts.value("Queued", int64_t{0});
  const int64_t retrying = counts.value("Retrying", int64_t{0});
  json jobs = json::array();
  for (const json& j : running_jobs["jobs"]) jobs.push_back(j);
  for (const json& j : admitted_jobs["jobs"]) jobs.push_back(j);
  std::vector<std::vector<std::string>> job_rows;
  for (const json& j : jobs) {
    int64_t started = ParseTime(j["started_at"]);
    job_rows.push_back({j.value("id", ""), j.value("name", ""), j.value("queue", ""),
                        std::to_string(j["resources"].value("gpus", 0)),
                        started < 0 ? "-" : FormatDurationShort(Duration(NowMs() - started)), ProgressText(j, false)});
  }
  std::string out = fmt::format("taugrid  {} running, {} pending, {} retrying  ({})\n\n", running, pending, retrying,
                                FormatRfc3339(std::chrono::system_clock::now()));
  std::vector<std::vector<std::string>> queue_rows;
  for (const json& cq : queues["cluster_queues"]) {
    std::string usage;
    for (const json& r : cq["resources"]) {
      usage += fmt::format("{}{} {}/{}", usage.empty() ? "" : "  ", r.value("resource", ""), r.value("used", ""),
                           r.value("nominal", ""));
    }
    queue_rows.push_back({cq.value("name", ""), std::to_string(cq.value("pending", 0)),
                          std::to_string(cq.value("admitted", 0)), usage});
  }
  out += RenderTable({"CLUSTERQUEUE", "PENDING", "ADMITTED", "USED/NOMINAL"}, queue_rows, width) + "\n";
  out += job_rows.empty() ? "no running jobs\n"
                          : RenderTable({"RUNNING", "NAME", "QUEUE", "GPUS", "FOR", "PROGRESS"}, job_rows, width);
  std::vector<std::vector<std::string>> gpu_rows;
  for (const json& g : gpus["gpus"]) {
    auto num = [](const json& v, const char* unit) { return v.is_null() ? std::string("-") : fmt::format("{:g}{}", v.get<double>(), unit); };
    std::string health = g.value("health", "");
    if (g.value("drained", false)) health += ", drained";
    gpu_rows.push_back({std::to_string(g.value("index", 0)), g.value("model", ""), health,
                        num(g["utilization_pct"], "%"), num(g["temperature_c"], "°C"), num(g["power_w"], "W"),
                        g["job"].is_null() ? "-" : g["job"].value("name", "")});
  }
  if (!gpu_rows.empty()) {
    out += "\n" + RenderTable({"GPU", "MODEL", "HEALTH", "UTIL", "TEMP", "POWER", "JOB"}, gpu_rows, width);
  }
  return out;
}

}  // namespace

int RunTop(bool once, double interval_seconds) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  if (!once) ::signal(SIGINT, [](int) { ::_exit(0); });
  const bool tty = ::isatty(1);
  while (true) {
    auto screen = Screen(*client);
    if (!screen.ok()) return Fail(screen.error());
    if (!once && tty) std::printf("\033[H\033[2J");
    std::printf("%s", screen->c_str());
    std::fflush(stdout);
    if (once) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(interval_seconds * 1000)));
  }
}

}  // namespace tau::cli
