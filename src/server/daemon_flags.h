#pragma once

// taugridd's command line (docs/control-plane.md): the flags, the
// environment variables that stand for some of them, and their checks.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/log.h"
#include "common/tau_home.h"
#include "gpu/gpu_health.h"

namespace tau::server {

struct DaemonFlags {
  std::filesystem::path home = TauHome::DefaultRoot();
  // --listen ADDR:PORT (or --port N, for 127.0.0.1:N); "" : the address of
  // the last run, else 127.0.0.1 on a free port.
  std::string listen;
  log::Format log_format = log::Format::kLogfmt;
  log::Level log_level = log::Level::kInfo;
  int64_t max_interruptions = 10;
  Duration checkpoint_scan_interval = std::chrono::seconds(30);
  Duration gpu_poll_interval = std::chrono::seconds(15);
  // Temperature lines for GPUs whose NVML reports no slowdown/shutdown
  // thresholds of their own.
  int64_t gpu_temp_warn_c = gpu::HealthThresholds{}.temperature_warn_c;
  int64_t gpu_temp_fatal_c = gpu::HealthThresholds{}.temperature_fatal_c;
  std::string xid_classes;  // "" : TAU_HOME/xid-classes.yaml when it exists
  bool allow_foreign_gpu_processes = false;
  Duration progress_stall_after = std::chrono::minutes(10);
  std::string ray_program;  // "" : the first `ray` on PATH
  std::optional<int64_t> history_keep = 10000;  // history.keep; nullopt: all
  int max_streams = 0;  // followed streams at once; 0: from the thread and file limits
  std::string backend = "local";  // local | kubernetes
  std::string kubeconfig;         // "": in-cluster configuration
  std::string kube_context;       // "": the kubeconfig's current-context
  std::string checkpoint_pvc;     // the checkpoints' PersistentVolumeClaim on Kubernetes (every workspace)
  std::map<std::string, std::string> checkpoint_pvcs;  // --checkpoint-pvc WORKSPACE=NAME: one workspace's
  std::vector<std::pair<std::string, std::string>> pod_annotations;  // --pod-annotation KEY=VALUE
};

// Parses argv (and TAU_* variables a flag overrides). Prints the usage and
// exits 2 on a bad flag; prints the version and exits 0 on --version.
DaemonFlags ParseDaemonFlags(int argc, char** argv);

// "ADDR:PORT" ("[V6ADDR]:PORT" for IPv6) into its parts; PORT 0 to 65535.
bool ParseListen(const std::string& v, std::string* host, int* port);

}  // namespace tau::server
