#include "render/kueue_config.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "common/duration.h"
#include "common/names.h"
#include "common/strings.h"
#include "spec/yaml_tree.h"

namespace tau::render {
namespace {

using spec::Location;
using spec::Node;
using nlohmann::json;

// The object as written, for printing back: plain scalars typed as YAML 1.2's
// core schema does (int, float, bool, null), quoted ones kept as strings.
json ToJson(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kNull: return nullptr;
    case Node::Kind::kSequence: {
      json a = json::array();
      for (const auto& item : n.items) a.push_back(ToJson(item));
      return a;
    }
    case Node::Kind::kMapping: {
      json o = json::object();
      for (const auto& e : n.entries) o[e.key.scalar] = ToJson(e.value);
      return o;
    }
    case Node::Kind::kScalar: break;
  }
  if (n.quoted) return n.scalar;
  const std::string& s = n.scalar;
  // An explicit core tag fixes the type (the reader checked the form).
  if (n.tag == "float") {
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && std::isfinite(d)) return d;
    return s;
  }
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && end == s.data() + s.size()) return i;
  return s;
}

// False when an explicit tag (`!!float 1`) says the value is not an integer.
bool IntegerTag(const Node& n) { return n.tag.empty() || n.tag == "int"; }

class Decoder {
 public:
  Decoder(spec::Diagnostics* diags, bool v1beta1) : diags_(diags), v1beta1_(v1beta1) {}

  // Reports keys of `map` that are not in `known` (errors, with a
  // did-you-mean) or in `ignored` (warnings: Kueue has them, we do not act).
  void Keys(const Node& map, std::string_view where, std::vector<std::string_view> known,
            std::vector<std::string_view> ignored = {}) {
    for (const auto& e : map.entries) {
      std::string_view k = e.key.scalar;
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      if (std::find(ignored.begin(), ignored.end(), k) != ignored.end()) {
        diags_->Warning(e.key.location, fmt::format("{}.{} is stored but not acted on by the embedded "
                                                    "admission engine yet", where, k));
        continue;
      }
      std::vector<std::string_view> all = known;
      all.insert(all.end(), ignored.begin(), ignored.end());
      std::string hint;
      if (auto near = ClosestMatch(k, all)) hint = fmt::format("; did you mean \"{}\"?", *near);
      diags_->Error(e.key.location, fmt::format("unknown field \"{}\" in {}{}", k, where, hint));
    }
  }

  bool Mapping(const Node& n, std::string_view where) {
    if (n.IsMapping()) return true;
    if (!n.IsNull()) diags_->Error(n.location, fmt::format("{}: expected a mapping, got {}", where, n.Describe()));
    return false;
  }

  // A metav1.LabelSelector: matchLabels and matchExpressions.
  sched::LabelSelector Selector(const Node& n, std::string_view where) {
    sched::LabelSelector sel;
    Keys(n, where, {"matchLabels", "matchExpressions"});
    if (const Node* labels = n.Find("matchLabels"); labels && Mapping(*labels, "matchLabels")) {
      for (const auto& e : labels->entries) {
        sel.match_labels[e.key.scalar] = String(&e.value, "matchLabels value", true, *labels);
      }
    }
    if (const Node* exprs = n.Find("matchExpressions")) {
      if (!exprs->IsSequence()) {
        if (!exprs->IsNull()) {
          diags_->Error(exprs->location, fmt::format("matchExpressions: expected a list, got {}", exprs->Describe()));
        }
        return sel;
      }
      for (const Node& e : exprs->items) {
        if (!Mapping(e, "matchExpressions[]")) continue;
        Keys(e, "matchExpressions[]", {"key", "operator", "values"});
        sched::LabelSelectorRequirement r;
        r.key = String(e.Find("key"), "key", true, e);
        r.op = Enum(e.Find("operator"), "operator", {"In", "NotIn", "Exists", "DoesNotExist"}, "", e);
        if (!e.Find("operator")) diags_->Error(e.location, "missing required field \"operator\"");
        if (const Node* values = e.Find("values"); values && values->IsSequence()) {
          for (const Node& v : values->items) r.values.push_back(String(&v, "values[]", true, *values));
        } else if (values && !values->IsNull()) {
          diags_->Error(values->location, fmt::format("values: expected a list, got {}", values->Describe()));
        }
        const bool wants_values = r.op == "In" || r.op == "NotIn";
        if (wants_values && r.values.empty()) {
          diags_->Error(e.location, fmt::format("operator {} needs a non-empty \"values\" list", r.op));
        } else if (!wants_values && !r.op.empty() && !r.values.empty()) {
          diags_->Error(e.location, fmt::format("operator {} takes no \"values\"", r.op));
        }
        sel.match_expressions.push_back(std::move(r));
      }
    }
    return sel;
  }

