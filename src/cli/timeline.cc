#include "cli/timeline.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace tau::cli {

using nlohmann::json;

std::vector<json> FoldCheckpointEvents(const std::vector<json>& events) {
  // Each job's attempt so far, and for each (job, attempt) its Checkpoint
  // events' indexes.
  std::map<std::string, int> attempt;
  std::map<std::pair<std::string, int>, std::vector<size_t>> groups;
  std::vector<std::pair<std::string, int>> group_of(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string job = e.value("job_id", "");
    const std::string type = e.value("type", "");
    if (type == "Admitted") ++attempt[job];
    if (type == "Checkpoint") {
      group_of[i] = {job, attempt[job]};
      groups[group_of[i]].push_back(i);
    }
  }
  std::vector<json> out;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (e.value("type", "") != "Checkpoint") {
      out.push_back(e);
      continue;
    }
    const std::vector<size_t>& group = groups[group_of[i]];
    if (group.size() < 2) {
      out.push_back(e);
      continue;
    }
    if (i != group.back()) continue;  // shown in the group's row
    // A Checkpoint event's message starts with the checkpoint's name.
    const std::string message = e.value("message", "");
    const std::string newest = message.substr(0, message.find(' '));
    json row = e;
    row["message"] = fmt::format("{} checkpoints, newest {} (tau events --all lists each)", group.size(), newest);
    row["folded"] = group.size();
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace tau::cli
