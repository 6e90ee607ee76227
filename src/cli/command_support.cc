#include "cli/command_support.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "cli/connect.h"
#include "cli/exit_codes.h"
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

}  // namespace tau::cli
