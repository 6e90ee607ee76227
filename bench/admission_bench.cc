// tau-bench-admission: speed of the admission engine (docs/performance.md).
//   (a) synthetic: N pending workloads across Q ClusterQueues in C cohorts
//       with borrowing; one Schedule() pass decides every one of them
//       (admitted, or pending with a reason); decisions per second.
//   (b) replay of the Alibaba openb trace in virtual time: one ClusterQueue
//       with a flavor per GPU model (fractional GPUs as milli-GPU quota),
//       arrivals and completions from the trace; wall time of the replay and
//       the GPU allocation ratio over time.
//
//   tau-bench-admission [--json] [--workloads N] [--queues Q] [--cohorts C]
//                       [--trace-dir DIR] [--fair-sharing]
// With --json the last line of stdout is one JSON object.

#include <malloc.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sched/admission_engine.h"

namespace {

using namespace tau;
using namespace tau::sched;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

size_t HeapInUse() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks;
}

struct SyntheticResult {
  double decisions_per_sec = 0;
  double seconds = 0;
  size_t admitted = 0;
  double bytes_per_pending = 0;
};

SyntheticResult Synthetic(int workloads, int queues, int cohorts, bool fair_sharing) {
  KueueConfig config;
  config.fair_sharing.enable = fair_sharing;
  config.resource_flavors = {{"default", {}, {}, {}}};
  for (int c = 0; c < cohorts; ++c) config.cohorts.push_back({"cohort-" + std::to_string(c), "", {}, std::nullopt});
  for (int q = 0; q < queues; ++q) {
    ClusterQueue cq;
    cq.name = "cq-" + std::to_string(q);
    cq.cohort_name = "cohort-" + std::to_string(q % cohorts);
    cq.namespace_selector = LabelSelector{};
    cq.resource_groups = {{{"cpu", "nvidia.com/gpu"},
                           {{"default",
                             {{"cpu", Quantity::FromUnits(64), std::nullopt, std::nullopt},
                              {"nvidia.com/gpu", Quantity::FromUnits(8), std::nullopt, std::nullopt}}}}}};
    if (fair_sharing) cq.fair_sharing_weight = Quantity::FromUnits(1 + q % 3);
    config.cluster_queues.push_back(cq);
    config.local_queues.push_back({"ns-" + std::to_string(q), "lq", cq.name, "None"});
  }
  AdmissionEngine engine;
  engine.Configure(config);
  std::mt19937 rng(7);
  size_t heap_before = HeapInUse();
  for (int i = 0; i < workloads; ++i) {
    Workload w;
    w.id = "w" + std::to_string(i);
    w.namespace_ = "ns-" + std::to_string(i % queues);
    w.local_queue = "lq";
    w.seq = i;
    w.priority = static_cast<int64_t>(rng() % 3);
    w.per_pod = {{"cpu", int64_t{1000} * (1 + static_cast<int64_t>(rng() % 8))}};
    if (rng() % 2) w.per_pod["nvidia.com/gpu"] = 1000 * (1 + static_cast<int64_t>(rng() % 2));
    (void)engine.Submit(w);
  }
  SyntheticResult r;
  r.bytes_per_pending = static_cast<double>(HeapInUse() - heap_before) / workloads;
  auto start = std::chrono::steady_clock::now();
  r.admitted = engine.Schedule().size();
  r.seconds = Seconds(start);
  r.decisions_per_sec = workloads / r.seconds;
  return r;
}

struct TraceResult {
  double seconds = 0;
  size_t pods = 0;
  size_t admitted = 0;
  double mean_gpu_allocation = 0;
  double peak_gpu_allocation = 0;
  std::vector<std::pair<int64_t, double>> allocation;  // (virtual time, ratio), sampled
};

std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

