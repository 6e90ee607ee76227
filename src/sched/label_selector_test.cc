#include "sched/label_selector.h"

#include <gtest/gtest.h>

namespace tau::sched {
namespace {

TEST(LabelSelectorTest, EachKindOfRequirement) {
  const auto team_a = WorkspaceLabels("team-a");
  struct Case {
    const char* name;
    LabelSelector selector;
    bool matches;
  };
  const std::vector<Case> cases = {
      {"empty selects all", {}, true},
      {"matchLabels equal", {{{kWorkspaceNameLabel, "team-a"}}, {}}, true},
      {"matchLabels other value", {{{kWorkspaceNameLabel, "team-b"}}, {}}, false},
      {"matchLabels missing key", {{{"tier", "gold"}}, {}}, false},
      {"In listed", {{}, {{kWorkspaceNameLabel, "In", {"team-b", "team-a"}}}}, true},
      {"In not listed", {{}, {{kWorkspaceNameLabel, "In", {"team-b"}}}}, false},
      {"NotIn listed", {{}, {{kWorkspaceNameLabel, "NotIn", {"team-a"}}}}, false},
      {"NotIn missing key", {{}, {{"tier", "NotIn", {"gold"}}}}, true},
      {"Exists", {{}, {{kWorkspaceNameLabel, "Exists", {}}}}, true},
      {"DoesNotExist", {{}, {{kWorkspaceNameLabel, "DoesNotExist", {}}}}, false},
      {"all must hold", {{{kWorkspaceNameLabel, "team-a"}}, {{"tier", "Exists", {}}}}, false},
  };
  for (const Case& c : cases) EXPECT_EQ(c.selector.Matches(team_a), c.matches) << c.name;
}

}  // namespace
}  // namespace tau::sched
