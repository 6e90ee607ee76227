#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace tau::testing {

// A fresh TAU_HOME in a temp folder with its own taugridd, driven through
// the real `tau` binary.
class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Runs after the folders are chosen and before taugridd starts.
  virtual void BeforeStart() {}

  // Runs `tau ARGS...` with this test's TAU_HOME, from `cwd` (default: the
  // test's work folder).
  CommandResult Tau(std::vector<std::string> args, const std::string& cwd = "");
  // Writes a spec file in the work folder and returns its path.
  std::string WriteSpec(const std::string& name, const std::string& body);
  void WriteFile(const std::string& relative, const std::string& data);
  // `tau status ID -o json`, parsed.
  nlohmann::json Job(const std::string& id);
  // Polls `ready` every `poll`; false after `limit` (a hang guard, not a
  // timing assertion; longer for what starts Ray or PyTorch on 2 cores).
  bool WaitUntil(const std::function<bool()>& ready, std::chrono::seconds limit = std::chrono::seconds(60),
                 std::chrono::milliseconds poll = std::chrono::milliseconds(20));
  bool WaitForState(const std::string& id, const std::string& state);
  // Submits a spec and returns the job id printed by `tau run`.
  std::string Submit(const std::string& spec_path, std::vector<std::string> extra = {});
  int64_t DaemonPid();
  // The running daemon's API token and base URL ("http://127.0.0.1:PORT").
  std::string ApiToken();
  std::string ApiUrl();
  // Waits until no taugridd holds this TAU_HOME (after it was killed).
  bool WaitForDaemonGone();
  // "" when pip can download six==1.16.0 (the package runtime.pip tests
  // install), else why not: tests that need PyPI skip with it.
  std::string PyPiUnreachable();
  std::map<std::string, std::string> Env() const;

  std::filesystem::path home_;
  std::filesystem::path work_;
  // More environment for tau and the taugridd it starts (set in BeforeStart).
  std::map<std::string, std::string> extra_env_;
};

}  // namespace tau::testing