TraceResult Trace(const std::string& dir) {
  TraceResult r;
  auto nodes = ReadCsv(dir + "/openb_node_list_all_node.csv");
  auto pods = ReadCsv(dir + "/openb_pod_list_default.csv");
  // Flavors: one per GPU model (milli-GPUs), plus "cpu-only"; CPU and memory
  // are counted per flavor too, since a pod lands on one node kind.
  std::map<std::string, std::array<int64_t, 3>> capacity;  // model -> cpu milli, memory MiB, milli-GPU
  for (const auto& n : nodes) {
    if (n.size() < 4) continue;
    std::string model = n.size() > 4 && !n[4].empty() ? n[4] : "cpu-only";
    auto& c = capacity[model];
    c[0] += std::atoll(n[1].c_str());
    c[1] += std::atoll(n[2].c_str());
    c[2] += std::atoll(n[3].c_str()) * 1000;
  }
  KueueConfig config;
  ClusterQueue cq;
  cq.name = "cluster";
  cq.namespace_selector = LabelSelector{};
  cq.flavor_fungibility.when_can_borrow = "TryNextFlavor";
  ResourceGroup group{{"cpu", "memory", "nvidia.com/gpu"}, {}};
  int64_t total_gpu = 0;
  for (const auto& [model, c] : capacity) {
    config.resource_flavors.push_back({model, {{"gpu-model", model}}, {}, {}});
    // Quota in the units the workloads use: milli-CPU, MiB, milli-GPU.
    group.flavors.push_back({model,
                             {{"cpu", Quantity::FromMilli(c[0]), std::nullopt, std::nullopt},
                              {"memory", Quantity::FromUnits(c[1]), std::nullopt, std::nullopt},
                              {"nvidia.com/gpu", Quantity::FromUnits(c[2]), std::nullopt, std::nullopt}}});
    total_gpu += c[2];
  }
  // GPU models first, CPU-only last, so CPU pods do not take GPU nodes' CPUs first.
  std::stable_partition(group.flavors.begin(), group.flavors.end(),
                        [](const FlavorQuotas& f) { return f.name != "cpu-only"; });
  cq.resource_groups = {group};
  config.cluster_queues = {cq};
  config.local_queues = {{"default", "q", "cluster", "None"}};

  struct Pod {
    std::string id;
    int64_t arrival, runtime;
    Workload w;
  };
  std::vector<Pod> trace;
  for (size_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    if (p.size() < 11) continue;
    Pod pod;
    pod.id = p[0];
    pod.arrival = std::atoll(p[8].c_str());
    int64_t deletion = std::atoll(p[9].c_str()), scheduled = std::atoll(p[10].c_str());
    pod.runtime = std::max<int64_t>(1, deletion - scheduled);
    pod.w.id = p[0];
    pod.w.namespace_ = "default";
    pod.w.local_queue = "q";
    pod.w.seq = static_cast<int64_t>(i);
    pod.w.per_pod = {{"cpu", std::atoll(p[1].c_str())}, {"memory", std::atoll(p[2].c_str()) * 1000}};
    int64_t gpus = std::atoll(p[3].c_str()) * std::atoll(p[4].c_str());  // milli-GPU
    if (gpus > 0) pod.w.per_pod["nvidia.com/gpu"] = gpus * 1000;
    trace.push_back(std::move(pod));
  }
  std::sort(trace.begin(), trace.end(), [](const Pod& a, const Pod& b) { return a.arrival < b.arrival; });
  r.pods = trace.size();

  AdmissionEngine engine;
  engine.Configure(config);
  std::map<std::string, int64_t> runtime_of;
  std::map<std::string, int64_t> gpu_of;
  using Ending = std::pair<int64_t, std::string>;
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> endings;
  int64_t gpu_used = 0;
  double ratio_time_sum = 0;
  int64_t last_time = trace.empty() ? 0 : trace.front().arrival;
  size_t next = 0;
  auto start = std::chrono::steady_clock::now();
  while (next < trace.size() || !endings.empty()) {
    int64_t now = next < trace.size() ? trace[next].arrival : endings.top().first;
    if (!endings.empty()) now = std::min(now, endings.top().first);
    double ratio = total_gpu ? static_cast<double>(gpu_used) / total_gpu : 0;
    ratio_time_sum += ratio * static_cast<double>(now - last_time);
    last_time = now;
    while (!endings.empty() && endings.top().first <= now) {
      engine.Remove(endings.top().second);
      gpu_used -= gpu_of[endings.top().second];
      endings.pop();
    }
    while (next < trace.size() && trace[next].arrival <= now) {
      runtime_of[trace[next].id] = trace[next].runtime;
      auto it = trace[next].w.per_pod.find("nvidia.com/gpu");
      gpu_of[trace[next].id] = it == trace[next].w.per_pod.end() ? 0 : it->second / 1000;
      (void)engine.Submit(trace[next].w);
      ++next;
    }
    for (const Admission& a : engine.Schedule()) {
      ++r.admitted;
      gpu_used += gpu_of[a.workload_id];
      endings.push({now + runtime_of[a.workload_id], a.workload_id});
    }
    double after = total_gpu ? static_cast<double>(gpu_used) / total_gpu : 0;
    r.peak_gpu_allocation = std::max(r.peak_gpu_allocation, after);
    if (r.allocation.empty() || now - r.allocation.back().first >= 3600) r.allocation.emplace_back(now, after);
  }
  r.seconds = Seconds(start);
  int64_t span = last_time - (trace.empty() ? 0 : trace.front().arrival);
  r.mean_gpu_allocation = span > 0 ? ratio_time_sum / static_cast<double>(span) : 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  bool fair_sharing = false;
  int workloads = 100000, queues = 1000, cohorts = 10;
  std::string trace_dir = "../shared/data/alibaba-openb";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--json") json = true;
    else if (a == "--workloads") workloads = std::atoi(value().c_str());
    else if (a == "--queues") queues = std::atoi(value().c_str());
    else if (a == "--cohorts") cohorts = std::atoi(value().c_str());
    else if (a == "--trace-dir") trace_dir = value();
    else if (a == "--fair-sharing") fair_sharing = true;
    else {
      std::fprintf(stderr, "usage: tau-bench-admission [--json] [--workloads N] [--queues Q] [--cohorts C] [--trace-dir DIR] [--fair-sharing]\n");
      return 2;
    }
  }
  SyntheticResult s = Synthetic(workloads, queues, cohorts, fair_sharing);
  std::printf("synthetic%s: %d pending workloads, %d ClusterQueues, %d cohorts: %zu admitted in one pass of %.3f s "
              "(%.0f decisions/s), %.0f bytes per pending workload\n",
              fair_sharing ? " (fair sharing, weights 1-3)" : "", workloads, queues, cohorts, s.admitted, s.seconds,
              s.decisions_per_sec, s.bytes_per_pending);
  TraceResult t;
  bool have_trace = std::ifstream(trace_dir + "/openb_pod_list_default.csv").good();
  if (have_trace) {
    t = Trace(trace_dir);
    std::printf("trace: %zu pods replayed in %.3f s of wall time, %zu admitted; GPU allocation mean %.1f%%, peak %.1f%%\n",
                t.pods, t.seconds, t.admitted, 100 * t.mean_gpu_allocation, 100 * t.peak_gpu_allocation);
    if (!json) {
      std::printf("GPU allocation over virtual time (hourly samples, first 24):\n");
      for (size_t i = 0; i < std::min<size_t>(24, t.allocation.size()); ++i) {
        std::printf("  t=%8lld s  %5.1f%%\n", static_cast<long long>(t.allocation[i].first), 100 * t.allocation[i].second);
      }
    }
  } else {
    std::printf("trace: %s not found; skipped\n", trace_dir.c_str());
  }
  if (json) {
    std::printf("{\"decisions_per_sec\": %.0f, \"bytes_per_pending_workload\": %.0f, \"synthetic_seconds\": %.3f, "
                "\"trace_seconds\": %s, \"trace_pods\": %zu, \"trace_mean_gpu_allocation\": %.4f, "
                "\"trace_peak_gpu_allocation\": %.4f}\n",
                s.decisions_per_sec, s.bytes_per_pending, s.seconds, have_trace ? std::to_string(t.seconds).c_str() : "null",
                t.pods, t.mean_gpu_allocation, t.peak_gpu_allocation);
  }
  return 0;
}
