// Randomized check of the admission engine's invariants: over thousands of
// generated configurations and event sequences (submit, finish, preempt),
// no ClusterQueue or cohort tree ever holds more quota than its limits
// allow, the quota tree's usage is exactly what the admitted workloads
// hold, and no pass evicts a workload it admitted. Deterministic: fixed
// seeds.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "sched/admission_engine.h"
#include "sched/random_config.h"

namespace tau::sched {
namespace {

using testing::Generated;
using testing::RandomConfig;

const ResourceQuota* QuotaOf(const ClusterQueue& cq, const FlavorResource& fr) {
  for (const auto& g : cq.resource_groups) {
    for (const auto& f : g.flavors) {
      if (f.name != fr.flavor) continue;
      for (const auto& r : f.resources) {
        if (r.name == fr.resource) return &r;
      }
    }
  }
  return nullptr;
}

// Checks every invariant; returns "" or what is broken.
std::string Broken(const AdmissionEngine& e, const std::map<std::string, Admission>& admitted) {
  const QuotaTree& tree = e.quota();
  std::set<QuotaTree::NodeId> roots;
  for (const ClusterQueue& cq : e.config().cluster_queues) {
    auto node = e.ClusterQueueNode(cq.name);
    if (!node) return "no node for " + cq.name;
    QuotaTree::NodeId root = *node;
    while (auto parent = tree.Parent(root)) root = *parent;
    roots.insert(root);
    for (const char* flavor : {"f1", "f2"}) {
      FlavorResource fr{flavor, "cpu"};
      int64_t held = 0;
      for (const auto& [id, a] : admitted) {
        if (a.cluster_queue != cq.name) continue;
        auto it = a.usage.find(fr);
        if (it != a.usage.end()) held += it->second;
      }
      if (tree.Usage(*node, fr) != held) {
        return cq.name + " usage " + std::to_string(tree.Usage(*node, fr)) + " but admitted workloads hold " +
               std::to_string(held);
      }
      const ResourceQuota* q = QuotaOf(cq, fr);
      const int64_t own = tree.SubtreeQuota(*node, fr);
      if (cq.cohort_name.empty() && held > own) return cq.name + " exceeds its quota without a cohort";
      if (q && q->borrowing_limit && held > own + q->borrowing_limit->milli()) {
        return cq.name + " borrows past its borrowingLimit";
      }
    }
  }
  for (QuotaTree::NodeId root : roots) {
    for (const char* flavor : {"f1", "f2"}) {
      FlavorResource fr{flavor, "cpu"};
      if (tree.Usage(root, fr) > tree.SubtreeQuota(root, fr)) {
        return tree.Name(root) + " uses more " + flavor + " than its whole tree has";
      }
    }
  }
  return "";
}

TEST(AdmissionInvariantsTest, NoQuotaIsExceededOverRandomEventSequences) {
  int admissions = 0, evictions = 0;
  for (uint32_t seed = 1; seed <= 1500; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Generated g = RandomConfig(rng);
    AdmissionEngine e;
    e.Configure(g.config);
    std::map<std::string, Admission> admitted;
    std::set<std::string> stopping;  // evicted, not stopped yet
    int next_id = 0;
    for (int step = 0; step < 40; ++step) {
      e.SetNow(int64_t{step} * 100'000);  // admission fair sharing samples every 5 minutes
      if (admitted.empty() || pick(0, 2) > 0) {
        Workload w;
        w.id = "w" + std::to_string(++next_id);
        w.namespace_ = "default";
        w.local_queue = g.local_queues[static_cast<size_t>(pick(0, static_cast<int>(g.local_queues.size()) - 1))];
        if (pick(0, 3) == 0) w.local_queue += "-b";  // a second team on the same ClusterQueue
        w.priority = pick(0, 2);
        w.seq = next_id;
        w.per_pod = {{"cpu", int64_t{500} * pick(1, 6)}};
        (void)e.Submit(w);  // refusals (never fits) are fine here
      } else {
        auto it = admitted.begin();
        std::advance(it, pick(0, static_cast<int>(admitted.size()) - 1));
        e.Remove(it->first);  // it finished
        stopping.erase(it->first);
        admitted.erase(it);
      }
      const std::map<std::string, Admission> before = admitted;
      std::set<std::string> this_pass;
      for (const Admission& a : e.Schedule()) {
        ASSERT_FALSE(admitted.count(a.workload_id)) << "seed " << seed << ": admitted twice";
        admitted[a.workload_id] = a;
        this_pass.insert(a.workload_id);
        ++admissions;
      }
      for (const Eviction& v : e.TakeEvictions()) {
        // Victims are workloads admitted before the pass: a choice that
        // names one the pass admitted waits for the next pass. Never twice.
        ASSERT_FALSE(this_pass.count(v.victim_id))
            << "seed " << seed << ", step " << step << ": " << v.victim_id << " admitted and evicted in one pass";
        ASSERT_TRUE(before.count(v.victim_id)) << "seed " << seed << ": evicting a workload not admitted";
        ASSERT_TRUE(stopping.insert(v.victim_id).second) << "seed " << seed << ": " << v.victim_id << " evicted twice";
        ++evictions;
      }
      // Victims stop now or a few steps later (they keep their quota
      // meanwhile, and preemptors rely on them pass after pass).
      for (auto it = stopping.begin(); it != stopping.end();) {
        if (seed % 2 == 0 || pick(0, 2) == 0) {
          e.Remove(*it);
          admitted.erase(*it);
          it = stopping.erase(it);
        } else {
          ++it;
        }
      }
      std::string broken = Broken(e, admitted);
      ASSERT_EQ(broken, "") << "seed " << seed << ", step " << step;
    }
  }
  // The generated sequences exercise admission and preemption, not only refusals.
  RecordProperty("admissions", admissions);
  RecordProperty("evictions", evictions);
  EXPECT_GT(admissions, 20000);
  EXPECT_GT(evictions, 1000);
}

}  // namespace
}  // namespace tau::sched
