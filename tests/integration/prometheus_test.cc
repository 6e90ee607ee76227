// Prometheus can scrape taugridd: --listen sets the address and a restart
// without it keeps it, the metrics token opens /metrics and nothing else,
// and the scrape configuration in docs/observability.md works as written
// against a real Prometheus.

#include <gmock/gmock.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A port no one listens on now.
int FreePort() {
  CommandResult r = RunCommand({"/usr/bin/env", "python3", "-c",
                                "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"});
  return r.exit_code == 0 ? std::stoi(r.out) : 0;
}

// The HTTP status of GET `url` with `token` as a bearer token.
std::string StatusOf(const std::string& url, const std::string& token) {
  return RunCommand({"/usr/bin/env", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                     "Authorization: Bearer " + token, url})
      .out;
}

class PrometheusTest : public DaemonTest {
 protected:
  nlohmann::json ServerJson() {
    nlohmann::json j = nlohmann::json::parse(ReadText(home_ / "server.json"), nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }
  std::string MetricsToken() {
    std::string token = ReadText(home_ / "metrics-token");
    while (!token.empty() && token.back() == '\n') token.pop_back();
    return token;
  }
};

TEST_F(PrometheusTest, TheListenAddressIsKeptAcrossRestartsAndListenChangesIt) {
  const int first = ServerJson().value("port", 0);
  ASSERT_GT(first, 0);
  ASSERT_EQ(Tau({"server", "stop"}).exit_code, 0);
  ASSERT_EQ(Tau({"server", "start"}).exit_code, 0);
  EXPECT_EQ(ServerJson().value("port", 0), first) << "a restart keeps the port a scrape config names";

  const int chosen = FreePort();
  ASSERT_GT(chosen, 0);
  const std::string listen = "127.0.0.1:" + std::to_string(chosen);
  CommandResult busy = Tau({"server", "start", "--listen", listen});
  EXPECT_EQ(busy.exit_code, 1) << "a running taugridd listens elsewhere";
  EXPECT_THAT(busy.err, HasSubstr("stop it first (tau server stop) to listen on " + listen));
  ASSERT_EQ(Tau({"server", "stop"}).exit_code, 0);
  CommandResult started = Tau({"server", "start", "--listen", listen});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(ServerJson().value("port", 0), chosen);
  EXPECT_EQ(ServerJson().value("listen", ""), listen);
  ASSERT_EQ(Tau({"server", "stop"}).exit_code, 0);
  ASSERT_EQ(Tau({"server", "start"}).exit_code, 0);
  EXPECT_EQ(ServerJson().value("listen", ""), listen) << "--listen is kept for later starts";
  EXPECT_EQ(Tau({"list"}).exit_code, 0) << "tau finds it there";
  CommandResult bare = Tau({"server", "start", "--listen", "38123"});
  EXPECT_EQ(bare.exit_code, 2) << "ADDR:PORT, not a bare port";
  EXPECT_THAT(bare.err, HasSubstr("--listen 38123: expected ADDR:PORT"));
}

TEST_F(PrometheusTest, ASecondDaemonCannotListenOnThePortThisOneHolds) {
  const std::string listen = "127.0.0.1:" + std::to_string(ServerJson().value("port", 0));
  std::map<std::string, std::string> other = Env();
  other["TAU_HOME"] = (work_ / "other-home").string();
  CommandResult second = RunCommand({BinPath("tau"), "server", "start", "--listen", listen}, work_.string(), other);
  EXPECT_NE(second.exit_code, 0) << second.out << second.err;
  EXPECT_THAT(second.err + ReadText(work_ / "other-home" / "server.log"), HasSubstr("Address already in use"));
  // Every request still reaches this daemon, with this daemon's token.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(StatusOf(ApiUrl() + "/api/v1/jobs", ApiToken()), "200");
  RunCommand({BinPath("tau"), "server", "stop"}, work_.string(), other);
}

TEST_F(PrometheusTest, TheMetricsTokenOpensMetricsAndNothingElse) {
  const std::string token = MetricsToken();
  ASSERT_GE(token.size(), 32u);
  EXPECT_EQ((fs::status(home_ / "metrics-token").permissions() & fs::perms::all), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(StatusOf(ApiUrl() + "/metrics", token), "200");
  EXPECT_EQ(StatusOf(ApiUrl() + "/api/v1/jobs", token), "401");
  EXPECT_EQ(StatusOf(ApiUrl() + "/api/v1/info", token), "401");
  EXPECT_EQ(StatusOf(ApiUrl() + "/metrics", "wrong"), "401");
  EXPECT_EQ(StatusOf(ApiUrl() + "/metrics", ApiToken()), "200") << "the API token still scrapes";
}

TEST_F(PrometheusTest, TheDocumentedScrapeConfigWorksWithARealPrometheus) {
  if (RunCommand({"/usr/bin/env", "sh", "-c", "command -v prometheus && command -v curl"}).exit_code != 0) {
    GTEST_SKIP() << "prometheus or curl is not installed (Debian packages prometheus and curl; scripts/install-deps "
                    "installs them), so the documented scrape config was not tried";
  }
  // The scrape config exactly as docs/observability.md shows it, with its
  // three placeholders filled: this machine's address, the token file and
  // a 1 s interval so the test need not wait 15 s.
  const std::string doc = ReadText(SourcePath("docs/observability.md"));
  std::smatch block;
  ASSERT_TRUE(std::regex_search(doc, block, std::regex("```yaml\n(scrape_configs:[^`]*)```"))) << "no scrape config in the docs";
  std::string config = block[1];
  const int port = ServerJson().value("port", 0);
  for (const auto& [placeholder, value] :
       std::vector<std::pair<std::string, std::string>>{{"gpu-box-1:38123", "127.0.0.1:" + std::to_string(port)},
                                                        {"/etc/prometheus/taugrid-metrics-token", (home_ / "metrics-token").string()},
                                                        {"scrape_interval: 15s", "scrape_interval: 1s"}}) {
    const size_t at = config.find(placeholder);
    ASSERT_NE(at, std::string::npos) << "the documented config lost " << placeholder << ":\n" << config;
    config.replace(at, placeholder.size(), value);
  }
  WriteFile("prometheus.yml", config);
  Submit(WriteSpec("hello.yaml", "schema_version: 1\nname: hello\nrun:\n  entrypoint: 'echo hi'\ncompute:\n  cpus: 100m\n"));

  const int web = FreePort();
  ASSERT_GT(web, 0);
  const std::string prom = "http://127.0.0.1:" + std::to_string(web);
  CommandResult started = RunCommand(
      {"/bin/sh", "-c",
       "prometheus --config.file='" + (work_ / "prometheus.yml").string() + "' --storage.tsdb.path='" +
           (work_ / "tsdb").string() + "' --web.listen-address=127.0.0.1:" + std::to_string(web) + " > '" +
           (work_ / "prometheus.log").string() + "' 2>&1 < /dev/null & echo $!"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  const pid_t pid = static_cast<pid_t>(std::stol(started.out));
  struct Stop {
    pid_t pid;
    ~Stop() { ::kill(pid, SIGTERM); }
  } stop{pid};

  // A PromQL query returns the job's submission from the scraped target.
  std::string answer;
  const bool scraped = WaitUntil([&] {
    answer = RunCommand({"/usr/bin/env", "curl", "-s", prom + "/api/v1/query", "--data-urlencode",
                         "query=taugrid_job_submissions_total{job=\"taugrid\",queue=\"default\"}"})
                 .out;
    nlohmann::json j = nlohmann::json::parse(answer, nullptr, false);
    return !j.is_discarded() && j.value("status", "") == "success" && !j["data"]["result"].empty();
  });
  ASSERT_TRUE(scraped) << answer << "\n" << ReadText(work_ / "prometheus.log");
  nlohmann::json result = nlohmann::json::parse(answer)["data"]["result"][0];
  EXPECT_EQ(result["metric"]["job"], "taugrid");
  EXPECT_EQ(result["metric"]["workspace"], "default");
  EXPECT_EQ(result["value"][1], "1");
  // And the target is up, as Prometheus sees it.
  std::string up = RunCommand({"/usr/bin/env", "curl", "-s", prom + "/api/v1/query", "--data-urlencode",
                               "query=up{job=\"taugrid\"}"})
                       .out;
  EXPECT_THAT(up, HasSubstr("\"value\":["));
  EXPECT_THAT(up, HasSubstr(",\"1\"]"));
}

}  // namespace
}  // namespace tau::testing
