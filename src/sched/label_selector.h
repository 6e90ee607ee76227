#pragma once

#include <map>
#include <string>
#include <vector>

namespace tau::sched {

// A Kubernetes label selector (metav1.LabelSelector): every matchLabels
// pair and every matchExpressions requirement must hold. An empty selector
// matches everything.
struct LabelSelectorRequirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
};

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;

  bool Matches(const std::map<std::string, std::string>& labels) const;
};

// The label every workspace carries, as Kubernetes gives every namespace
// its name: kubernetes.io/metadata.name=<workspace>.
inline constexpr const char* kWorkspaceNameLabel = "kubernetes.io/metadata.name";
std::map<std::string, std::string> WorkspaceLabels(const std::string& workspace);

}  // namespace tau::sched
