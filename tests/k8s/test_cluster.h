#pragma once

// The cluster of a k8s-labelled test program (scripts/k8s-env): the one
// TAU_K8S_ENV_DIR names, or one it starts in WORK_DIR/cluster and stops at
// the end. One cluster serves every test of the program; derive from it to
// create the objects the tests share (Prepare).

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "support/subprocess.h"

namespace tau::testing {

class K8sTestCluster : public ::testing::Environment {
 public:
  // `work_dir`: where a cluster is started; `up_env`: more environment for
  // `scripts/k8s-env up` (K8S_ENV_POD_STAGES=general, ...).
  explicit K8sTestCluster(std::string work_dir, std::map<std::string, std::string> up_env = {})
      : work_dir_(std::move(work_dir)), up_env_(std::move(up_env)) {}

  void SetUp() override {
    if (const char* given = std::getenv("TAU_K8S_ENV_DIR"); given != nullptr && *given != '\0') {
      dir_ = given;
    } else {
      if (::geteuid() != 0) {
        skip_reason_ = "not root; scripts/k8s-env up runs Kueue in a private mount namespace (unshare -m), which needs root";
        return;
      }
      const char* script_env = std::getenv("TAU_K8S_ENV");
      script_ = (script_env != nullptr && *script_env != '\0') ? script_env : SourcePath("scripts/k8s-env");
      if (!std::filesystem::exists(script_)) {
        error_ = "no test cluster script at " + script_ + " (TAU_K8S_ENV names another)";
        return;
      }
      dir_ = (std::filesystem::path(work_dir_) / "cluster").string();
      std::filesystem::remove_all(dir_);
      std::filesystem::create_directories(dir_);
      CommandResult up = RunCommand({script_, "up", dir_}, "", up_env_);
      if (up.exit_code != 0) {
        error_ = "scripts/k8s-env up " + dir_ + " failed (exit " + std::to_string(up.exit_code) + "):\n" + up.out +
                 "\n" + up.err;
        return;
      }
      owned_ = true;
    }
    Result<kube::KubeConfig> config = kube::LoadKubeconfig(dir_ + "/kubeconfig");
    if (!config.ok()) {
      error_ = config.error().ToString();
      return;
    }
    config_ = *config;
    auto client = kube::KubeClient::Create(config_);
    if (!client.ok()) {
      error_ = client.error().ToString();
      return;
    }
    client_ = std::move(*client);
    if (Status prepared = Prepare(); !prepared.ok()) {
      error_ = prepared.ToString();
      return;
    }
    ready_ = true;
  }

  void TearDown() override {
    StopRestartedApiServer();
    client_.reset();
    if (owned_) {
      CommandResult down = RunCommand({script_, "down", dir_});
      if (down.exit_code != 0) {
        ADD_FAILURE() << "scripts/k8s-env down failed: " << down.out << down.err;
      }
    }
  }

  // Call first in every test (after skipping when skip_reason() says so).
  bool Usable() {
    if (!skip_reason_.empty()) {
      return false;
    }
    EXPECT_TRUE(ready_) << error_;
    return ready_;
  }
  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& dir() const { return dir_; }
  bool owned() const { return owned_; }
  const kube::KubeConfig& config() const { return config_; }
  kube::KubeClient& client() { return *client_; }

  // Stops the cluster's kube-apiserver (recorded in DIR/pids, or the one
  // restarted last) and starts it again with the same command line (the
  // env has no restart verb); this process owns the new one and stops it
  // before `down`.
  Status RestartApiServer() {
    pid_t pid = restarted_pid_;
    if (pid <= 0) {
      std::ifstream pids(dir_ + "/pids");
      std::string name, bin;
      long p = 0;
      while (pids >> name >> p >> bin) {
        if (name == "kube-apiserver") {
          pid = static_cast<pid_t>(p);
          break;
        }
      }
      if (pid <= 0) {
        return NotFoundError("no kube-apiserver in " + dir_ + "/pids");
      }
    }
    const std::string cmdline = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    std::vector<std::string> argv;
    std::string arg;
    for (char c : cmdline) {
      if (c == '\0') {
        argv.push_back(arg);
        arg.clear();
      } else {
        arg.push_back(c);
      }
    }
    if (argv.empty() || argv[0].find("kube-apiserver") == std::string::npos ||
        cmdline.find(dir_) == std::string::npos) {
      return FailedPreconditionError("pid " + std::to_string(pid) + " is not this cluster's kube-apiserver");
    }
    ::kill(pid, SIGTERM);
    if (pid == restarted_pid_) {
      ::waitpid(pid, nullptr, 0);
    } else {
      // Not our child: wait for /proc to drop it (or show it a zombie);
      // SIGKILL after 30 s, as scripts/k8s-env down does after 15.
      for (int i = 0; i < 900; ++i) {
        const std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
        if (stat.empty() || stat.find(") Z") != std::string::npos) {
          break;
        }
        if (i == 300) {
          ::kill(pid, SIGKILL);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    const std::string log = dir_ + "/logs/kube-apiserver.log";
    pid_t child = ::fork();
    if (child == 0) {
      ::setsid();
      int in = ::open("/dev/null", O_RDONLY);
      int out = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(out, 2);
      std::vector<char*> args;
      for (auto& a : argv) {
        args.push_back(a.data());
      }
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    if (child < 0) {
      return ErrnoError(errno, "fork");
    }
    restarted_pid_ = child;
    return Status::Ok();
  }

  void StopRestartedApiServer() {
    if (restarted_pid_ > 0) {
      ::kill(restarted_pid_, SIGTERM);
      ::waitpid(restarted_pid_, nullptr, 0);
      restarted_pid_ = -1;
    }
  }

 protected:
  // Runs once the cluster answers: the objects every test of the program
  // shares. An error makes every test fail with it.
  virtual Status Prepare() { return Status::Ok(); }

 private:
  static std::string ReadAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  std::string work_dir_;
  std::map<std::string, std::string> up_env_;
  std::string script_, dir_, error_, skip_reason_;
  bool owned_ = false, ready_ = false;
  kube::KubeConfig config_;
  std::unique_ptr<kube::KubeClient> client_;
  pid_t restarted_pid_ = -1;
};

}  // namespace tau::testing
