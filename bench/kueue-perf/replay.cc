#include "replay.h"

#include <algorithm>
#include <ctime>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "sched/admission_engine.h"

namespace tau::bench {
namespace {

using sched::AdmissionEngine;

// One workload of the replay and where its figures go.
struct Item {
  sched::Workload workload;
  std::string workload_class;
  std::string queue_class;
  int64_t created_ms = 0;
  int64_t runtime_ms = 0;
  int64_t cpu_milli = 0;
  int64_t admitted_ms = -1;  // of its current admission; -1 while pending
  int64_t generation = 0;    // bumped on eviction: stale completions are ignored
};

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// CPU time spent in the engine, summed over calls (CPU rather than wall
// time, so that other load on the machine does not count).
class EngineTimer {
 public:
  template <typename F>
  auto operator()(F&& f) {
    struct Add {
      double* total;
      double start;
      ~Add() { *total += ThreadCpuSeconds() - start; }
    } add{&seconds, ThreadCpuSeconds()};
    return f();
  }
  double seconds = 0;
};

}  // namespace

double ClusterQueueClassStats::AverageUsagePercent() const {
  int64_t span = last_event_ms - first_event_ms;
  if (span <= 0 || nominal_quota_milli <= 0) return 0;
  return 100.0 * cpu_used_milli_ms / static_cast<double>(span) / static_cast<double>(nominal_quota_milli);
}

sched::KueueConfig BuildKueueConfig(const GeneratorConfig& config) {
  sched::KueueConfig out;
  out.resource_flavors = {{"rf", {}, {}, {}}};
  for (const auto& cohort_set : config.cohorts) {
    for (int64_t c = 0; c < cohort_set.count; ++c) {
      std::string cohort = cohort_set.class_name + "-" + std::to_string(c);
      out.cohorts.push_back({cohort, "", {}, std::nullopt});
      for (size_t qs = 0; qs < cohort_set.queues_sets.size(); ++qs) {
        const QueuesSet& set = cohort_set.queues_sets[qs];
        for (int64_t q = 0; q < set.count; ++q) {
          sched::ClusterQueue cq;
          cq.name = set.class_name + "-" + std::to_string(qs) + "-" + std::to_string(q) + "-" + cohort;
          cq.cohort_name = cohort;
          cq.namespace_selector = sched::LabelSelector{};
          cq.resource_groups = {{{"cpu"}, {{"rf", {{"cpu", set.nominal_quota, set.borrowing_limit, std::nullopt}}}}}};
          cq.preemption.reclaim_within_cohort = set.reclaim_within_cohort;
          cq.preemption.within_cluster_queue = set.within_cluster_queue;
          out.cluster_queues.push_back(cq);
          out.local_queues.push_back({cq.name, cq.name, cq.name, "None"});
        }
      }
    }
  }
  return out;
}

Result<ReplayResult> Replay(const GeneratorConfig& config, const ReplayOptions& options) {
  if (options.eviction_delay_ms < 0) return InvalidArgumentError("eviction delay must not be negative");
  ReplayResult result;
  sched::KueueConfig kueue = BuildKueueConfig(config);

  // The workloads, in the order BuildKueueConfig lays out the queues.
  std::vector<Item> items;
  size_t cq_index = 0;
  for (const auto& cohort_set : config.cohorts) {
    for (int64_t c = 0; c < cohort_set.count; ++c) {
      for (const auto& set : cohort_set.queues_sets) {
        for (int64_t q = 0; q < set.count; ++q) {
          const std::string& cq = kueue.cluster_queues[cq_index++].name;
          auto& cq_stats = result.cluster_queue_classes[set.class_name];
          cq_stats.nominal_quota_milli += set.nominal_quota.milli();
          for (size_t ws = 0; ws < set.workloads_sets.size(); ++ws) {
            const WorkloadsSet& wset = set.workloads_sets[ws];
            int64_t at = 0;
            for (int64_t round = 0; round < wset.count; ++round) {
              for (size_t t = 0; t < wset.workloads.size(); ++t) {
                const WorkloadTemplate& tmpl = wset.workloads[t];
                at += wset.creation_interval_ms;
                Item item;
                item.workload.id = cq + "/" + tmpl.class_name + "-" + std::to_string(ws) + "-" +
                                   std::to_string(round) + "-" + std::to_string(t);
                item.workload.namespace_ = cq;
                item.workload.local_queue = cq;
                item.workload.priority = tmpl.priority;
                item.workload.per_pod = {{"cpu", tmpl.request.milli()}};
                item.workload_class = tmpl.class_name;
                item.queue_class = set.class_name;
                item.created_ms = at;
                item.runtime_ms = tmpl.runtime_ms;
                item.cpu_milli = tmpl.request.milli();
                items.push_back(std::move(item));
              }
            }
          }
        }
      }
    }
  }
  // Creation order decides queue order among equal priorities.
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.created_ms < b.created_ms; });
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].workload.seq = static_cast<int64_t>(i);
    index[items[i].workload.id] = i;
  }
  result.workloads = static_cast<int64_t>(items.size());

  EngineTimer timed;
  AdmissionEngine engine;
  timed([&] { engine.Configure(kueue); });

  // Timed events, earliest first: a finish, or the end of an eviction
  // (the victim releases its quota and is pending again). Stale finishes of
  // an evicted admission are ignored by their generation.
  enum Kind { kRelease = 0, kFinish = 1 };
  using Event = std::tuple<int64_t, int, size_t, int64_t>;  // time, kind, item, generation
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::map<std::string, int64_t> cpu_in_use;  // by ClusterQueue class
  int64_t last_ms = 0;
  auto advance = [&](int64_t to) {
    for (auto& [cls, used] : cpu_in_use) {
      result.cluster_queue_classes[cls].cpu_used_milli_ms += static_cast<double>(used) * static_cast<double>(to - last_ms);
    }
    last_ms = to;
  };

  size_t next = 0;
  int64_t visits_of_now = 0;
  int64_t previous_now = -1;
  while (next < items.size() || !events.empty()) {
    int64_t now = next < items.size() ? items[next].created_ms : std::get<0>(events.top());
    if (!events.empty()) now = std::min(now, std::get<0>(events.top()));
    visits_of_now = now == previous_now ? visits_of_now + 1 : 0;
    previous_now = now;
    if (visits_of_now == 10000) {
      return InternalError("decisions at " + std::to_string(now) +
                           " ms did not settle after 10000 rounds (preemptions that undo each other; "
                           "a longer eviction delay lets time pass between them)");
    }
    advance(now);
    engine.SetNow(now);
    while (!events.empty() && std::get<0>(events.top()) <= now) {
      auto [at, kind, i, generation] = events.top();
      events.pop();
      Item& item = items[i];
      if (generation != item.generation) continue;
      timed([&] { engine.Remove(item.workload.id); });
      cpu_in_use[item.queue_class] -= item.cpu_milli;
      if (kind == kRelease) {
        Status s = timed([&] { return engine.Submit(item.workload); });
        if (!s.ok()) return s.WithContext("re-queueing evicted workload " + item.workload.id);
        continue;
      }
      result.workload_classes[item.workload_class].total_time_to_finish_ms += now - item.created_ms;
      ++result.finished;
      result.makespan_ms = std::max(result.makespan_ms, now);
    }
    while (next < items.size() && items[next].created_ms <= now) {
      Item& item = items[next++];
      ++result.workload_classes[item.workload_class].count;
      Status s = timed([&] { return engine.Submit(item.workload); });
      if (!s.ok()) return s.WithContext("workload " + item.workload.id);
    }
    ++result.schedule_calls;
    std::vector<sched::Admission> admitted = timed([&] { return engine.Schedule(); });
    for (const auto& a : admitted) {
      size_t i = index.at(a.workload_id);
      Item& item = items[i];
      item.admitted_ms = now;
      cpu_in_use[item.queue_class] += item.cpu_milli;
      events.emplace(now + item.runtime_ms, kFinish, i, item.generation);
      ++result.admissions;
    }
    // A victim keeps its quota until its eviction ends; its preemptor waits.
    std::vector<sched::Eviction> evicted = timed([&] { return engine.TakeEvictions(); });
    for (const auto& e : evicted) {
      size_t i = index.at(e.victim_id);
      Item& item = items[i];
      ++item.generation;
      events.emplace(now + options.eviction_delay_ms, kRelease, i, item.generation);
      ++result.workload_classes[item.workload_class].evictions;
      ++result.evictions;
    }
  }
  // Time to admission counts to the last admission, as Kueue's recorder does.
  for (const Item& item : items) {
    if (item.admitted_ms >= 0) {
      result.workload_classes[item.workload_class].total_time_to_admission_ms += item.admitted_ms - item.created_ms;
    }
  }
  for (auto& [cls, stats] : result.cluster_queue_classes) {
    stats.first_event_ms = 0;
    stats.last_event_ms = result.makespan_ms;
  }
  result.engine_cpu_seconds = timed.seconds;
  return result;
}

}  // namespace tau::bench