  std::string String(const Node* n, std::string_view where, bool required, const Node& parent) {
    if (!n) {
      if (required) diags_->Error(parent.location, fmt::format("missing required field \"{}\"", where));
      return "";
    }
    if (!n->IsScalar()) {
      diags_->Error(n->location, fmt::format("{}: expected a string, got {}", where, n->Describe()));
      return "";
    }
    return n->scalar;
  }

  std::string Enum(const Node* n, std::string_view where, std::vector<std::string_view> values,
                   const std::string& fallback, const Node& parent) {
    if (!n) return fallback;
    std::string v = String(n, where, false, parent);
    if (std::find(values.begin(), values.end(), v) != values.end()) return v;
    diags_->Error(n->location, fmt::format("{}: \"{}\" is not valid; expected one of {}", where, v, QuotedList(values)));
    return fallback;
  }

  std::optional<Quantity> QuantityValue(const Node* n, std::string_view where) {
    if (!n) return std::nullopt;
    if (!n->IsScalar()) {
      diags_->Error(n->location, fmt::format("{}: expected a quantity, got {}", where, n->Describe()));
      return std::nullopt;
    }
    auto q = Quantity::Parse(n->scalar);
    if (!q.ok()) {
      diags_->Error(n->location, fmt::format("{}: {}", where, q.error().message()));
      return std::nullopt;
    }
    if (q->milli() < 0) {
      diags_->Error(n->location, fmt::format("{}: must not be negative", where));
      return std::nullopt;
    }
    return *q;
  }

  std::vector<sched::ResourceGroup> ResourceGroups(const Node& n, std::string_view where) {
    std::vector<sched::ResourceGroup> groups;
    if (n.IsNull()) return groups;
    if (!n.IsSequence()) {
      diags_->Error(n.location, fmt::format("{}: expected a list, got {}", where, n.Describe()));
      return groups;
    }
    std::set<std::string> seen_resources, seen_flavors;
    for (size_t g = 0; g < n.items.size(); ++g) {
      const Node& group = n.items[g];
      std::string gw = fmt::format("{}[{}]", where, g);
      if (!Mapping(group, gw)) continue;
      Keys(group, gw, {"coveredResources", "flavors"});
      sched::ResourceGroup rg;
      if (const Node* covered = group.Find("coveredResources"); covered && covered->IsSequence()) {
        for (const auto& r : covered->items) {
          if (!r.IsScalar()) continue;
          rg.covered_resources.push_back(r.scalar);
          if (!seen_resources.insert(r.scalar).second) {
            diags_->Error(r.location, fmt::format("resource \"{}\" is covered by more than one resource group", r.scalar));
          }
        }
      } else {
        diags_->Error(group.location, fmt::format("{}: missing required field \"coveredResources\"", gw));
      }
      const Node* flavors = group.Find("flavors");
      if (!flavors || !flavors->IsSequence()) {
        diags_->Error(group.location, fmt::format("{}: missing required list \"flavors\"", gw));
        groups.push_back(std::move(rg));
        continue;
      }
      for (size_t f = 0; f < flavors->items.size(); ++f) {
        const Node& flavor = flavors->items[f];
        std::string fw = fmt::format("{}.flavors[{}]", gw, f);
        if (!Mapping(flavor, fw)) continue;
        Keys(flavor, fw, {"name", "resources"});
        sched::FlavorQuotas fq;
        fq.name = String(flavor.Find("name"), fw + ".name", true, flavor);
        if (!fq.name.empty() && !seen_flavors.insert(fq.name).second) {
          diags_->Error(flavor.Find("name")->location,
                        fmt::format("flavor \"{}\" appears in more than one resource group", fq.name));
        }
        const Node* resources = flavor.Find("resources");
        std::vector<std::string> names;
        if (resources && resources->IsSequence()) {
          for (size_t r = 0; r < resources->items.size(); ++r) {
            const Node& res = resources->items[r];
            std::string rw = fmt::format("{}.resources[{}]", fw, r);
            if (!Mapping(res, rw)) continue;
            Keys(res, rw, {"name", "nominalQuota", "borrowingLimit", "lendingLimit"});
            sched::ResourceQuota rq;
            rq.name = String(res.Find("name"), rw + ".name", true, res);
            auto nominal = QuantityValue(res.Find("nominalQuota"), rw + ".nominalQuota");
            if (!res.Find("nominalQuota")) diags_->Error(res.location, fmt::format("{}: missing required field \"nominalQuota\"", rw));
            rq.nominal_quota = nominal.value_or(Quantity());
            rq.borrowing_limit = QuantityValue(res.Find("borrowingLimit"), rw + ".borrowingLimit");
            rq.lending_limit = QuantityValue(res.Find("lendingLimit"), rw + ".lendingLimit");
            if (rq.borrowing_limit) borrowing_limit_at_ = res.Find("borrowingLimit")->location;
            names.push_back(rq.name);
            fq.resources.push_back(std::move(rq));
          }
        } else {
          diags_->Error(flavor.location, fmt::format("{}: missing required list \"resources\"", fw));
        }
        if (!rg.covered_resources.empty() && names != rg.covered_resources) {
          diags_->Error(flavor.location,
                        fmt::format("{}: resources must list the covered resources in the same order ({}); it lists {}",
                                    fw, Join(rg.covered_resources, ", "), Join(names, ", ")));
        }
        rg.flavors.push_back(std::move(fq));
      }
      groups.push_back(std::move(rg));
    }
    return groups;
  }

