#include "sched/taints.h"

#include <gtest/gtest.h>

namespace tau::sched {
namespace {

struct Case {
  const char* name;
  Toleration toleration;
  Taint taint;
  bool tolerates;
};

// Kubernetes' toleration matching (core/v1 Toleration.ToleratesTaint).
TEST(TaintsTest, TolerationsMatchTaintsAsKubernetesDoes) {
  const Case cases[] = {
      {"equal key and value", {"gpu", "Equal", "true", "NoSchedule"}, {"gpu", "true", "NoSchedule"}, true},
      {"equal, other value", {"gpu", "Equal", "false", "NoSchedule"}, {"gpu", "true", "NoSchedule"}, false},
      {"equal, value missing", {"gpu", "Equal", "", "NoSchedule"}, {"gpu", "true", "NoSchedule"}, false},
      {"equal, both values empty", {"gpu", "Equal", "", "NoSchedule"}, {"gpu", "", "NoSchedule"}, true},
      {"empty operator reads as Equal", {"gpu", "", "true", ""}, {"gpu", "true", "NoExecute"}, true},
      {"empty operator, other value", {"gpu", "", "x", ""}, {"gpu", "true", "NoExecute"}, false},
      {"exists ignores the value", {"gpu", "Exists", "", "NoSchedule"}, {"gpu", "anything", "NoSchedule"}, true},
      {"other key", {"gpu", "Exists", "", ""}, {"tpu", "", "NoSchedule"}, false},
      {"empty key with Exists tolerates every taint", {"", "Exists", "", ""}, {"anything", "v", "NoExecute"}, true},
      {"empty key with Exists keeps its effect", {"", "Exists", "", "NoSchedule"}, {"anything", "v", "NoExecute"}, false},
      {"empty effect matches NoSchedule", {"gpu", "Exists", "", ""}, {"gpu", "", "NoSchedule"}, true},
      {"empty effect matches NoExecute", {"gpu", "Exists", "", ""}, {"gpu", "", "NoExecute"}, true},
      {"empty effect matches PreferNoSchedule", {"gpu", "Exists", "", ""}, {"gpu", "", "PreferNoSchedule"}, true},
      {"NoSchedule does not tolerate NoExecute", {"gpu", "Exists", "", "NoSchedule"}, {"gpu", "", "NoExecute"}, false},
      {"NoExecute does not tolerate NoSchedule", {"gpu", "Exists", "", "NoExecute"}, {"gpu", "", "NoSchedule"}, false},
      {"unknown operator tolerates nothing", {"gpu", "Gt", "1", ""}, {"gpu", "2", "NoSchedule"}, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ToleratesTaint(c.toleration, c.taint), c.tolerates) << c.name;
  }
}

TEST(TaintsTest, OnlyNoScheduleAndNoExecuteTaintsKeepPodsOff) {
  const std::vector<Taint> taints = {{"soft", "", "PreferNoSchedule"}, {"hard", "1", "NoSchedule"}, {"evict", "", "NoExecute"}};
  const Taint* first = FindUntoleratedTaint(taints, {});
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(Describe(*first), "hard=1:NoSchedule") << "PreferNoSchedule never blocks";
  const Taint* second = FindUntoleratedTaint(taints, {{"hard", "Equal", "1", "NoSchedule"}});
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(Describe(*second), "evict:NoExecute");
  EXPECT_EQ(FindUntoleratedTaint(taints, {{"hard", "Equal", "1", "NoSchedule"}, {"evict", "Exists", "", "NoExecute"}}),
            nullptr);
  EXPECT_EQ(FindUntoleratedTaint(taints, {{"", "Exists", "", ""}}), nullptr);
  EXPECT_EQ(FindUntoleratedTaint({{"soft", "", "PreferNoSchedule"}}, {}), nullptr);
}

}  // namespace
}  // namespace tau::sched
