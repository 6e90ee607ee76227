#include "sched/taints.h"

namespace tau::sched {

bool ToleratesTaint(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";
}

const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints, const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    bool tolerated = false;
    for (const Toleration& t : tolerations) tolerated = tolerated || ToleratesTaint(t, taint);
    if (!tolerated) return &taint;
  }
  return nullptr;
}

std::string Describe(const Taint& taint) {
  return taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" + taint.effect;
}

}  // namespace tau::sched