  std::optional<Location> borrowing_limit_at_;
  spec::Diagnostics* diags_;
  bool v1beta1_;
};

// Kueue's controller Configuration (config.kueue.x-k8s.io): the embedded
// engine acts on fairSharing; the rest is stored with a warning.
// waitForPodsReady: of which the embedded engine acts on requeuingStrategy
// (there are no pods whose readiness it could wait for); `v1beta1` is the
// Configuration's version, where the block is off unless `enable: true`.
std::optional<sched::RequeuingStrategy> DecodeWaitForPodsReady(const Node& w, bool v1beta1, Decoder& d,
                                                               spec::Diagnostics* diags) {
  d.Keys(w, "waitForPodsReady", {"enable", "requeuingStrategy"}, {"timeout", "blockAdmission", "recoveryTimeout"});
  bool enabled = !v1beta1;
  if (const Node* e = w.Find("enable")) {
    if (!e->IsScalar() || (e->scalar != "true" && e->scalar != "false")) {
      diags->Error(e->location, fmt::format("waitForPodsReady.enable: expected true or false, got {}", e->Describe()));
    } else {
      enabled = e->scalar == "true";
    }
  }
  sched::RequeuingStrategy strategy;
  if (const Node* r = w.Find("requeuingStrategy"); r && d.Mapping(*r, "waitForPodsReady.requeuingStrategy")) {
    d.Keys(*r, "waitForPodsReady.requeuingStrategy", {"timestamp", "backoffLimitCount", "backoffBaseSeconds",
                                                      "backoffMaxSeconds"});
    if (const Node* t = r->Find("timestamp")) {
      std::string v = d.Enum(t, "waitForPodsReady.requeuingStrategy.timestamp", {"Eviction", "Creation"}, "Creation", *r);
      if (v == "Eviction") {
        diags->Warning(t->location, "waitForPodsReady.requeuingStrategy.timestamp: Eviction is not acted on: a "
                                    "requeued job keeps its place by submission time, as with Creation");
      }
    }
    auto count = [&](const char* key, int64_t min, int64_t* out) {
      const Node* v = r->Find(key);
      if (!v) return;
      int64_t n = 0;
      auto [end, ec] = v->IsScalar() && IntegerTag(*v) ? std::from_chars(v->scalar.data(), v->scalar.data() + v->scalar.size(), n)
                                     : std::from_chars_result{nullptr, std::errc::invalid_argument};
      if (ec != std::errc() || end != v->scalar.data() + v->scalar.size() || n < min) {
        diags->Error(v->location, fmt::format("waitForPodsReady.requeuingStrategy.{}: expected a whole number >= {}, "
                                              "got {}", key, min, v->Describe()));
        return;
      }
      *out = n;
    };
    int64_t limit = -1;
    count("backoffLimitCount", 0, &limit);
    if (limit >= 0) strategy.backoff_limit_count = limit;
    count("backoffBaseSeconds", 0, &strategy.backoff_base_seconds);
    count("backoffMaxSeconds", 0, &strategy.backoff_max_seconds);
  }
  if (!enabled) return std::nullopt;
  return strategy;
}

