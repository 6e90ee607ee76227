#pragma once

// The test cluster of kueue_ops_k8s_test (scripts/k8s-env), shared by its
// files: one cluster for every test of the program.

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "k8s/test_cluster.h"
#include "support/subprocess.h"

namespace tau::server::kubernetes {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Where the cluster is started (main() sets it from argv[1]).
inline std::string g_work_dir;

class Cluster : public testing::K8sTestCluster {
 public:
  Cluster() : K8sTestCluster(g_work_dir) { instance_ = this; }
  static Cluster* Get() { return instance_; }

 private:
  static inline Cluster* instance_ = nullptr;
};

#define REQUIRE_CLUSTER()                            \
  do {                                               \
    if (!Cluster::Get()->skip_reason().empty()) {    \
      GTEST_SKIP() << Cluster::Get()->skip_reason(); \
    }                                                \
    if (!Cluster::Get()->Usable()) {                 \
      return;                                        \
    }                                                \
  } while (0)

// Polls `ready` every 200 ms for up to `limit`.
template <typename F>
bool WaitFor(F ready, seconds limit = seconds(60)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(200));
  }
  return ready();
}

inline void EnsureNamespace(const std::string& ns) {
  auto created = Cluster::Get()->client().Create({"", "v1", "namespaces", "", "", ""},
                                                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (!created.ok()) {
    ASSERT_EQ(created.error().code(), StatusCode::kAlreadyExists) << created.error().ToString();
  }
}

// Names unique to this process ("kq-cq" -> "kq4242-cq"), so that a run
// against a cluster an earlier run used (TAU_K8S_ENV_DIR) starts afresh.
inline std::string N(const std::string& name) {
  static const std::string prefix = "kq" + std::to_string(::getpid()) + "-";
  std::string out = name;
  const std::string marker = "kq-";
  for (size_t at = out.find(marker); at != std::string::npos; at = out.find(marker, at + prefix.size())) {
    out.replace(at, marker.size(), prefix);
  }
  return out;
}

// Appends CRI log lines ("TIMESTAMP stdout F text") to the file kwok serves
// as every container's log.
inline void AppendLog(const std::vector<std::pair<std::string, std::string>>& lines) {
  std::string text;
  for (const auto& [ts, line] : lines) {
    text += ts + " stdout F " + line + "\n";
  }
  std::ofstream out(Cluster::Get()->dir() + "/pod.log", std::ios::app | std::ios::binary);
  out << text;
  out.flush();
}

// A timestamp `n` seconds after a base unique to this run, with nanoseconds.
inline std::string Stamp(int n, int nanos) {
  static const int64_t base = std::chrono::duration_cast<seconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count() + 3600;
  std::time_t t = static_cast<std::time_t>(base + n);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%09dZ", nanos);
  return std::string(buf) + frac;
}

}  // namespace tau::server::kubernetes
