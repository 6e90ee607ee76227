#include "server/kubernetes/kueue_objects.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/quantity.h"
#include "common/strings.h"
#include "spec/diagnostics.h"
#include "spec/yaml_tree.h"

namespace tau::server::kubernetes {
namespace {

using nlohmann::json;

constexpr std::string_view kGroup = "kueue.x-k8s.io";
constexpr std::string_view kVersion = "v1beta2";

size_t KindOrder(std::string_view kind) {
  const auto& kinds = KueueKindsInApplyOrder();
  return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
}

std::string Label(const render::AppliedObject& o) {
  return o.namespace_.empty() ? fmt::format("{}/{}", o.kind, o.name)
                              : fmt::format("{}/{}/{}", o.kind, o.namespace_, o.name);
}

// Whether an apply changed the object: its generation moves with every
// change outside metadata and status; labels and annotations are compared.
// Not the resourceVersion: Kueue's status updates move it at any time.
bool Changed(const json& before, const json& after) {
  const json& b = before.value("metadata", json::object());
  const json& a = after.value("metadata", json::object());
  if (!b.contains("generation") || !a.contains("generation")) {
    return b.value("resourceVersion", "") != a.value("resourceVersion", "");
  }
  return b["generation"] != a["generation"] || b.value("labels", json()) != a.value("labels", json()) ||
         b.value("annotations", json()) != a.value("annotations", json());
}

// Quantities as strings, their canonical form: Kueue stores a number it is
// given at creation as a string but keeps a number it is given in an update,
// so the second apply of the same file would otherwise change the object.
void QuantitiesAsStrings(json& node) {
  if (node.is_array()) {
    for (json& item : node) QuantitiesAsStrings(item);
    return;
  }
  if (!node.is_object()) return;
  for (auto& [key, value] : node.items()) {
    const bool quantity = key == "nominalQuota" || key == "borrowingLimit" || key == "lendingLimit" || key == "weight";
    if (quantity && value.is_number()) value = value.dump();
    else QuantitiesAsStrings(value);
  }
}

// The object as sent: v1beta2, its namespace, without fields the server
// owns (a resourceVersion would make the apply conditional).
json ApplyBody(const render::AppliedObject& o) {
  json body = json::parse(o.json);
  if (body.contains("spec")) QuantitiesAsStrings(body["spec"]);
  body["apiVersion"] = fmt::format("{}/{}", kGroup, kVersion);
  json& meta = body["metadata"];
  for (const char* owned : {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}) {
    meta.erase(owned);
  }
  if (!o.namespace_.empty()) meta["namespace"] = o.namespace_;
  body.erase("status");
  return body;
}

std::string ConflictText(const std::vector<FieldConflict>& conflicts) {
  std::map<std::string, std::vector<std::string>> by_manager;
  for (const FieldConflict& c : conflicts) by_manager[c.manager].push_back(c.field);
  std::string out;
  for (const auto& [manager, fields] : by_manager) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} {} managed by \"{}\"", fields.size() == 1 ? "field" : "fields", Join(fields, ", "), manager);
  }
  return out;
}

class ApiServerKueue final : public KueueCluster {
 public:
  explicit ApiServerKueue(kube::KubeClient& client) : client_(client) {}

  Result<json> Get(const kube::ResourceRef& ref) override { return client_.Get(ref); }

  Result<std::vector<json>> List(const kube::ResourceRef& ref) override {
    std::vector<json> items;
    kube::ListOptions options;
    options.limit = 500;
    while (true) {
      TAU_ASSIGN_OR_RETURN(json page, client_.List(ref, options));
      for (json& item : page["items"]) items.push_back(std::move(item));
      options.continue_token = page["metadata"].value("continue", "");
      if (options.continue_token.empty()) return items;
    }
  }

