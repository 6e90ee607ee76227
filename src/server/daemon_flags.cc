#include "server/daemon_flags.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/version.h"
#include "common/names.h"

namespace tau::server {
namespace {

using cli::kGitCommit;
using cli::kVersion;


// A count of followed streams from 1.
bool ParseMaxStreams(const std::string& v, int* out) {
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 1 || n > 1000000) return false;
  *out = static_cast<int>(n);
  return true;
}

// history.keep: a count of ended jobs, or "all".
bool ParseHistoryKeep(const std::string& v, std::optional<int64_t>* out) {
  if (v == "all") {
    out->reset();
    return true;
  }
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0) return false;
  *out = n;
  return true;
}

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr, "taugridd: %s\nusage: taugridd [--home DIR] [--listen ADDR:PORT | --port N] [--log-format logfmt|json] "
                       "[--log-level debug|info|warn|error]\n"
                       "                [--max-interruptions N] [--checkpoint-scan-interval DURATION]\n"
                       "                [--gpu-poll-interval DURATION] [--xid-classes FILE] [--allow-foreign-gpu-processes]\n"
                       "                [--progress-stall-after DURATION] [--ray PROGRAM] [--history-keep N|all]\n"
                       "                [--max-streams N] [--gpu-temp-warn CELSIUS] [--gpu-temp-fatal CELSIUS]\n"
                       "                [--backend local|kubernetes] [--kubeconfig PATH]\n"
                       "                [--context NAME] [--checkpoint-pvc [WORKSPACE=]NAME]... [--pod-annotation KEY=VALUE]...\n"
                       "       taugridd --version\n",
               why.c_str());
  std::exit(2);
}

}  // namespace

