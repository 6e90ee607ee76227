// tau-bench-admission-scale: how the admission engine scales with the
// length of one queue (docs/performance.md, "Admission engine at scale").
//   (1) cold: N pending workloads in one ClusterQueue (BestEffortFIFO, two
//       flavors, quota for about 8,900 of them); one Schedule() pass
//       decides every one (admitted, or pending with a reason).
//   (2) events: with those N pending, one event at a time — a submit, or
//       the finish (Remove) of an admitted workload — followed by the
//       Schedule() pass that reacts to it; p50 and p99 of event + pass.
//   (3) throughput: N pending workloads over Q ClusterQueues in C cohorts
//       with borrowing and two flavors (flavor assignment inside the timed
//       pass), classical order and fair sharing; decisions per second.
// Every figure is the median of --repeat runs.
//
//   tau-bench-admission-scale [--json] [--pending N] [--events E]
//                             [--queues Q] [--cohorts C] [--repeat R]
//                             [--scenario all|one-queue|throughput]
//                             [--order both|classical|fair]
// (--scenario runs only (1)+(2) or only (3), and --order only one of (3)'s
// two passes, e.g. under callgrind.)
// With --json the last line of stdout is one JSON object.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "sched/admission_engine.h"

namespace {

using namespace tau;
using namespace tau::sched;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Two flavors ("a" first, then "b"), CPU and GPU quota on each.
ResourceGroup TwoFlavors(int64_t cpus, int64_t gpus) {
  FlavorQuotas a{"a",
                 {{"cpu", Quantity::FromUnits(cpus), std::nullopt, std::nullopt},
                  {"nvidia.com/gpu", Quantity::FromUnits(gpus), std::nullopt, std::nullopt}}};
  FlavorQuotas b = a;
  b.name = "b";
  return {{"cpu", "nvidia.com/gpu"}, {a, b}};
}

Workload MakeWorkload(std::mt19937& rng, int64_t i, int queues) {
  Workload w;
  w.id = "w" + std::to_string(i);
  w.namespace_ = "ns-" + std::to_string(i % queues);
  w.local_queue = "lq";
  w.seq = i;
  w.priority = static_cast<int64_t>(rng() % 3);
  w.per_pod = {{"cpu", int64_t{1000} * (1 + static_cast<int64_t>(rng() % 8))}};
  if (rng() % 2) w.per_pod["nvidia.com/gpu"] = 1000 * (1 + static_cast<int64_t>(rng() % 2));
  return w;
}

KueueConfig Config(int queues, int cohorts, int64_t cpus, int64_t gpus, bool fair_sharing) {
  KueueConfig config;
  config.fair_sharing.enable = fair_sharing;
  config.resource_flavors = {{"a", {}, {}, {}}, {"b", {}, {}, {}}};
  for (int c = 0; c < cohorts; ++c) config.cohorts.push_back({"cohort-" + std::to_string(c), "", {}, std::nullopt});
  for (int q = 0; q < queues; ++q) {
    ClusterQueue cq;
    cq.name = "cq-" + std::to_string(q);
    if (cohorts > 0) cq.cohort_name = "cohort-" + std::to_string(q % cohorts);
    cq.namespace_selector = LabelSelector{};
    cq.flavor_fungibility.when_can_borrow = "TryNextFlavor";
    cq.resource_groups = {TwoFlavors(cpus, gpus)};
    if (fair_sharing) cq.fair_sharing_weight = Quantity::FromUnits(1 + q % 3);
    config.cluster_queues.push_back(cq);
    config.local_queues.push_back({"ns-" + std::to_string(q), "lq", cq.name, "None"});
  }
  return config;
}

// Quota per flavor of the one long queue: room for about 8,900 of
// the generated workloads, so that the cold pass admits many (each admission
// takes a workload out of the middle of the pass) and most wait.
constexpr int64_t kOneQueueCpus = 20000;
constexpr int64_t kOneQueueGpus = 5000;

struct OneQueue {
  double cold_seconds = 0;
  size_t admitted = 0;
  double event_p50_ms = 0, event_p99_ms = 0;
};

OneQueue RunOneQueue(int pending, int events) {
  OneQueue r;
  AdmissionEngine engine;
  engine.Configure(Config(1, 0, kOneQueueCpus, kOneQueueGpus, false));
  std::mt19937 rng(7);
  int64_t next = 0;
  for (; next < pending; ++next) (void)engine.Submit(MakeWorkload(rng, next, 1));
  auto start = std::chrono::steady_clock::now();
  std::vector<Admission> first = engine.Schedule();
  r.cold_seconds = Seconds(start);
  r.admitted = first.size();
  std::vector<std::string> running;
  for (const Admission& a : first) running.push_back(a.workload_id);
  std::vector<double> ms;
  for (int e = 0; e < events; ++e) {
    auto t = std::chrono::steady_clock::now();
    if (e % 2 == 0 || running.empty()) {
      (void)engine.Submit(MakeWorkload(rng, next++, 1));
    } else {
      const size_t k = rng() % running.size();
      engine.Remove(running[k]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
    for (const Admission& a : engine.Schedule()) running.push_back(a.workload_id);
    ms.push_back(Seconds(t) * 1000);
  }
  r.event_p50_ms = Percentile(ms, 0.5);
  r.event_p99_ms = Percentile(ms, 0.99);
  return r;
}

double RunThroughput(int pending, int queues, int cohorts, bool fair_sharing) {
  AdmissionEngine engine;
  engine.Configure(Config(queues, cohorts, 32, 4, fair_sharing));
  std::mt19937 rng(11);
  for (int64_t i = 0; i < pending; ++i) (void)engine.Submit(MakeWorkload(rng, i, queues));
  auto start = std::chrono::steady_clock::now();
  (void)engine.Schedule();
  return pending / Seconds(start);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int pending = 100000, events = 200, queues = 1000, cohorts = 10, repeat = 3;
  std::string scenario = "all", order = "both";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() { return i + 1 < argc ? std::atoi(argv[++i]) : -1; };
    if (a == "--json") json = true;
    else if (a == "--pending") pending = value();
    else if (a == "--events") events = value();
    else if (a == "--queues") queues = value();
    else if (a == "--cohorts") cohorts = value();
    else if (a == "--repeat") repeat = value();
    else if (a == "--scenario" && i + 1 < argc) scenario = argv[++i];
    else if (a == "--order" && i + 1 < argc) order = argv[++i];
    else {
      std::fprintf(stderr, "usage: tau-bench-admission-scale [--json] [--pending N] [--events E] [--queues Q] "
                           "[--cohorts C] [--repeat R] [--scenario all|one-queue|throughput] [--order both|classical|fair]\n");
      return 2;
    }
  }
  if (scenario != "all" && scenario != "one-queue" && scenario != "throughput") {
    std::fprintf(stderr, "tau-bench-admission-scale: --scenario is all, one-queue or throughput, not \"%s\"\n",
                 scenario.c_str());
    return 2;
  }
  if (order != "both" && order != "classical" && order != "fair") {
    std::fprintf(stderr, "tau-bench-admission-scale: --order is both, classical or fair, not \"%s\"\n", order.c_str());
    return 2;
  }
  const bool one_queue = scenario != "throughput", throughput = scenario != "one-queue";
  if (pending < 1 || events < 0 || queues < 1 || cohorts < 0 || repeat < 1) {
    std::fprintf(stderr, "tau-bench-admission-scale: --pending, --queues and --repeat must be at least 1, "
                         "--events and --cohorts at least 0\n");
    return 2;
  }
  std::vector<double> cold, p50, p99, classical, fair;
  size_t admitted = 0;
  for (int k = 0; k < repeat; ++k) {
    if (one_queue) {
      OneQueue o = RunOneQueue(pending, events);
      cold.push_back(o.cold_seconds);
      p50.push_back(o.event_p50_ms);
      p99.push_back(o.event_p99_ms);
      admitted = o.admitted;
    }
    if (throughput) {
      if (order != "fair") classical.push_back(RunThroughput(pending, queues, cohorts, false));
      if (order != "classical") fair.push_back(RunThroughput(pending, queues, cohorts, true));
    }
  }
  std::printf("one queue, %d pending: cold pass %.3f s (%zu admitted); %d events (submit or finish) + pass: "
              "p50 %.3f ms, p99 %.3f ms\n",
              pending, Median(cold), admitted, events, Median(p50), Median(p99));
  std::printf("%d pending over %d ClusterQueues in %d cohorts, two flavors: classical %.0f decisions/s, "
              "fair sharing %.0f decisions/s (medians of %d)\n",
              pending, queues, cohorts, Median(classical), Median(fair), repeat);
  if (json) {
    std::printf("{\"pending\": %d, \"cold_pass_seconds\": %.4f, \"event_p50_ms\": %.4f, \"event_p99_ms\": %.4f, "
                "\"classical_decisions_per_sec\": %.0f, \"fair_sharing_decisions_per_sec\": %.0f, \"repeat\": %d}\n",
                pending, Median(cold), Median(p50), Median(p99), Median(classical), Median(fair), repeat);
  }
  return 0;
}
