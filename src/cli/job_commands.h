#pragma once

#include <string>
#include <vector>

namespace tau::cli {

// Commands that talk to taugridd. Each returns the process exit code.

struct RunOptions {
  std::string file;
  std::vector<std::string> overrides;
  bool follow = false;
  std::string queue, priority, name;
  std::string output;  // "" or "json"
  std::vector<std::string> env_files;  // --env-file: secret variables
  std::string command_line;  // recorded with the job
};
int RunRun(const RunOptions& options);

struct ListOptions {
  std::string output = "table";  // table | wide | json | yaml
  std::string state, workspace, project;
  std::vector<std::string> tags;  // KEY=VALUE, all must match
  // table/wide: the page size (default 100); json/yaml: at most this many
  // jobs in all (0: every job, page by page).
  int limit = 0;
  std::string continue_token;  // start after the page that gave it
  bool watch = false;
};
int RunList(const ListOptions& options);

int RunStatus(const std::string& job, const std::string& output);

struct LogsOptions {
  std::string job;
  bool follow = false;
  std::string rank;  // "" (0), a number, or "all" (prefixed by rank)
  std::string attempt;  // "" (last), a number, "last" or "all"
  int tail = -1;
};
int RunLogs(const LogsOptions& options);

int RunCancel(const std::vector<std::string>& jobs);
// tau events [JOB] [-f] [-o json|yaml] [--all]: a table, or (-o) the events
// as one list; followed with -o, one JSON line or YAML document per event.
// In the table, routine Checkpoint events fold into one row per attempt
// unless `all` (cli/timeline.h); -o and a followed stream show each.
int RunEvents(const std::string& job, bool follow, const std::string& output, bool all);
int RunRemove(const std::vector<std::string>& jobs);
int RunPrune(const std::string& older_than, int64_t keep);

// `listen`: ADDR:PORT for taugridd --listen ("" : as the last run);
// `daemon_args` are passed on to taugridd (--backend kubernetes ...).
int RunServerStart(bool foreground, const std::string& listen, std::vector<std::string> daemon_args = {});
int RunServerStop();
int RunServerStatus();
// Prints TAU_HOME/token, the API token clients elsewhere use as TAU_TOKEN.
int RunServerToken();

// Follows a job's logs (every attempt) until it ends and returns the exit
// code `tau run -f` reports: the job's exit code, 128+N when a signal N
// killed it, 130 when cancelled, 125 (reason on stderr) when it ended for a
// platform reason without an exit code.
int FollowJob(const std::string& id);

}  // namespace tau::cli