  // The PATCH of KubeClient::Apply, sent here so that a 409's causes (the
  // conflicting fields and their managers) can be read.
  Result<json> Apply(const kube::ResourceRef& ref, const json& object, bool force,
                     std::vector<FieldConflict>* conflicts) override {
    kube::HttpRequest request;
    request.method = "PATCH";
    request.target = fmt::format("{}?fieldManager={}", kube::ResourcePath(ref), kube::UrlEscape(kFieldManager));
    if (force) request.target += "&force=true";
    request.content_type = "application/apply-patch+yaml";
    request.body = object.dump();
    TAU_ASSIGN_OR_RETURN(kube::HttpResponse response, client_.transport().Send(request));
    if (response.code >= 200 && response.code < 300) {
      json answer = json::parse(response.body, nullptr, false);
      if (answer.is_discarded()) return InternalError("PATCH " + request.target + ": the answer is not JSON");
      return answer;
    }
    if (response.code == 409 && conflicts != nullptr) {
      json status = json::parse(response.body, nullptr, false);
      if (!status.is_discarded()) *conflicts = ApplyConflictsOf(status);
    }
    return kube::ToStatus(kube::ParseApiError(response.code, response.body), "PATCH " + request.target);
  }

  Status Delete(const kube::ResourceRef& ref) override { return client_.Delete(ref).status(); }

 private:
  kube::KubeClient& client_;
};

// The object as `tau admin get` prints it: what was applied and its status,
// without the server's bookkeeping.
json ForPrinting(json object) {
  if (object.contains("metadata") && object["metadata"].is_object()) {
    json& meta = object["metadata"];
    for (const char* noise : {"managedFields", "uid", "resourceVersion", "generation"}) meta.erase(noise);
  }
  return object;
}

std::string Amount(const std::string& resource, const json& value) {
  std::string text = value.is_string() ? value.get<std::string>() : value.is_number() ? value.dump() : "0";
  auto q = Quantity::Parse(text);
  if (!q.ok()) return text;
  return resource == "memory" ? Quantity::FromUnits(q->milli() / 1000, Quantity::Format::kBinary).ToString()
                              : Quantity::FromMilli(q->milli()).ToString();
}

json ShareOf(const json& object) {
  const json* status = object.contains("status") ? &object["status"] : nullptr;
  if (!status || !status->contains("fairSharing") || !(*status)["fairSharing"].contains("weightedShare")) {
    return nullptr;
  }
  return (*status)["fairSharing"]["weightedShare"];
}

int64_t Count(const json& object, const char* field) {
  if (!object.contains("status") || !object["status"].is_object()) return 0;
  const json& v = object["status"].value(field, json(0));
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

}  // namespace

const std::vector<std::string>& KueueKindsInApplyOrder() {
  static const std::vector<std::string> kKinds = {"ResourceFlavor", "WorkloadPriorityClass", "Cohort", "ClusterQueue",
                                                 "LocalQueue"};
  return kKinds;
}

Result<kube::ResourceRef> KueueResource(std::string_view kind, const std::string& ns, const std::string& name) {
  static const std::map<std::string, std::string, std::less<>> kPlural = {
      {"ResourceFlavor", "resourceflavors"}, {"WorkloadPriorityClass", "workloadpriorityclasses"},
      {"Cohort", "cohorts"},                 {"ClusterQueue", "clusterqueues"},
      {"LocalQueue", "localqueues"}};
  auto it = kPlural.find(kind);
  if (it == kPlural.end()) {
    return InvalidArgumentError(fmt::format("kind \"{}\" is not a Kueue kind TauGrid manages; expected one of {}", kind,
                                            Join(KueueKindsInApplyOrder(), ", ")));
  }
  return kube::ResourceRef{std::string(kGroup), std::string(kVersion), it->second, kind == "LocalQueue" ? ns : "",
                           name, ""};
}

