#include "cli/timeline.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tau::cli {
namespace {

using nlohmann::json;

json Event(const std::string& job, const std::string& type, const std::string& message = "") {
  return {{"job_id", job}, {"type", type}, {"reason", ""}, {"message", message}, {"at", "t"}};
}

std::vector<std::string> Rows(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const json& e : events) out.push_back(e.value("type", "") + ": " + e.value("message", ""));
  return out;
}

TEST(TimelineTest, RoutineCheckpointsFoldIntoOneRowPerAttempt) {
  std::vector<json> events = {
      Event("j1", "Submitted"),
      Event("j1", "Admitted", "attempt 1"),
      Event("j1", "Started"),
      Event("j1", "Checkpoint", "step-0001.json (27 B, sha256:aa)"),
      Event("j1", "Checkpoint", "step-0002.json (27 B, sha256:bb)"),
      Event("j1", "CheckpointsPruned", "deleted step-0001.json"),
      Event("j1", "Checkpoint", "step-0003.json (27 B, sha256:cc)"),
      Event("j1", "Retrying", "exit code 3"),
      Event("j1", "Admitted", "attempt 2"),
      Event("j1", "Checkpoint", "step-0004.json (27 B, sha256:dd)"),
      Event("j1", "Succeeded"),
  };
  EXPECT_EQ(Rows(FoldCheckpointEvents(events)),
            (std::vector<std::string>{
                "Submitted: ", "Admitted: attempt 1", "Started: ", "CheckpointsPruned: deleted step-0001.json",
                "Checkpoint: 3 checkpoints, newest step-0003.json (tau events --all lists each)", "Retrying: exit code 3",
                "Admitted: attempt 2", "Checkpoint: step-0004.json (27 B, sha256:dd)", "Succeeded: "}));
}

TEST(TimelineTest, JobsAreFoldedApart) {
  std::vector<json> events = {
      Event("a", "Admitted"), Event("b", "Admitted"), Event("a", "Checkpoint", "x-1 (1 B, d)"),
      Event("b", "Checkpoint", "y-1 (1 B, d)"), Event("a", "Checkpoint", "x-2 (1 B, d)"),
  };
  EXPECT_EQ(Rows(FoldCheckpointEvents(events)),
            (std::vector<std::string>{"Admitted: ", "Admitted: ", "Checkpoint: y-1 (1 B, d)",
                                      "Checkpoint: 2 checkpoints, newest x-2 (tau events --all lists each)"}));
}

}  // namespace
}  // namespace tau::cli
