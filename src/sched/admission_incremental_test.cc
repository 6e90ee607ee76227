// Incremental scheduling decides exactly what deciding everything from
// scratch does: two engines get the same random configurations and events
// (submits, finishes, cancels, holds, backoffs, evictions, passes where
// nothing changed), one incremental and one with SetIncrementalForTesting
// (false); every pass must admit and evict the same workloads and give
// every workload the same reason and position (including those the
// incremental engine decided at submit, without a pass). Deterministic:
// fixed seeds.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sched/admission_engine.h"
#include "sched/random_config.h"
#include "sched/test_builders.h"

namespace tau::sched {
namespace {

std::string Describe(const std::vector<Admission>& admissions) {
  std::string out;
  for (const Admission& a : admissions) {
    out += a.workload_id + "->" + a.cluster_queue + "[";
    for (const auto& [resource, flavor] : a.flavors) out += resource + ":" + flavor + ",";
    out += "] ";
  }
  return out;
}

std::string Describe(const std::vector<Eviction>& evictions) {
  std::string out;
  for (const Eviction& e : evictions) out += e.victim_id + " by " + e.preemptor_id + " (" + e.reason + ") ";
  return out;
}

std::string Describe(const std::optional<PendingInfo>& why) {
  if (!why) {
    return "none";
  }
  return why->reason + ": " + why->message + " @" + std::to_string(why->position);
}

TEST(AdmissionIncrementalTest, DecidesAsAFullPassOverRandomEventSequences) {
  int admissions = 0, evictions = 0, quiet_passes = 0, decided_at_submit = 0;
  for (uint32_t seed = 1; seed <= 600; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    testing::Generated g = testing::RandomConfig(rng);
    AdmissionEngine inc, full;
    full.SetIncrementalForTesting(false);
    inc.Configure(g.config);
    full.Configure(g.config);
    std::set<std::string> known;
    std::vector<std::string> admitted;
    int next_id = 0;
    int64_t now = 0;
    for (int step = 0; step < 40; ++step) {
      std::optional<PendingInfo> why_at_submit;  // a submit decided without a pass
      now += pick(0, 1) ? 100'000 : 0;  // some passes at the same time
      inc.SetNow(now);
      full.SetNow(now);
      const int event = pick(0, 9);
      std::string what;
      if (event <= 3) {
        Workload w;
        w.id = "w" + std::to_string(++next_id);
        w.namespace_ = "default";
        w.local_queue = g.local_queues[static_cast<size_t>(pick(0, static_cast<int>(g.local_queues.size()) - 1))];
        if (pick(0, 3) == 0) {
          w.local_queue += "-b";
        }
        w.priority = pick(0, 2);
        w.seq = next_id;
        w.per_pod = {{"cpu", int64_t{500} * pick(1, 6)}};
        ASSERT_EQ(inc.Submit(w).ok(), full.Submit(w).ok());
        if (inc.IsKnown(w.id)) {
          known.insert(w.id);
        }
        why_at_submit = inc.Why(w.id);
        what = "submit " + w.id;
      } else if (event == 4 && !admitted.empty()) {
        const std::string id = admitted[static_cast<size_t>(pick(0, static_cast<int>(admitted.size()) - 1))];
        inc.Remove(id);
        full.Remove(id);
        std::erase(admitted, id);
        known.erase(id);
        what = "finish " + id;
      } else if (event == 5 && !known.empty()) {
        auto it = known.begin();
        std::advance(it, pick(0, static_cast<int>(known.size()) - 1));
        const std::string id = *it;
        const bool held = pick(0, 1) == 0;
        inc.SetHeld(id, held);
        full.SetHeld(id, held);
        what = "hold " + id;
      } else if (event == 6 && !known.empty()) {
        auto it = known.begin();
        std::advance(it, pick(0, static_cast<int>(known.size()) - 1));
        const int64_t until = now + pick(0, 3) * 100'000;
        inc.SetBackoff(*it, until);
        full.SetBackoff(*it, until);
        what = "backoff " + *it;
      } else if (event == 7 && !known.empty()) {
        auto it = known.begin();
        std::advance(it, pick(0, static_cast<int>(known.size()) - 1));
        const std::string id = *it;
        if (!inc.IsAdmitted(id)) {  // a pending workload cancelled
          inc.Remove(id);
          full.Remove(id);
          known.erase(id);
          what = "cancel " + id;
        }
      } else {
        ++quiet_passes;
        what = "nothing";
      }
      const std::vector<Admission> a = inc.Schedule(), b = full.Schedule();
      ASSERT_EQ(Describe(a), Describe(b)) << "seed " << seed << ", step " << step << " after " << what;
      const std::vector<Eviction> ea = inc.TakeEvictions(), eb = full.TakeEvictions();
      ASSERT_EQ(Describe(ea), Describe(eb)) << "seed " << seed << ", step " << step << " after " << what;
      for (const Admission& x : a) admitted.push_back(x.workload_id);
      admissions += static_cast<int>(a.size());
      evictions += static_cast<int>(ea.size());
      for (const std::string& id : known) {
        ASSERT_EQ(Describe(inc.Why(id)), Describe(full.Why(id)))
            << "seed " << seed << ", step " << step << " after " << what << ": " << id;
      }
      // (Its reason then stands unless the pass decides its tree again.)
      if (why_at_submit) {
        ++decided_at_submit;
      }
      // Victims stop at once: their quota comes back in the next pass.
      for (const Eviction& v : ea) {
        inc.Remove(v.victim_id);
        full.Remove(v.victim_id);
        std::erase(admitted, v.victim_id);
        known.erase(v.victim_id);
      }
    }
  }
  EXPECT_GT(admissions, 3000);
  EXPECT_GT(evictions, 100);
  EXPECT_GT(quiet_passes, 1000);
  EXPECT_GT(decided_at_submit, 300);
}

// Queues decided by shape (a BestEffortFIFO queue that never preempts,
// alone in its tree for the rest of a pass) give the decisions and reasons
// of visiting every workload: long queues of a few shapes, in random trees
// where most queues cannot preempt, with holds and backoffs in them.
// Reasons are compared after each event as well as after each pass.
TEST(AdmissionIncrementalTest, DecidingByShapeDecidesAsAFullPass) {
  int admissions = 0, by_shape = 0, compared = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    testing::Generated g = testing::RandomConfig(rng);
    for (ClusterQueue& cq : g.config.cluster_queues) {
      if (pick(0, 3) != 0) {
        cq.preemption = Preemption{};
      }
      if (pick(0, 3) != 0) {
        cq.queueing_strategy = "BestEffortFIFO";
      }
      if (pick(0, 3) != 0) {
        cq.admission_mode.clear();
      }
    }
    AdmissionEngine inc, full;
    full.SetIncrementalForTesting(false);
    inc.Configure(g.config);
    full.Configure(g.config);
    std::set<std::string> known;
    std::vector<std::string> admitted;
    int next_id = 0;
    int64_t now = 0;
    for (int step = 0; step < 30; ++step) {
      now += pick(0, 1) ? 100'000 : 0;
      inc.SetNow(now);
      full.SetNow(now);
      const int event = pick(0, 9);
      std::string what;
      std::set<std::string> submitted;
      if (event <= 3) {
        const int burst = pick(1, 12);
        for (int k = 0; k < burst; ++k) {
          Workload w;
          w.id = "w" + std::to_string(++next_id);
          w.namespace_ = "default";
          w.local_queue = g.local_queues[static_cast<size_t>(pick(0, static_cast<int>(g.local_queues.size()) - 1))];
          w.priority = pick(0, 2);
          w.seq = next_id;
          w.count = pick(1, 2);
          w.per_pod = {{"cpu", int64_t{500} * pick(1, 4)}};
          if (pick(0, 4) == 0) {
            w.node_selector["zone"] = pick(0, 1) ? "a" : "b";  // no flavor defines it: a shape of its own
          }
          ASSERT_EQ(inc.Submit(w).ok(), full.Submit(w).ok());
          if (inc.IsKnown(w.id)) {
            known.insert(w.id);
            submitted.insert(w.id);
          }
        }
        what = "submits";
      } else if (event == 4 && !admitted.empty()) {
        const std::string id = admitted[static_cast<size_t>(pick(0, static_cast<int>(admitted.size()) - 1))];
        inc.Remove(id);
        full.Remove(id);
        std::erase(admitted, id);
        known.erase(id);
        what = "finish " + id;
      } else if (event == 5 && !known.empty()) {
        auto it = known.begin();
        std::advance(it, pick(0, static_cast<int>(known.size()) - 1));
        const bool held = pick(0, 1) == 0;
        inc.SetHeld(*it, held);
        full.SetHeld(*it, held);
        what = "hold " + *it;
      } else if (event == 6 && !known.empty()) {
        auto it = known.begin();
        std::advance(it, pick(0, static_cast<int>(known.size()) - 1));
        const int64_t until = now + pick(0, 3) * 100'000;
        inc.SetBackoff(*it, until);
        full.SetBackoff(*it, until);
        what = "backoff " + *it;
      } else if (event == 7 && !known.empty()) {
        auto it = known.begin();
        std::advance(it, pick(0, static_cast<int>(known.size()) - 1));
        const std::string id = *it;
        if (!inc.IsAdmitted(id)) {
          inc.Remove(id);
          full.Remove(id);
          known.erase(id);
          what = "cancel " + id;
        }
      } else {
        what = "nothing";
      }
      // Before the pass: what the last one said (a submit's verdict at
      // submit aside, which only the incremental engine gives).
      for (const std::string& id : known) {
        if (submitted.count(id)) {
          continue;
        }
        ASSERT_EQ(Describe(inc.Why(id)), Describe(full.Why(id)))
            << "seed " << seed << ", step " << step << " before the pass, after " << what << ": " << id;
      }
      const std::vector<Admission> a = inc.Schedule(), b = full.Schedule();
      by_shape += static_cast<int>(inc.LastPassStats().by_shape);
      ASSERT_EQ(Describe(a), Describe(b)) << "seed " << seed << ", step " << step << " after " << what;
      const std::vector<Eviction> ea = inc.TakeEvictions(), eb = full.TakeEvictions();
      ASSERT_EQ(Describe(ea), Describe(eb)) << "seed " << seed << ", step " << step << " after " << what;
      for (const Admission& x : a) {
        admitted.push_back(x.workload_id);
      }
      admissions += static_cast<int>(a.size());
      for (const std::string& id : known) {
        ASSERT_EQ(Describe(inc.Why(id)), Describe(full.Why(id)))
            << "seed " << seed << ", step " << step << " after " << what << ": " << id;
        ++compared;
      }
      for (const Eviction& v : ea) {
        inc.Remove(v.victim_id);
        full.Remove(v.victim_id);
        std::erase(admitted, v.victim_id);
        known.erase(v.victim_id);
      }
    }
  }
  EXPECT_GT(admissions, 2000);
  EXPECT_GT(by_shape, 1000);
  EXPECT_GT(compared, 50000);
}

// A pass after one workload finishes in a long queue of a few shapes
// nominates a few workloads, not every one waiting: the queue is decided by
// shape. The workloads it passes over still get their reason, with the
// amounts available when the pass reached them.
TEST(AdmissionIncrementalTest, APassInALongQueueOfFewShapesNominatesAFewWorkloads) {
  KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.local_queues = {{"default", "q", "cq", "None"}};
  c.cluster_queues = {testing::MakeCpuQueue("cq", {"cpu", Quantity::FromUnits(10), std::nullopt, std::nullopt}, "")};
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(testing::MakeWorkload("first", "q", 4, 0)).ok());
  ASSERT_TRUE(e.Submit(testing::MakeWorkload("second", "q", 4, 0)).ok());
  ASSERT_EQ(e.Schedule().size(), 2u);
  // 3,000 waiting: big ones (never fit while both run), then medium, then
  // one small at the end.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(e.Submit(testing::MakeWorkload("big" + std::to_string(i), "q", 8, 0)).ok());
  }
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(e.Submit(testing::MakeWorkload("medium" + std::to_string(i), "q", 3, 0)).ok());
  }
  ASSERT_TRUE(e.Submit(testing::MakeWorkload("small", "q", 2, 0)).ok());
  std::vector<Admission> admitted = e.Schedule();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].workload_id, "small");
  EXPECT_EQ(e.LastPassStats().by_shape, 1u);
  EXPECT_LE(e.LastPassStats().nominated, 10u);
  auto why = e.Why("medium1999");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->reason, "WaitingForQuota");
  EXPECT_EQ(why->message, "3 cpu of flavor default requested, 2 available");
  EXPECT_EQ(why->position, 3000);
  // "first" finishes (4 of 10 in use): the big ones still do not fit, the
  // first medium one does, and after it no other medium one.
  e.Remove("first");
  admitted = e.Schedule();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].workload_id, "medium0");
  EXPECT_LE(e.LastPassStats().nominated, 10u);
  why = e.Why("big0");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, "8 cpu of flavor default requested, 4 available");
  why = e.Why("medium1");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, "3 cpu of flavor default requested, 1 available");
}

}  // namespace
}  // namespace tau::sched