DaemonFlags ParseDaemonFlags(int argc, char** argv) {
  DaemonFlags f;
  // The environment may set these (tests, and `tau server start`, which
  // passes no flags); a flag wins.
  if (const char* stall = std::getenv("TAU_PROGRESS_STALL_AFTER")) {
    auto d = ParseDuration(stall);
    if (!d.ok()) Usage("TAU_PROGRESS_STALL_AFTER is a duration (e.g. 10m)");
    f.progress_stall_after = *d;
  }
  if (const char* ray = std::getenv("TAU_RAY")) f.ray_program = ray;
  if (const char* keep = std::getenv("TAU_HISTORY_KEEP")) {
    if (!ParseHistoryKeep(keep, &f.history_keep)) Usage("TAU_HISTORY_KEEP is a count of ended jobs from 0, or all");
  }
  if (const char* streams = std::getenv("TAU_MAX_STREAMS")) {
    if (!ParseMaxStreams(streams, &f.max_streams)) Usage("TAU_MAX_STREAMS is a count of streams from 1");
  }
  if (const char* scan = std::getenv("TAU_CHECKPOINT_SCAN_INTERVAL")) {
    auto d = ParseDuration(scan);
    if (!d.ok() || d->count() < 1000) Usage("TAU_CHECKPOINT_SCAN_INTERVAL is a duration of at least 1s (e.g. 30s)");
    f.checkpoint_scan_interval = *d;
  }
  if (const char* poll = std::getenv("TAU_GPU_POLL_INTERVAL")) {
    auto d = ParseDuration(poll);
    if (!d.ok() || d->count() < 100) Usage("TAU_GPU_POLL_INTERVAL is a duration of at least 100ms (e.g. 15s)");
    f.gpu_poll_interval = *d;
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage("missing value for " + a);
      return argv[++i];
    };
    if (a == "--home") f.home = value();
    else if (a == "--port") {
      std::string v = value();
      if (!ParseListen("127.0.0.1:" + v, nullptr, nullptr)) Usage("--port is a port number from 0 to 65535");
      f.listen = "127.0.0.1:" + v;
    } else if (a == "--listen") {
      std::string v = value();
      if (!ParseListen(v, nullptr, nullptr)) {
        Usage("--listen is ADDR:PORT, e.g. 127.0.0.1:38123 (this machine only) or 0.0.0.0:38123 (every interface); "
              "PORT 0 takes a free port");
      }
      f.listen = v;
    }
    else if (a == "--log-format") {
      std::string v = value();
      if (v == "json") f.log_format = log::Format::kJson;
      else if (v == "logfmt") f.log_format = log::Format::kLogfmt;
      else Usage("--log-format is logfmt or json");
    } else if (a == "--log-level") {
      if (!log::ParseLevel(value(), &f.log_level)) Usage("--log-level is debug, info, warn or error");
    } else if (a == "--max-interruptions") {
      std::string v = value();
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0 || n > 1000000) Usage("--max-interruptions is a count from 0");
      f.max_interruptions = n;
    } else if (a == "--checkpoint-scan-interval") {
      auto d = ParseDuration(value());
      if (!d.ok() || d->count() < 1000) Usage("--checkpoint-scan-interval is a duration of at least 1s (e.g. 30s)");
      f.checkpoint_scan_interval = *d;
    } else if (a == "--gpu-poll-interval") {
      auto d = ParseDuration(value());
      if (!d.ok() || d->count() < 100) Usage("--gpu-poll-interval is a duration of at least 100ms (e.g. 15s)");
      f.gpu_poll_interval = *d;
    } else if (a == "--gpu-temp-warn" || a == "--gpu-temp-fatal") {
      std::string v = value();
      char* end = nullptr;
      long long c = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || c < 1 || c > 200) Usage(a + " is a temperature in °C from 1 to 200");
      (a == "--gpu-temp-warn" ? f.gpu_temp_warn_c : f.gpu_temp_fatal_c) = c;
    } else if (a == "--progress-stall-after") {
      auto d = ParseDuration(value());
      if (!d.ok()) Usage("--progress-stall-after is a duration (e.g. 10m; 0s: never)");
      f.progress_stall_after = *d;
    } else if (a == "--xid-classes") {
      f.xid_classes = value();
    } else if (a == "--history-keep") {
      if (!ParseHistoryKeep(value(), &f.history_keep)) Usage("--history-keep is a count of ended jobs from 0, or all");
    } else if (a == "--max-streams") {
      if (!ParseMaxStreams(value(), &f.max_streams)) Usage("--max-streams is a count of streams from 1");
    } else if (a == "--backend") {
      f.backend = value();
      if (f.backend != "local" && f.backend != "kubernetes") Usage("--backend is local or kubernetes");
    } else if (a == "--kubeconfig") {
      f.kubeconfig = value();
    } else if (a == "--context") {
      f.kube_context = value();
    } else if (a == "--checkpoint-pvc") {
      // NAME for every workspace, WORKSPACE=NAME for one.
      std::string v = value();
      const size_t eq = v.find('=');
      const std::string claim = eq == std::string::npos ? v : v.substr(eq + 1);
      if (!CheckDns1123Subdomain(claim).ok()) {
        Usage(fmt::format("--checkpoint-pvc {}: \"{}\" is not the name of a PersistentVolumeClaim (a DNS-1123 "
                          "subdomain); give NAME, or WORKSPACE=NAME for one workspace",
                          v, claim));
      }
      if (eq == std::string::npos) {
        f.checkpoint_pvc = claim;
      } else if (eq == 0 || !CheckDns1123Label(v.substr(0, eq)).ok()) {
        Usage(fmt::format("--checkpoint-pvc {}: \"{}\" is not a workspace (a namespace name)", v, v.substr(0, eq)));
      } else {
        f.checkpoint_pvcs[v.substr(0, eq)] = claim;
      }
    } else if (a == "--pod-annotation") {
      std::string v = value();
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) Usage("--pod-annotation is KEY=VALUE");
      f.pod_annotations.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--ray") {
      f.ray_program = value();
    } else if (a == "--allow-foreign-gpu-processes") {
      f.allow_foreign_gpu_processes = true;
    } else if (a == "--help" || a == "-h") {
      Usage("the embedded TauGrid control plane");
    } else if (a == "--version") {
      std::printf("taugridd %s (%s)\n", kVersion, kGitCommit);
      std::exit(0);
    } else {
      Usage("unknown option " + a);
    }
  }
  if (f.gpu_temp_fatal_c <= f.gpu_temp_warn_c) {
    Usage(fmt::format("--gpu-temp-fatal ({} °C) must be above --gpu-temp-warn ({} °C)", f.gpu_temp_fatal_c,
                      f.gpu_temp_warn_c));
  }
  if (f.backend != "kubernetes" && (!f.kubeconfig.empty() || !f.kube_context.empty() || !f.checkpoint_pvc.empty() ||
                                    !f.checkpoint_pvcs.empty() || !f.pod_annotations.empty())) {
    Usage("--kubeconfig, --context, --checkpoint-pvc and --pod-annotation go with --backend kubernetes");
  }
  return f;
}

// "ADDR:PORT" ("[V6ADDR]:PORT" for IPv6) into its parts; PORT 0 to 65535.
bool ParseListen(const std::string& v, std::string* host, int* port) {
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= v.size()) return false;
  std::string h = v.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string::npos) {
    return false;  // an IPv6 address needs its brackets
  }
  const std::string p = v.substr(colon + 1);
  char* end = nullptr;
  long n = std::strtol(p.c_str(), &end, 10);
  if (*end != '\0' || n < 0 || n > 65535 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  if (host) *host = h;
  if (port) *port = static_cast<int>(n);
  return true;
}


}  // namespace tau::server