void DecodeConfiguration(const Node& doc, bool v1beta1, DecodedKueueConfig* out, spec::Diagnostics* diags) {
  Decoder d(diags, false);
  d.Keys(doc, "Configuration", {"apiVersion", "kind", "metadata", "fairSharing", "admissionFairSharing", "waitForPodsReady"},
         {"namespace", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector", "internalCertManagement",
          "clientConnection", "controller", "health", "metrics", "webhook", "leaderElection",
          "integrations", "queueVisibility", "multiKueue", "resources", "featureGates", "objectRetentionPolicies"});
  if (const Node* w = doc.Find("waitForPodsReady"); w && d.Mapping(*w, "waitForPodsReady")) {
    out->config.requeuing_strategy = DecodeWaitForPodsReady(*w, v1beta1, d, diags);
  }
  sched::FairSharing fs;
  if (const Node* f = doc.Find("fairSharing"); f && d.Mapping(*f, "fairSharing")) {
    d.Keys(*f, "fairSharing", {"enable", "preemptionStrategies"});
    if (const Node* e = f->Find("enable")) {
      if (!e->IsScalar() || (e->scalar != "true" && e->scalar != "false")) {
        diags->Error(e->location, fmt::format("fairSharing.enable: expected true or false, got {}", e->Describe()));
      } else {
        fs.enable = e->scalar == "true";
      }
    }
    if (const Node* list = f->Find("preemptionStrategies")) {
      if (!list->IsSequence()) {
        diags->Error(list->location, fmt::format("fairSharing.preemptionStrategies: expected a list, got {}", list->Describe()));
      } else {
        fs.preemption_strategies.clear();
        for (const Node& item : list->items) {
          std::string v = d.Enum(&item, "fairSharing.preemptionStrategies[]",
                                 {"LessThanOrEqualToFinalShare", "LessThanInitialShare"}, "", *list);
          if (!v.empty()) fs.preemption_strategies.push_back(v);
        }
        const auto& ps = fs.preemption_strategies;
        bool allowed = ps == std::vector<std::string>{"LessThanOrEqualToFinalShare"} ||
                       ps == std::vector<std::string>{"LessThanInitialShare"} ||
                       ps == std::vector<std::string>{"LessThanOrEqualToFinalShare", "LessThanInitialShare"};
        if (!allowed && !ps.empty()) {
          diags->Error(list->location, "fairSharing.preemptionStrategies: Kueue allows [LessThanOrEqualToFinalShare], "
                                       "[LessThanInitialShare] or [LessThanOrEqualToFinalShare, LessThanInitialShare]");
        }
      }
    }
  }
  out->config.fair_sharing = fs;
  sched::AdmissionFairSharing afs;
  if (const Node* a = doc.Find("admissionFairSharing"); a && d.Mapping(*a, "admissionFairSharing")) {
    afs.present = true;
    d.Keys(*a, "admissionFairSharing", {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"});
    auto duration = [&](const char* key, int64_t* out_ms) {
      const Node* v = a->Find(key);
      if (!v) return;
      auto parsed = v->IsScalar() ? ParseDuration(v->scalar) : Result<Duration>(InvalidArgumentError("not a duration"));
      if (!parsed.ok() || parsed->count() <= 0) {
        diags->Error(v->location, fmt::format("admissionFairSharing.{}: expected a positive duration such as 5m or "
                                              "168h, got {}", key, v->Describe()));
        return;
      }
      *out_ms = parsed->count();
    };
    duration("usageHalfLifeTime", &afs.usage_half_life_ms);
    duration("usageSamplingInterval", &afs.usage_sampling_interval_ms);
    if (const Node* w = a->Find("resourceWeights"); w && d.Mapping(*w, "admissionFairSharing.resourceWeights")) {
      for (const auto& e : w->entries) {
        char* end = nullptr;
        double v = e.value.IsScalar() ? std::strtod(e.value.scalar.c_str(), &end) : -1;
        if (!e.value.IsScalar() || *end != '\0' || v < 0) {
          diags->Error(e.value.location, fmt::format("admissionFairSharing.resourceWeights.{}: expected a number "
                                                     ">= 0, got {}", e.key.scalar, e.value.Describe()));
          continue;
        }
        afs.resource_weights[e.key.scalar] = v;
      }
    }
  }
  out->config.admission_fair_sharing = afs;
  json raw = ToJson(doc);
  raw.erase("metadata");
  out->objects.push_back({"Configuration", "config", "", raw.dump()});
}

void DecodeObject(const Node& doc, bool v1beta1, const std::string& kind, DecodedKueueConfig* out,
                  spec::Diagnostics* diags) {
  Decoder d(diags, v1beta1);
  std::vector<std::string_view> top = {"apiVersion", "kind", "metadata", "spec", "status"};
  if (kind == "WorkloadPriorityClass") top = {"apiVersion", "kind", "metadata", "value", "description"};
  d.Keys(doc, kind, top);
  const Node* metadata = doc.Find("metadata");
  std::string name, ns;
  if (!metadata || !d.Mapping(*metadata, "metadata")) {
    diags->Error(doc.location, fmt::format("{}: missing required field \"metadata.name\"", kind));
    return;
  }
  d.Keys(*metadata, "metadata", {"name", "namespace", "labels", "annotations"},
         {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers"});
  name = d.String(metadata->Find("name"), "metadata.name", true, *metadata);
  if (!name.empty()) {
    if (Status st = CheckDns1123Subdomain(name); !st.ok()) {
      diags->Error(metadata->Find("name")->location, fmt::format("metadata.name: {}", st.message()));
    }
  }
  ns = d.String(metadata->Find("namespace"), "metadata.namespace", false, *metadata);
  if (doc.Find("status")) diags->Warning(doc.Find("status")->location, "status is ignored; TauGrid computes it");
  static const Node kEmpty = [] {
    Node n;
    n.kind = Node::Kind::kMapping;
    return n;
  }();
  const Node* spec_node = doc.Find("spec");
  const Node& spec = spec_node && spec_node->IsMapping() ? *spec_node : kEmpty;
  if (spec_node && !spec_node->IsMapping() && !spec_node->IsNull()) {
    diags->Error(spec_node->location, fmt::format("spec: expected a mapping, got {}", spec_node->Describe()));
  }

  if (kind == "ResourceFlavor") {
    d.Keys(spec, "ResourceFlavor.spec", {"nodeLabels", "nodeTaints", "tolerations"}, {"topologyName"});
    sched::ResourceFlavor rf;
    rf.name = name;
    if (const Node* labels = spec.Find("nodeLabels"); labels && d.Mapping(*labels, "nodeLabels")) {
      for (const auto& e : labels->entries) rf.node_labels[e.key.scalar] = e.value.IsScalar() ? e.value.scalar : "";
    }
    if (const Node* taints = spec.Find("nodeTaints"); taints && taints->IsSequence()) {
      for (const auto& t : taints->items) {
        if (!d.Mapping(t, "nodeTaints[]")) continue;
        d.Keys(t, "nodeTaints[]", {"key", "value", "effect", "timeAdded"});
        rf.node_taints.push_back({d.String(t.Find("key"), "key", true, t), d.String(t.Find("value"), "value", false, t),
                                  d.Enum(t.Find("effect"), "effect", {"NoSchedule", "PreferNoSchedule", "NoExecute"}, "NoSchedule", t)});
      }
    }
    if (const Node* tols = spec.Find("tolerations"); tols && tols->IsSequence()) {
      for (const auto& t : tols->items) {
        if (!d.Mapping(t, "tolerations[]")) continue;
        // tolerationSeconds is kept for the pods: it only bounds how long a
        // running pod stays on a node that gains a NoExecute taint, which
        // admission does not see (nor does Kueue's).
        d.Keys(t, "tolerations[]", {"key", "operator", "value", "effect", "tolerationSeconds"});
        sched::Toleration tol{d.String(t.Find("key"), "key", false, t),
                              d.Enum(t.Find("operator"), "operator", {"Equal", "Exists"}, "Equal", t),
                              d.String(t.Find("value"), "value", false, t),
                              d.Enum(t.Find("effect"), "effect", {"", "NoSchedule", "PreferNoSchedule", "NoExecute"}, "", t)};
        // Kubernetes' validation of a toleration.
        if (tol.key.empty() && tol.op != "Exists") {
          diags->Error(t.location, fmt::format("ResourceFlavor \"{}\": tolerations[]: an empty key needs operator "
                                               "Exists (it then tolerates every taint)", name));
        }
        if (tol.op == "Exists" && !tol.value.empty()) {
          diags->Error(t.Find("value")->location, fmt::format("ResourceFlavor \"{}\": tolerations[].value must be "
                                                              "empty when operator is Exists", name));
        }
        if (const Node* secs = t.Find("tolerationSeconds"); secs && tol.effect != "NoExecute") {
          diags->Error(secs->location, fmt::format("ResourceFlavor \"{}\": tolerations[].tolerationSeconds needs "
                                                   "effect NoExecute", name));
        }
        rf.tolerations.push_back(std::move(tol));
      }
    }
    out->config.resource_flavors.push_back(std::move(rf));
  } else if (kind == "ClusterQueue") {
    d.Keys(spec, "ClusterQueue.spec",
           {"resourceGroups", v1beta1 ? "cohort" : "cohortName", "queueingStrategy", "namespaceSelector", "preemption",
            "flavorFungibility", "stopPolicy", "fairSharing", "admissionScope"},
           {"admissionChecks", "admissionChecksStrategy", "concurrentAdmissionPolicy"});
    sched::ClusterQueue cq;
    cq.name = name;
    cq.cohort_name = d.String(spec.Find(v1beta1 ? "cohort" : "cohortName"), "cohortName", false, spec);
    cq.queueing_strategy = d.Enum(spec.Find("queueingStrategy"), "queueingStrategy", {"StrictFIFO", "BestEffortFIFO"},
                                  "BestEffortFIFO", spec);
    if (const Node* sel = spec.Find("namespaceSelector"); sel && d.Mapping(*sel, "namespaceSelector")) {
      cq.namespace_selector = d.Selector(*sel, "namespaceSelector");
    }
    if (const Node* groups = spec.Find("resourceGroups")) cq.resource_groups = d.ResourceGroups(*groups, "resourceGroups");
    if (const Node* p = spec.Find("preemption"); p && d.Mapping(*p, "preemption")) {
      d.Keys(*p, "preemption", {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"});
      cq.preemption.within_cluster_queue = d.Enum(p->Find("withinClusterQueue"), "preemption.withinClusterQueue",
                                                  {"Never", "LowerPriority", "LowerOrNewerEqualPriority"}, "Never", *p);
      cq.preemption.reclaim_within_cohort = d.Enum(p->Find("reclaimWithinCohort"), "preemption.reclaimWithinCohort",
                                                   {"Never", "LowerPriority", "Any"}, "Never", *p);
      if (const Node* b = p->Find("borrowWithinCohort"); b && d.Mapping(*b, "borrowWithinCohort")) {
        d.Keys(*b, "preemption.borrowWithinCohort", {"policy", "maxPriorityThreshold"});
        cq.preemption.borrow_within_cohort = d.Enum(b->Find("policy"), "borrowWithinCohort.policy",
                                                    {"Never", "LowerPriority"}, "Never", *b);
        if (const Node* t = b->Find("maxPriorityThreshold"); t && t->IsScalar()) {
          cq.preemption.max_priority_threshold = std::atoll(t->scalar.c_str());
        }
      }
    }
    if (const Node* f = spec.Find("flavorFungibility"); f && d.Mapping(*f, "flavorFungibility")) {
      d.Keys(*f, "flavorFungibility", {"whenCanBorrow", "whenCanPreempt"}, {"preference"});
      // v1beta1 spelled the stop values Borrow and Preempt.
      std::string borrow = d.Enum(f->Find("whenCanBorrow"), "flavorFungibility.whenCanBorrow",
                                  {"MayStopSearch", "TryNextFlavor", "Borrow"}, "MayStopSearch", *f);
      std::string preempt = d.Enum(f->Find("whenCanPreempt"), "flavorFungibility.whenCanPreempt",
                                   {"MayStopSearch", "TryNextFlavor", "Preempt"}, "TryNextFlavor", *f);
      cq.flavor_fungibility = {borrow == "Borrow" ? "MayStopSearch" : borrow, preempt == "Preempt" ? "MayStopSearch" : preempt};
    }
    cq.stop_policy = d.Enum(spec.Find("stopPolicy"), "stopPolicy", {"None", "Hold", "HoldAndDrain"}, "None", spec);
    if (const Node* scope = spec.Find("admissionScope"); scope && d.Mapping(*scope, "admissionScope")) {
      d.Keys(*scope, "admissionScope", {"admissionMode"});
      std::string mode = d.Enum(scope->Find("admissionMode"), "admissionScope.admissionMode",
                                {"UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"}, "NoAdmissionFairSharing",
                                *scope);
      if (mode == "UsageBasedAdmissionFairSharing") cq.admission_mode = mode;
    }
    if (const Node* checks = spec.Find("admissionChecks"); checks && checks->IsSequence()) {
      for (const auto& c : checks->items) {
        if (c.IsScalar()) cq.admission_checks.push_back(c.scalar);
      }
    }
    if (const Node* strategy = spec.Find("admissionChecksStrategy"); strategy && strategy->IsMapping()) {
      if (const Node* list = strategy->Find("admissionChecks"); list && list->IsSequence()) {
        for (const auto& c : list->items) {
          if (const Node* n = c.Find("name"); c.IsMapping() && n && n->IsScalar()) cq.admission_checks.push_back(n->scalar);
        }
      }
    }
    if (const Node* fs = spec.Find("fairSharing"); fs && d.Mapping(*fs, "fairSharing")) {
      d.Keys(*fs, "fairSharing", {"weight"});
      cq.fair_sharing_weight = d.QuantityValue(fs->Find("weight"), "fairSharing.weight");
    }
    if (d.borrowing_limit_at_ && cq.cohort_name.empty()) {
      diags->Error(*d.borrowing_limit_at_, "borrowingLimit needs cohortName: a ClusterQueue without a cohort has "
                                           "nothing to borrow from");
    }
    out->config.cluster_queues.push_back(std::move(cq));
  } else if (kind == "Cohort") {
    d.Keys(spec, "Cohort.spec", {"parentName", "resourceGroups", "fairSharing"});
    sched::Cohort c;
    c.name = name;
    c.parent_name = d.String(spec.Find("parentName"), "parentName", false, spec);
    if (const Node* groups = spec.Find("resourceGroups")) c.resource_groups = d.ResourceGroups(*groups, "resourceGroups");
    if (const Node* fs = spec.Find("fairSharing"); fs && d.Mapping(*fs, "fairSharing")) {
      d.Keys(*fs, "fairSharing", {"weight"});
      c.fair_sharing_weight = d.QuantityValue(fs->Find("weight"), "fairSharing.weight");
    }
    out->config.cohorts.push_back(std::move(c));
  } else if (kind == "LocalQueue") {
    d.Keys(spec, "LocalQueue.spec", {"clusterQueue", "stopPolicy", "fairSharing"});
    sched::LocalQueue lq;
    lq.name = name;
    lq.namespace_ = ns.empty() ? "default" : ns;
    if (Status st = CheckDns1123Label(lq.namespace_); !st.ok()) {
      diags->Error(metadata->Find("namespace")->location, fmt::format("metadata.namespace: {}", st.message()));
    }
    lq.cluster_queue = d.String(spec.Find("clusterQueue"), "spec.clusterQueue", true, spec_node ? spec : doc);
    lq.stop_policy = d.Enum(spec.Find("stopPolicy"), "stopPolicy", {"None", "Hold", "HoldAndDrain"}, "None", spec);
    if (const Node* fs = spec.Find("fairSharing"); fs && d.Mapping(*fs, "fairSharing")) {
      d.Keys(*fs, "fairSharing", {"weight"});
      lq.fair_sharing_weight = d.QuantityValue(fs->Find("weight"), "fairSharing.weight");
    }
    ns = lq.namespace_;
    out->config.local_queues.push_back(std::move(lq));
  } else if (kind == "WorkloadPriorityClass") {
    sched::WorkloadPriorityClass pc;
    pc.name = name;
    const Node* value = doc.Find("value");
    int64_t v = 0;
    const char* end = value && value->IsScalar() ? value->scalar.data() + value->scalar.size() : nullptr;
    const auto parsed = end ? std::from_chars(value->scalar.data(), end, v) : std::from_chars_result{};
    if (!value || !value->IsScalar() || value->quoted || !IntegerTag(*value) || parsed.ec != std::errc() ||
        parsed.ptr != end) {
      diags->Error(value ? value->location : doc.location,
                   "WorkloadPriorityClass: \"value\" must be an integer (digits only, such as 1000)");
    } else if (v < INT32_MIN || v > INT32_MAX) {
      // Kueue's field is an int32.
      diags->Error(value->location, fmt::format("WorkloadPriorityClass: \"value\" {} is outside Kueue's range, "
                                                "{} to {}",
                                                v, INT32_MIN, INT32_MAX));
    }
    pc.value = v;
    pc.description = d.String(doc.Find("description"), "description", false, doc);
    out->config.priority_classes.push_back(std::move(pc));
  }
  json raw = ToJson(doc);
  if (v1beta1) {
    raw["apiVersion"] = "kueue.x-k8s.io/v1beta2";
    if (raw.contains("spec") && raw["spec"].is_object() && raw["spec"].contains("cohort")) {
      raw["spec"]["cohortName"] = raw["spec"]["cohort"];
      raw["spec"].erase("cohort");
    }
  }
  raw.erase("status");
  out->objects.push_back({kind, name, kind == "LocalQueue" ? ns : "", raw.dump()});
}

// Kueue refuses preemption.borrowWithinCohort when fair sharing is on (fair
// sharing decides preemption across the cohort by shares); so does the
// embedded engine, naming each ClusterQueue that sets it.
void RefuseBorrowWithinCohort(const std::vector<Node>& documents, KueueDecodeMode mode, spec::Diagnostics* diags) {
  for (const Node& doc : documents) {
    const Node* kind = doc.IsMapping() ? doc.Find("kind") : nullptr;
    if (!kind || !kind->IsScalar() || kind->scalar != "ClusterQueue") continue;
    const Node* metadata = doc.Find("metadata");
    const Node* name = metadata && metadata->IsMapping() ? metadata->Find("name") : nullptr;
    const Node* spec = doc.Find("spec");
    const Node* preemption = spec && spec->IsMapping() ? spec->Find("preemption") : nullptr;
    const Node* borrow = preemption && preemption->IsMapping() ? preemption->Find("borrowWithinCohort") : nullptr;
    const Node* policy = borrow && borrow->IsMapping() ? borrow->Find("policy") : nullptr;
    if (!policy || !policy->IsScalar() || policy->scalar == "Never") continue;
    std::string message =
        fmt::format("ClusterQueue \"{}\": preemption.borrowWithinCohort cannot be used with fair sharing (the "
                    "Configuration sets fairSharing.enable: true), as in Kueue; set its policy to Never or turn fair "
                    "sharing off",
                    name && name->IsScalar() ? name->scalar : "");
    if (mode == KueueDecodeMode::kApply) diags->Error(policy->location, message);
    else diags->Warning(policy->location, message + " (stored earlier; kept until the ClusterQueue is applied again)");
  }
}

}  // namespace

bool DecodeKueueManifests(std::string_view text, std::string_view file_name, DecodedKueueConfig* out,
                          spec::Diagnostics* diags, KueueDecodeMode mode) {
  const int errors_before = diags->error_count();
  std::vector<Node> documents;
  spec::ReadLimits limits;
  limits.max_bytes = 4 << 20;
  limits.max_nodes = 200000;
  if (!spec::ReadYamlDocuments(text, file_name, limits, &documents, diags)) return false;
  // A v1 List (what `kubectl get -o json` and `tau admin get -o json`
  // print) stands for its items.
  std::vector<Node> flat;
  for (Node& doc : documents) {
    const Node* api = doc.IsMapping() ? doc.Find("apiVersion") : nullptr;
    const Node* kind = doc.IsMapping() ? doc.Find("kind") : nullptr;
    const Node* items = doc.IsMapping() ? doc.Find("items") : nullptr;
    if (api && kind && api->IsScalar() && kind->IsScalar() && api->scalar == "v1" && kind->scalar == "List") {
      if (!items || !(items->IsSequence() || items->IsNull())) {
        diags->Error(doc.location, "a v1 List needs \"items\", a list of objects");
        continue;
      }
      if (items->IsSequence()) flat.insert(flat.end(), items->items.begin(), items->items.end());
      continue;
    }
    flat.push_back(std::move(doc));
  }
  documents = std::move(flat);
  static const std::vector<std::string_view> kKinds = {"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue",
                                                      "WorkloadPriorityClass", "Configuration"};
  for (const Node& doc : documents) {
    if (!doc.IsMapping()) {
      diags->Error(doc.location, fmt::format("expected a Kubernetes object (a mapping), got {}", doc.Describe()));
      continue;
    }
    const Node* api = doc.Find("apiVersion");
    const Node* kind = doc.Find("kind");
    if (!api || !api->IsScalar()) {
      diags->Error(doc.location, "missing required field \"apiVersion\" (kueue.x-k8s.io/v1beta2)");
      continue;
    }
    if (!kind || !kind->IsScalar()) {
      diags->Error(doc.location, "missing required field \"kind\"");
      continue;
    }
    if (kind->scalar == "Configuration") {
      if (api->scalar != "config.kueue.x-k8s.io/v1beta1" && api->scalar != "config.kueue.x-k8s.io/v1beta2") {
        diags->Error(api->location, fmt::format("apiVersion \"{}\": a Configuration is config.kueue.x-k8s.io/v1beta1 "
                                                "(or v1beta2)", api->scalar));
        continue;
      }
      DecodeConfiguration(doc, api->scalar == "config.kueue.x-k8s.io/v1beta1", out, diags);
      continue;
    }
    bool v1beta1 = api->scalar == "kueue.x-k8s.io/v1beta1";
    if (api->scalar != "kueue.x-k8s.io/v1beta2" && !v1beta1) {
      diags->Error(api->location, fmt::format("apiVersion \"{}\" is not a Kueue API; expected kueue.x-k8s.io/v1beta2 "
                                              "(or the deprecated v1beta1)", api->scalar));
      continue;
    }
    if (std::find(kKinds.begin(), kKinds.end(), kind->scalar) == kKinds.end()) {
      std::string hint;
      if (auto near = ClosestMatch(kind->scalar, kKinds)) hint = fmt::format(" (did you mean \"{}\"?)", *near);
      diags->Error(kind->location, fmt::format("kind \"{}\" is not supported; expected one of {}{}", kind->scalar,
                                               QuotedList(kKinds), hint));
      continue;
    }
    if (v1beta1) {
      diags->Warning(api->location, "kueue.x-k8s.io/v1beta1 is deprecated; the object is stored as v1beta2");
    }
    DecodeObject(doc, v1beta1, kind->scalar, out, diags);
  }
  if (out->config.fair_sharing.enable) RefuseBorrowWithinCohort(documents, mode, diags);
  return diags->error_count() == errors_before;
}

}  // namespace tau::render
