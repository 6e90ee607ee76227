#include "cli/gpu_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command_support.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "common/strings.h"

namespace tau::cli {
using nlohmann::json;

namespace {

std::string Num(const json& v, const char* unit) {
  if (v.is_null()) return "-";
  if (v.is_number_float()) return fmt::format("{:.0f}{}", v.get<double>(), unit);
  return v.dump() + unit;
}

// On a cluster: its nodes, with the GPU health their node agents report.
int PrintClusterNodes(const json& reply) {
  const json& nodes = reply["nodes"];
  if (nodes.empty()) {
    std::printf("the cluster lists no nodes\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& n : nodes) {
    std::vector<std::string> placement;
    if (n.value("tainted", false)) placement.push_back("tainted");
    if (n.value("unschedulable", false)) placement.push_back("cordoned");
    rows.push_back({n.value("name", ""), n.value("gpu_class", "").empty() ? "-" : n.value("gpu_class", ""),
                    fmt::format("{}/{}", n.value("gpu_allocatable", int64_t{0}), n.value("gpu_capacity", int64_t{0})),
                    n.value("agent", false) ? n.value("health", "") : "- (no agent)",
                    n.value("reason", "").empty() ? "-" : n.value("reason", ""),
                    placement.empty() ? "-" : Join(placement, ", ")});
  }
  std::printf("%s", RenderTable({"NODE", "CLASS", "GPUS", "HEALTH", "REASON", "SCHEDULING"}, rows, TerminalWidth(stdout))
                        .c_str());
  for (const json& n : nodes) {
    if (n.value("health", "") != "Unhealthy") continue;
    const json gpus = n.value("gpus", json::array());
    if (gpus.empty()) {  // an agent's condition without its annotation
      std::printf("%s: %s\n", n.value("name", "").c_str(), n.value("message", "").c_str());
      continue;
    }
    std::printf("%s:\n", n.value("name", "").c_str());
    for (const json& g : gpus) {
      if (g.value("health", "") == "Healthy") continue;
      std::printf("  GPU %d %s: %s%s%s\n", g.value("index", 0), g.value("uuid", "").c_str(), g.value("health", "").c_str(),
                  g.value("message", "").empty() ? "" : ": ", g.value("message", "").c_str());
    }
  }
  return kExitOk;
}

}  // namespace

int RunNodes(const std::string& output) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto reply = client->Get("/api/v1/gpus");
  if (!reply.ok()) return Fail(reply.error());
  if (!output.empty()) {
    PrintJsonOrYaml(*reply, output);
    return kExitOk;
  }
  if ((*reply).value("cluster", false)) return PrintClusterNodes(*reply);
  const json& gpus = (*reply)["gpus"];
  if (gpus.empty()) {
    std::printf("no GPUs: a CPU-only machine (NVML not found and no TAU_HOME/gpus.json)\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& g : gpus) {
    std::string health = g.value("health", "");
    if (g.value("drained", false)) health += ", drained";
    if (!g["foreign_processes"].empty()) health += ", busy (not ours)";
    std::string job = g["job"].is_null() ? "-" : g["job"].value("id", "") + " (" + g["job"].value("name", "") + ")";
    rows.push_back({std::to_string(g.value("index", 0)), g.value("uuid", ""), g.value("model", ""), g.value("gpu_class", ""),
                    fmt::format("{} MiB", g.value("memory_mib", int64_t{0})), health,
                    g.value("reason", "").empty() ? "-" : g.value("reason", ""), Num(g["temperature_c"], "°C"),
                    Num(g["power_w"], "W"), Num(g["utilization_pct"], "%"), job});
  }
  std::printf("%s", RenderTable({"GPU", "UUID", "MODEL", "CLASS", "MEMORY", "HEALTH", "REASON", "TEMP", "POWER", "UTIL", "JOB"},
                                rows, TerminalWidth(stdout))
                        .c_str());
  if (!(*reply).value("monitored", false)) std::printf("(not watched: NVML was not found; GPUs from gpus.json)\n");
  for (const json& g : gpus) {
    if (!g.value("message", "").empty() && g.value("health", "") != "Healthy") {
      std::printf("GPU %d: %s\n", g.value("index", 0), g.value("message", "").c_str());
    }
  }
  return kExitOk;
}

int RunAdminGpu(const std::string& action, const std::string& gpu) {
  auto client = Client();
  if (!client.ok()) return Fail(client.error());
  auto reply = client->Post("/api/v1/admin/gpus/" + UrlEscape(gpu) + "/" + action, json::object());
  if (!reply.ok()) return Fail(reply.error());
  const char* said = action == "clear"   ? "cleared: in service again after its next good poll"
                     : action == "drain" ? "drained: running work finishes, nothing new starts"
                                         : "undrained: in service again";
  // The server resolved an index or a UUID prefix: say which GPU it was.
  std::printf("%s: %s\n", (*reply).value("uuid", gpu).c_str(), said);
  return kExitOk;
}

}  // namespace tau::cli
