#include "cli/command_support.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "cli/connect.h"
#include "cli/exit_codes.h"
#include "common/duration.h"
#include "render/yaml_emitter.h"

namespace tau::cli {

int Fail(const Status& st) {
  std::fprintf(stderr, "tau: %s\n", st.message().c_str());
  return kExitFailure;
}

Result<ApiClient> Client(bool start_if_needed) {
  TAU_ASSIGN_OR_RETURN(ServerEndpoint endpoint, ConnectToServer(start_if_needed));
  return ApiClient(endpoint);
}

std::string JobPath(const std::string& job) { return "/api/v1/jobs/" + UrlEscape(job); }

void PrintJsonOrYaml(const nlohmann::json& value, const std::string& output) {
  if (output == "yaml") std::printf("%s", render::EmitYaml(value).c_str());
  else std::printf("%s\n", value.dump(2).c_str());
}

int64_t ParseTime(const nlohmann::json& value) {
  if (!value.is_string()) return -1;
  std::tm tm{};
  int ms = 0;
  std::string s = value.get<std::string>();
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &ms) < 6) {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ProgressText(const nlohmann::json& job, bool detailed) {
  if (!job.contains("progress") || !job["progress"].is_object()) return "-";
  const nlohmann::json& p = job["progress"];
  auto num = [](const nlohmann::json& v) { return fmt::format("{:g}", v.get<double>()); };
  std::string out;
  if (p["percent"].is_number()) out = fmt::format("{:.0f}%", p["percent"].get<double>());
  else if (p["step"].is_number()) out = "step " + num(p["step"]);
  if (detailed && p["step"].is_number() && p["total_steps"].is_number()) {
    out += fmt::format(" (step {} of {})", num(p["step"]), num(p["total_steps"]));
  }
  if (detailed && p["steps_per_second"].is_number()) {
    out += fmt::format(", {:.3g} steps/s", p["steps_per_second"].get<double>());
  }
  if (p["eta_seconds"].is_number() && job.value("state", "") == "Running") {
    out += (detailed ? ", ETA " : " ETA ") +
           FormatDurationShort(Duration(static_cast<int64_t>(p["eta_seconds"].get<double>() * 1000)));
  }
  if (p.value("stalled", false)) out += detailed ? " (stalled: no metrics line lately)" : " stalled";
  if (detailed && p.contains("metrics") && !p["metrics"].empty()) {
    std::string metrics;
    for (auto it = p["metrics"].begin(); it != p["metrics"].end(); ++it) {
      metrics += fmt::format("{}{}={:g}", metrics.empty() ? "" : " ", it.key(), it.value().get<double>());
    }
    out += (out.empty() ? "" : "; ") + metrics;
  }
  return out.empty() ? "-" : out;
}

}  // namespace tau::cli
