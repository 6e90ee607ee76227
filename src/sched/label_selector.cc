#include "sched/label_selector.h"

#include <algorithm>

namespace tau::sched {

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [key, value] : match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const LabelSelectorRequirement& r : match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !listed) return false;
    if (r.op == "NotIn" && listed) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

std::map<std::string, std::string> WorkspaceLabels(const std::string& workspace) {
  return {{kWorkspaceNameLabel, workspace}};
}

}  // namespace tau::sched