Result<ClusterManifests> DecodeForCluster(const std::vector<ManifestFile>& files) {
  ClusterManifests out;
  spec::Diagnostics diags;
  bool ok = true;
  for (const ManifestFile& f : files) {
    render::DecodedKueueConfig decoded;
    if (!render::DecodeKueueManifests(f.text, f.file, &decoded, &diags)) ok = false;
    for (render::AppliedObject& o : decoded.objects) {
      if (o.kind != "Configuration") out.objects.push_back(std::move(o));
    }
    // The decoder takes a Configuration (embedded mode acts on it); a
    // cluster's Kueue reads its own from where it is deployed.
    std::vector<spec::Node> documents;
    spec::Diagnostics ignored;
    spec::ReadLimits limits;
    limits.max_bytes = 4 << 20;
    limits.max_nodes = 200000;
    if (!spec::ReadYamlDocuments(f.text, f.file, limits, &documents, &ignored)) continue;
    for (const spec::Node& doc : documents) {
      const spec::Node* kind = doc.IsMapping() ? doc.Find("kind") : nullptr;
      if (kind == nullptr || !kind->IsScalar() || kind->scalar != "Configuration") continue;
      diags.Error(kind->location, "a Kueue Configuration configures the Kueue controller, which reads it where it is "
                                  "deployed (its ConfigMap or --config file); it cannot be applied through the API "
                                  "server");
      ok = false;
    }
  }
  if (!ok) return InvalidArgumentError(diags.Format());
  for (const spec::Diagnostic& d : diags.Sorted()) {
    if (d.severity != spec::Severity::kWarning) continue;
    // Fields the embedded engine stores without acting on (admission
    // checks, topology, ...) are Kueue's to act on here: no warning.
    if (d.message.find("not acted on by the embedded admission engine") != std::string::npos) continue;
    out.warnings.push_back(spec::FormatDiagnostic(d));
  }
  std::stable_sort(out.objects.begin(), out.objects.end(),
                   [](const render::AppliedObject& a, const render::AppliedObject& b) {
                     return KindOrder(a.kind) < KindOrder(b.kind);
                   });
  return out;
}

std::vector<FieldConflict> ApplyConflictsOf(const json& status) {
  std::vector<FieldConflict> out;
  if (!status.is_object() || !status.contains("details") || !status["details"].is_object()) return out;
  const json& causes = status["details"].value("causes", json::array());
  if (!causes.is_array()) return out;
  for (const json& cause : causes) {
    // A StatusCause's type is its "reason" in JSON.
    if (!cause.is_object() || cause.value("reason", "") != "FieldManagerConflict") continue;
    // "conflict with \"kubectl-edit\"", or "... using v1" for an Update manager.
    std::string message = cause.value("message", "");
    std::string manager = message;
    size_t open = message.find('"');
    size_t close = open == std::string::npos ? open : message.find('"', open + 1);
    if (close != std::string::npos) manager = message.substr(open + 1, close - open - 1);
    out.push_back({manager, cause.value("field", "")});
  }
  return out;
}

std::unique_ptr<KueueCluster> KueueClusterOf(kube::KubeClient& client) {
  return std::make_unique<ApiServerKueue>(client);
}

bool ApplyReport::ok() const {
  if (!precondition.ok()) return false;
  return std::none_of(objects.begin(), objects.end(), [](const ObjectOutcome& o) {
    return o.state == ApplyState::kFailed || o.state == ApplyState::kNotApplied;
  });
}

std::vector<std::string> ApplyReport::Changes() const {
  std::vector<std::string> out;
  for (const ObjectOutcome& o : objects) {
    switch (o.state) {
      case ApplyState::kCreated: out.push_back(o.label + " created"); break;
      case ApplyState::kConfigured: out.push_back(o.label + " configured"); break;
      case ApplyState::kUnchanged: out.push_back(o.label + " unchanged"); break;
      case ApplyState::kFailed:
      case ApplyState::kNotApplied: break;
    }
  }
  return out;
}

std::string ApplyReport::FailureMessage() const {
  std::string out;
  if (!precondition.ok()) out = precondition.message() + "\n";
  std::vector<std::string> not_applied;
  for (const ObjectOutcome& o : objects) {
    if (o.state == ApplyState::kFailed) {
      if (!o.conflicts.empty()) {
        out += fmt::format("{}: not applied: {}; apply again with --force-conflicts to take them over\n", o.label,
                           ConflictText(o.conflicts));
      } else {
        out += fmt::format("{}: not applied: {}\n", o.label, o.error.message());
      }
    } else if (o.state == ApplyState::kNotApplied) {
      not_applied.push_back(o.label);
    }
  }
  std::vector<std::string> changes = Changes();
  out += fmt::format("applied: {}\n", changes.empty() ? "nothing" : Join(changes, ", "));
  if (!not_applied.empty()) out += fmt::format("not applied: {}\n", Join(not_applied, ", "));
  return out;
}

