// tau-bench-kueue-perf: TauGrid's admission engine on a Kueue scheduler
// performance generator config (bench/kueue-perf/run runs Kueue's own runner
// on the same file; docs/performance.md compares the two).
//
//   tau-bench-kueue-perf --config FILE [--eviction-delay-ms MS] [--json]
//
// Prints the figures of Kueue's runner summary for a virtual-time replay
// (replay.h), the engine's wall time and the process's CPU time. With
// --json the last line of stdout is one JSON object.

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "generator_config.h"
#include "replay.h"

namespace {

double ProcessCpuSeconds() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  bool json = false;
  tau::bench::ReplayOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a == "--eviction-delay-ms" && i + 1 < argc) {
      options.eviction_delay_ms = std::atoll(argv[++i]);
    } else {
      config_path.clear();
      break;
    }
  }
  if (config_path.empty()) {
    std::fprintf(stderr, "usage: tau-bench-kueue-perf --config FILE [--eviction-delay-ms MS] [--json]\n");
    return 2;
  }
  auto config = tau::bench::LoadGeneratorConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "tau-bench-kueue-perf: %s\n", config.error().message().c_str());
    return 2;
  }
  auto wall_start = std::chrono::steady_clock::now();
  auto r = tau::bench::Replay(*config, options);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (!r.ok()) {
    std::fprintf(stderr, "tau-bench-kueue-perf: %s\n", r.error().message().c_str());
    return 1;
  }
  double cpu = ProcessCpuSeconds();
  std::printf("TauGrid admission engine, virtual-time replay: %s\n", config_path.c_str());
  std::printf("  %lld workloads finished at %.1f s of virtual time; %lld admissions, %lld evictions, %lld Schedule() calls\n",
              static_cast<long long>(r->finished), static_cast<double>(r->makespan_ms) / 1000,
              static_cast<long long>(r->admissions), static_cast<long long>(r->evictions),
              static_cast<long long>(r->schedule_calls));
  std::printf("  engine: %.3f s of CPU in its calls (%.0f admissions per CPU second); whole replay %.3f s of CPU, "
              "%.3f s of wall time; evictions end %lld ms after they are decided\n",
              r->engine_cpu_seconds,
              r->engine_cpu_seconds > 0 ? static_cast<double>(r->admissions) / r->engine_cpu_seconds : 0.0, cpu, wall,
              static_cast<long long>(options.eviction_delay_ms));
  for (const auto& [name, c] : r->workload_classes) {
    std::printf("  %-8s %6lld workloads: mean time to admission %lld ms, to finish %lld ms, %lld evictions\n",
                name.c_str(), static_cast<long long>(c.count), static_cast<long long>(c.AverageTimeToAdmissionMs()),
                static_cast<long long>(c.AverageTimeToFinishMs()), static_cast<long long>(c.evictions));
  }
  for (const auto& [name, q] : r->cluster_queue_classes) {
    std::printf("  ClusterQueue class %s: mean CPU usage %.1f %% of nominal quota\n", name.c_str(),
                q.AverageUsagePercent());
  }
  if (json) {
    std::printf("{\"workloads\": %lld, \"finished\": %lld, \"makespan_ms\": %lld, \"admissions\": %lld, "
                "\"evictions\": %lld, \"engine_cpu_seconds\": %.6f, \"replay_seconds\": %.6f, \"cpu_seconds\": %.6f, "
                "\"classes\": {",
                static_cast<long long>(r->workloads), static_cast<long long>(r->finished),
                static_cast<long long>(r->makespan_ms), static_cast<long long>(r->admissions),
                static_cast<long long>(r->evictions), r->engine_cpu_seconds, wall, cpu);
    bool first = true;
    for (const auto& [name, c] : r->workload_classes) {
      std::printf("%s\"%s\": {\"count\": %lld, \"average_time_to_admission_ms\": %lld, "
                  "\"average_time_to_finish_ms\": %lld, \"evictions\": %lld}",
                  first ? "" : ", ", name.c_str(), static_cast<long long>(c.count),
                  static_cast<long long>(c.AverageTimeToAdmissionMs()), static_cast<long long>(c.AverageTimeToFinishMs()),
                  static_cast<long long>(c.evictions));
      first = false;
    }
    std::printf("}}\n");
  }
  return 0;
}