ApplyReport ApplyKueueObjects(KueueCluster& cluster, const std::vector<render::AppliedObject>& objects, bool force) {
  ApplyReport report;
  for (const render::AppliedObject& o : objects) report.objects.push_back({Label(o), ApplyState::kNotApplied, {}, {}});
  // Namespaces first: a LocalQueue in a namespace that does not exist is
  // refused by the API server, so say so before anything is written.
  std::vector<std::string> missing;
  for (const render::AppliedObject& o : objects) {
    if (o.namespace_.empty() || std::find(missing.begin(), missing.end(), o.namespace_) != missing.end()) continue;
    Result<json> ns = cluster.Get({"", "v1", "namespaces", "", o.namespace_, ""});
    if (ns.ok()) continue;
    if (ns.error().code() != StatusCode::kNotFound) {
      report.precondition = Status(ns.error().code(), fmt::format("checking namespace \"{}\" of {}: {}", o.namespace_,
                                                                  Label(o), ns.error().message()));
      return report;
    }
    missing.push_back(o.namespace_);
  }
  if (!missing.empty()) {
    std::vector<std::string_view> names(missing.begin(), missing.end());
    std::vector<std::string> commands;
    for (const std::string& ns : missing) commands.push_back("kubectl create namespace " + ns);
    report.precondition = FailedPreconditionError(fmt::format(
        "{} {} {} not exist on the cluster; a LocalQueue lives in a namespace (its workspace), which tau admin apply "
        "does not create: create {} first ({})",
        missing.size() == 1 ? "namespace" : "namespaces", QuotedList(names), missing.size() == 1 ? "does" : "do",
        missing.size() == 1 ? "it" : "them", Join(commands, "; ")));
    return report;
  }
  for (size_t i = 0; i < objects.size(); ++i) {
    const render::AppliedObject& o = objects[i];
    ObjectOutcome& outcome = report.objects[i];
    Result<kube::ResourceRef> ref = KueueResource(o.kind, o.namespace_, o.name);
    if (!ref.ok()) {
      outcome.state = ApplyState::kFailed;
      outcome.error = ref.error();
      return report;
    }
    Result<json> before = cluster.Get(*ref);
    if (!before.ok() && before.error().code() != StatusCode::kNotFound) {
      outcome.state = ApplyState::kFailed;
      outcome.error = before.error();
      return report;
    }
    Result<json> after = cluster.Apply(*ref, ApplyBody(o), force, &outcome.conflicts);
    if (!after.ok()) {
      outcome.state = ApplyState::kFailed;
      outcome.error = after.error();
      return report;
    }
    if (!before.ok()) outcome.state = ApplyState::kCreated;
    else if (Changed(*before, *after)) outcome.state = ApplyState::kConfigured;
    else outcome.state = ApplyState::kUnchanged;
  }
  return report;
}

Result<std::vector<json>> GetKueueObjects(KueueCluster& cluster, const std::string& kind, const std::string& name) {
  std::vector<std::string> kinds = KueueKindsInApplyOrder();
  if (!kind.empty()) {
    TAU_RETURN_IF_ERROR(KueueResource(kind, "", "").status());
    kinds = {kind};
  }
  std::vector<json> out;
  for (const std::string& k : kinds) {
    TAU_ASSIGN_OR_RETURN(kube::ResourceRef ref, KueueResource(k, "", ""));
    TAU_ASSIGN_OR_RETURN(std::vector<json> items, cluster.List(ref));
    std::vector<json> matched;
    for (json& item : items) {
      if (!name.empty() && item["metadata"].value("name", "") != name) continue;
      item["apiVersion"] = fmt::format("{}/{}", kGroup, kVersion);
      item["kind"] = k;
      matched.push_back(ForPrinting(std::move(item)));
    }
    std::sort(matched.begin(), matched.end(), [](const json& a, const json& b) {
      return std::make_pair(a["metadata"].value("namespace", ""), a["metadata"].value("name", "")) <
             std::make_pair(b["metadata"].value("namespace", ""), b["metadata"].value("name", ""));
    });
    for (json& m : matched) out.push_back(std::move(m));
  }
  return out;
}

Result<std::string> DeleteKueueObject(KueueCluster& cluster, const std::string& kind, const std::string& ns,
                                      const std::string& name) {
  const std::string where = kind == "LocalQueue" && ns.empty() ? "default" : ns;
  TAU_ASSIGN_OR_RETURN(kube::ResourceRef ref, KueueResource(kind, where, name));
  Status st = cluster.Delete(ref);
  if (st.code() == StatusCode::kNotFound) return NotFoundError(fmt::format("no {} named \"{}\"", kind, name));
  TAU_RETURN_IF_ERROR(st);
  return fmt::format("{}/{} deleted", kind, name);
}

json QueuesJson(const std::vector<json>& cluster_queues, const std::vector<json>& local_queues,
                const std::vector<json>& cohorts) {
  bool fair = false;
  json cqs = json::array();
  for (const json& cq : cluster_queues) {
    const json spec = cq.value("spec", json::object());
    // Usage per flavor and resource from status.flavorsUsage.
    std::map<std::pair<std::string, std::string>, std::pair<json, json>> usage;
    if (cq.contains("status") && cq["status"].contains("flavorsUsage")) {
      for (const json& f : cq["status"]["flavorsUsage"]) {
        for (const json& r : f.value("resources", json::array())) {
          usage[{f.value("name", ""), r.value("name", "")}] = {r.value("total", json("0")),
                                                               r.value("borrowed", json("0"))};
        }
      }
    }
    json resources = json::array();
    for (const json& group : spec.value("resourceGroups", json::array())) {
      for (const json& flavor : group.value("flavors", json::array())) {
        for (const json& r : flavor.value("resources", json::array())) {
          std::string f = flavor.value("name", ""), res = r.value("name", "");
          auto it = usage.find({f, res});
          resources.push_back({{"flavor", f},
                               {"resource", res},
                               {"nominal", Amount(res, r.value("nominalQuota", json("0")))},
                               {"used", it == usage.end() ? "0" : Amount(res, it->second.first)},
                               {"borrowed", it == usage.end() ? "0" : Amount(res, it->second.second)}});
        }
      }
    }
    json share = ShareOf(cq);
    fair = fair || !share.is_null();
    std::string weight = "1";
    if (spec.contains("fairSharing") && spec["fairSharing"].contains("weight")) {
      const json& w = spec["fairSharing"]["weight"];
      weight = w.is_string() ? w.get<std::string>() : w.dump();
    }
    cqs.push_back({{"name", cq["metadata"].value("name", "")},
                   {"weighted_share", share},
                   {"fair_sharing_weight", weight},
                   {"cohort", spec.value("cohortName", "")},
                   {"queueing_strategy", spec.value("queueingStrategy", "BestEffortFIFO")},
                   {"pending", Count(cq, "pendingWorkloads")},
                   {"admitted", Count(cq, "admittedWorkloads")},
                   {"resources", resources}});
  }
  json lqs = json::array();
  for (const json& lq : local_queues) {
    lqs.push_back({{"workspace", lq["metadata"].value("namespace", "")},
                   {"name", lq["metadata"].value("name", "")},
                   {"cluster_queue", lq.value("spec", json::object()).value("clusterQueue", "")},
                   {"pending", Count(lq, "pendingWorkloads")},
                   {"admitted", Count(lq, "admittedWorkloads")}});
  }
  json cohort_list = json::array();
  for (const json& c : cohorts) {
    json share = ShareOf(c);
    fair = fair || !share.is_null();
    cohort_list.push_back({{"name", c["metadata"].value("name", "")},
                           {"parent", c.value("spec", json::object()).value("parentName", "")},
                           {"weighted_share", share}});
  }
  return {{"fair_sharing", fair}, {"cluster_queues", cqs}, {"cohorts", cohort_list}, {"local_queues", lqs}};
}

Result<json> QueuesJsonFromCluster(KueueCluster& cluster) {
  TAU_ASSIGN_OR_RETURN(kube::ResourceRef cq_ref, KueueResource("ClusterQueue", "", ""));
  TAU_ASSIGN_OR_RETURN(kube::ResourceRef lq_ref, KueueResource("LocalQueue", "", ""));
  TAU_ASSIGN_OR_RETURN(kube::ResourceRef cohort_ref, KueueResource("Cohort", "", ""));
  TAU_ASSIGN_OR_RETURN(std::vector<json> cqs, cluster.List(cq_ref));
  TAU_ASSIGN_OR_RETURN(std::vector<json> lqs, cluster.List(lq_ref));
  TAU_ASSIGN_OR_RETURN(std::vector<json> cohorts, cluster.List(cohort_ref));
  return QueuesJson(cqs, lqs, cohorts);
}

}  // namespace tau::server::kubernetes
