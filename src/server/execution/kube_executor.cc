#include "server/execution/kube_executor.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "common/log.h"

namespace tau::server {

using nlohmann::json;
namespace k8s = kubernetes;

namespace {

std::string Label(const json& object, const char* key) {
  const json& labels = object["metadata"].value("labels", json::object());
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

// The status of condition `type` ("True", "False") or "".
std::string Condition(const json& object, const std::string& type, std::string* reason = nullptr) {
  const json& status = object.value("status", json::object());
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) {
      if (reason) *reason = c.value("reason", "");
      return c.value("status", "");
    }
  }
  return "";
}

int CompletionIndex(const json& pod) {
  for (const char* where : {"annotations", "labels"}) {
    const json& map = pod["metadata"].value(where, json::object());
    auto it = map.find("batch.kubernetes.io/job-completion-index");
    if (it != map.end() && it->is_string()) return std::atoi(it->get<std::string>().c_str());
  }
  return 0;
}

// How a terminal pod ended.
std::optional<exec::ExitStatus> PodEnd(const json& pod) {
  const json& status = pod.value("status", json::object());
  const std::string phase = status.value("phase", "");
  if (phase != "Succeeded" && phase != "Failed") return std::nullopt;
  exec::ExitStatus end;
  for (const json& c : status.value("containerStatuses", json::array())) {
    const json& terminated = c.value("state", json::object()).value("terminated", json::object());
    if (terminated.contains("exitCode")) {
      end.exit_code = terminated["exitCode"].get<int>();
      if (terminated.contains("signal")) end.signal = terminated["signal"].get<int>();
      return end;
    }
  }
  if (phase == "Succeeded") {
    end.exit_code = 0;
  } else if (status.value("reason", "") == "DeadlineExceeded") {
    end.signal = 9;
    end.terminated_by = "deadline";
  } else {
    end.signal = 9;  // killed before its container recorded an end (evicted, deleted)
  }
  return end;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot read the code snapshot {}", path));
  std::stringstream data;
  data << in.rdbuf();
  return data.str();
}

// Creates `object`, or adopts the one of that name when it is the job's.
Result<json> CreateOrAdopt(k8s::ClusterApi* api, const json& object, const std::string& job_id) {
  TAU_ASSIGN_OR_RETURN(kube::ResourceRef ref, k8s::RefOf(object));
  auto made = api->Create(ref, object);
  if (made.ok() || made.error().code() != StatusCode::kAlreadyExists) return made;
  TAU_ASSIGN_OR_RETURN(json existing, api->Get(ref));
  const std::string owner = Label(existing, k8s::kJobIdLabel);
  if (owner != job_id) {
    return FailedPreconditionError(fmt::format(
        "{} {}/{} exists and {}; it is not job {}'s, so it was left alone", object.value("kind", ""), ref.namespace_,
        ref.name, owner.empty() ? "belongs to no TauGrid job" : "belongs to job " + owner, job_id));
  }
  return existing;
}

}  // namespace

Status KubeExecutor::Prepare(const AttemptPlan& plan) {
  TAU_ASSIGN_OR_RETURN(std::string snapshot, ReadFile(plan.snapshot_path));
  TAU_ASSIGN_OR_RETURN(k8s::AttemptObjects objects, k8s::BuildAttemptObjects(plan, snapshot, settings_));
  TAU_ASSIGN_OR_RETURN(json main, CreateOrAdopt(api_, objects.main, plan.job_id));
  json owner = {{"apiVersion", objects.main["apiVersion"]},
                {"kind", objects.main["kind"]},
                {"name", objects.name},
                {"uid", main["metadata"].value("uid", "")},
                {"blockOwnerDeletion", false}};
  for (json& dependent : objects.dependents) {
    dependent["metadata"]["ownerReferences"] = json::array({owner});
    auto made = CreateOrAdopt(api_, dependent, plan.job_id);
    if (!made.ok()) return made.status();
  }
  Attempt a;
  a.ns = plan.spec.workspace;
  a.name = objects.name;
  a.ray = plan.spec.run.workload_kind == spec::WorkloadKind::kRayJob;
  a.ranks = a.ray ? 1 : static_cast<int>(plan.spec.compute.workers);
  a.grace_seconds = (plan.spec.checkpoint.grace_period.count() + 999) / 1000;
  attempts_[AttemptKey(plan.job_id, plan.attempt)] = a;
  prepared_[plan.job_id] = plan.attempt;
  return Status::Ok();
}

void KubeExecutor::Discard(const std::string& job_id) {
  kube::ListOptions by_job;
  by_job.label_selector = fmt::format("{}={}", k8s::kJobIdLabel, job_id);
  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  for (const kube::ResourceRef& collection :
       {k8s::JobsRef(), k8s::RayJobsRef(), k8s::ServicesRef(), k8s::ConfigMapsRef(), k8s::SecretsRef()}) {
    auto list = api_->List(collection, by_job);
    if (!list.ok()) {
      // No RayJob CRD is no RayJob to delete.
      if (list.error().code() != StatusCode::kNotFound) {
        log::Warn("kubernetes", "cannot list a job's objects to delete them",
                  {{"job", job_id}, {"resource", collection.resource}, {"error", list.status().ToString()}});
      }
      continue;
    }
    for (const json& item : (*list)["items"]) {
      kube::ResourceRef ref = collection;
      ref.namespace_ = item["metadata"].value("namespace", "");
      ref.name = item["metadata"].value("name", "");
      auto deleted = api_->Delete(ref, background);
      if (!deleted.ok() && deleted.error().code() != StatusCode::kNotFound) {
        log::Warn("kubernetes", "cannot delete an object of a job",
                  {{"job", job_id}, {"object", ref.namespace_ + "/" + ref.name}, {"error", deleted.status().ToString()}});
      }
    }
  }
  const std::string prefix = job_id + "/";
  for (auto it = attempts_.lower_bound(prefix); it != attempts_.end() && it->first.starts_with(prefix);) {
    it = attempts_.erase(it);
  }
  for (auto it = ranks_.lower_bound({job_id, 0, 0}); it != ranks_.end() && std::get<0>(it->first) == job_id;) {
    it = ranks_.erase(it);
  }
  for (auto it = handles_.begin(); it != handles_.end();) {
    it = it->second.job_id == job_id ? handles_.erase(it) : std::next(it);
  }
  prepared_.erase(job_id);
}

int64_t KubeExecutor::PreparedAttempt(const std::string& job_id) const {
  auto it = prepared_.find(job_id);
  return it == prepared_.end() ? 0 : it->second;
}

const json* KubeExecutor::MainObject(const std::string& job_id, int64_t attempt) const {
  auto it = attempts_.find(AttemptKey(job_id, attempt));
  if (it != attempts_.end()) {
    const auto& cache = it->second.ray ? rayjobs_ : jobs_;
    auto found = cache.find(it->second.ns + "/" + it->second.name);
    return found == cache.end() ? nullptr : &found->second;
  }
  const std::string number = std::to_string(attempt);
  for (const auto* cache : {&jobs_, &rayjobs_}) {
    for (const auto& [key, object] : *cache) {
      if (Label(object, k8s::kJobIdLabel) == job_id && Label(object, k8s::kAttemptLabel) == number) return &object;
    }
  }
  return nullptr;
}

KubeExecutor::Attempt* KubeExecutor::Find(const std::string& job_id, int64_t attempt) {
  auto it = attempts_.find(AttemptKey(job_id, attempt));
  if (it != attempts_.end()) return &it->second;
  // Made by an earlier daemon: known from the cache.
  const json* main = MainObject(job_id, attempt);
  if (!main) return nullptr;
  Attempt a;
  a.ns = (*main)["metadata"].value("namespace", "");
  a.name = (*main)["metadata"].value("name", "");
  a.ray = main->value("kind", "") == "RayJob";
  const json& spec = main->value("spec", json::object());
  a.ranks = a.ray ? 1 : spec.value("completions", 1);
  if (!a.ray) {
    a.grace_seconds = spec.value("template", json::object()).value("spec", json::object()).value(
        "terminationGracePeriodSeconds", int64_t{30});
  }
  a.seen_running = !spec.value("suspend", false);
  return &(attempts_[AttemptKey(job_id, attempt)] = a);
}

std::optional<exec::ExitStatus> KubeExecutor::EndOf(const RankRef& ref) const {
  const json* main = MainObject(ref.job_id, ref.attempt);
  auto attempt = attempts_.find(AttemptKey(ref.job_id, ref.attempt));
  const bool stopping = attempt != attempts_.end() && attempt->second.stopping;
  exec::ExitStatus end;
  if (main && main->value("kind", "") == "RayJob") {
    const json& status = main->value("status", json::object());
    const std::string deployment = status.value("jobDeploymentStatus", "");
    if (deployment == "Complete" || deployment == "Failed") {
      end.exit_code = status.value("jobStatus", "") == "SUCCEEDED" ? 0 : 1;
      return end;
    }
  } else {
    const std::string attempt_label = std::to_string(ref.attempt);
    std::optional<exec::ExitStatus> pod_end;
    for (const auto& [key, pod] : pods_) {
      if (Label(pod, k8s::kJobIdLabel) != ref.job_id || Label(pod, k8s::kAttemptLabel) != attempt_label ||
          CompletionIndex(pod) != ref.rank) {
        continue;
      }
      if (auto e = PodEnd(pod)) pod_end = e;
    }
    if (pod_end) return pod_end;
    if (main) {
      std::string reason;
      if (Condition(*main, "Complete") == "True") {
        end.exit_code = 0;
        return end;
      }
      if (Condition(*main, "Failed", &reason) == "True") {
        if (reason == "DeadlineExceeded") {
          end.signal = 9;
          end.terminated_by = "deadline";
        } else {
          end.exit_code = 1;
        }
        return end;
      }
    }
  }
  const bool suspended_again = main && attempt != attempts_.end() && attempt->second.seen_running &&
                               main->value("spec", json::object()).value("suspend", false);
  if (stopping && (!main || suspended_again)) {
    // Deleted on request, its pods with it, before any recorded an end.
    end.signal = 15;
    end.terminated_by = "signal";
    return end;
  }
  return std::nullopt;
}

bool KubeExecutor::Over(const RankRef& ref) const {
  if (EndOf(ref)) return true;
  auto attempt = attempts_.find(AttemptKey(ref.job_id, ref.attempt));
  if (attempt == attempts_.end()) return true;
  const json* main = MainObject(ref.job_id, ref.attempt);
  if (!main) return attempt->second.seen_running;  // gone (before it was seen: not cached yet)
  // Suspended again after it ran (Kueue evicted it) and asked to stop (the
  // job code acts on the eviction Kueue's Workload reports): its pods go.
  return attempt->second.stopping && attempt->second.seen_running &&
         main->value("spec", json::object()).value("suspend", false);
}

void KubeExecutor::Evaluate(const std::string& job_id, int64_t attempt) {
  if (Attempt* a = Find(job_id, attempt)) {
    const json* main = MainObject(job_id, attempt);
    if (main && !main->value("spec", json::object()).value("suspend", true)) a->seen_running = true;
  }
  std::vector<uint64_t> ended;
  for (auto it = ranks_.lower_bound({job_id, attempt, 0});
       it != ranks_.end() && std::get<0>(it->first) == job_id && std::get<1>(it->first) == attempt; ++it) {
    Rank& r = it->second;
    if (r.token == 0 || r.reported) continue;
    if (!Over({job_id, attempt, std::get<2>(it->first)})) continue;
    r.reported = true;
    ended.push_back(r.token);
  }
  for (uint64_t token : ended) on_end_(token);
}

Result<RankHandle> KubeExecutor::Start(const AttemptStart& start) {
  const RankRef& ref = start.ref;
  if (!Find(ref.job_id, ref.attempt)) {
    return NotFoundError(fmt::format("attempt {} of job {} has no object in the cluster to start", ref.attempt,
                                     ref.job_id));
  }
  const int64_t id = next_handle_++;
  handles_[id] = ref;
  ranks_[{ref.job_id, ref.attempt, ref.rank}] = Rank{};
  return RankHandle{id, ref.attempt};
}

Status KubeExecutor::Watch(uint64_t token, const RankHandle& rank) {
  auto it = handles_.find(rank.id);
  if (it == handles_.end()) return NotFoundError(fmt::format("no rank has handle {}", rank.id));
  const RankRef& ref = it->second;
  Rank& r = ranks_[{ref.job_id, ref.attempt, ref.rank}];
  r.token = token;
  r.reported = false;
  const RankRef copy = ref;
  Evaluate(copy.job_id, copy.attempt);
  return Status::Ok();
}

Status KubeExecutor::Stop(const RankHandle& rank) {
  auto it = handles_.find(rank.id);
  if (it == handles_.end()) return NotFoundError(fmt::format("no rank has handle {}", rank.id));
  const RankRef ref = it->second;
  Attempt* a = Find(ref.job_id, ref.attempt);
  if (!a) return Status::Ok();  // gone already
  if (!a->stopping) {
    a->stopping = true;
    kube::ResourceRef main = a->ray ? k8s::RayJobsRef(a->ns) : k8s::JobsRef(a->ns);
    main.name = a->name;
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    auto deleted = api_->Delete(main, options);
    if (!deleted.ok() && deleted.error().code() != StatusCode::kNotFound) return deleted.status();
  }
  Evaluate(ref.job_id, ref.attempt);
  return Status::Ok();
}

Status KubeExecutor::Kill(const RankHandle& rank) {
  auto it = handles_.find(rank.id);
  if (it == handles_.end()) return NotFoundError(fmt::format("no rank has handle {}", rank.id));
  const RankRef ref = it->second;
  (void)Sweep(ref);
  return Stop(rank);
}

std::optional<RankHandle> KubeExecutor::Adopt(const RankRef& ref) {
  if (!Find(ref.job_id, ref.attempt) || EndOf(ref)) return std::nullopt;
  const int64_t id = next_handle_++;
  handles_[id] = ref;
  ranks_[{ref.job_id, ref.attempt, ref.rank}] = Rank{};
  prepared_[ref.job_id] = std::max(prepared_[ref.job_id], ref.attempt);
  return RankHandle{id, ref.attempt};
}

Result<exec::ExitStatus> KubeExecutor::ReadEnd(const RankRef& ref) {
  if (auto end = EndOf(ref)) return *end;
  return NotFoundError(fmt::format("nothing in the cluster tells how rank {} of attempt {} of job {} ended: its pod "
                                   "and its object are gone",
                                   ref.rank, ref.attempt, ref.job_id));
}

int64_t KubeExecutor::CountRemains(const RankRef& ref) {
  kube::ListOptions mine;
  mine.label_selector = fmt::format("{}={},{}={}", k8s::kJobIdLabel, ref.job_id, k8s::kAttemptLabel, ref.attempt);
  auto list = api_->List(k8s::PodsRef(), mine);
  // Unknown is counted as one: the caller records it before the sweep.
  return list.ok() ? static_cast<int64_t>((*list)["items"].size()) : 1;
}

RankRemains KubeExecutor::Sweep(const RankRef& ref) {
  RankRemains remains;
  kube::ListOptions mine;
  mine.label_selector = fmt::format("{}={},{}={}", k8s::kJobIdLabel, ref.job_id, k8s::kAttemptLabel, ref.attempt);
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  auto list = api_->List(k8s::PodsRef(), mine);
  if (!list.ok()) {
    remains.alive = 1;
    remains.why_alive = "cannot list its pods: " + list.status().ToString();
    return remains;
  }
  for (const json& pod : (*list)["items"]) {
    kube::ResourceRef ref_pod = k8s::PodsRef(pod["metadata"].value("namespace", ""));
    ref_pod.name = pod["metadata"].value("name", "");
    if (api_->Delete(ref_pod, now).ok()) ++remains.killed;
  }
  auto after = api_->List(k8s::PodsRef(), mine);
  remains.alive = after.ok() ? static_cast<int64_t>((*after)["items"].size()) : remains.killed;
  if (remains.alive > 0) remains.why_alive = fmt::format("{} pod(s) of it still listed", remains.alive);
  remains.contained = after.ok() && remains.alive == 0;
  return remains;
}

void KubeExecutor::OnObject(Kind kind, kube::ReflectorEventType type, const json& object) {
  if (type == kube::ReflectorEventType::kSynced) return;
  auto& cache = kind == Kind::kJob ? jobs_ : kind == Kind::kRayJob ? rayjobs_ : pods_;
  const std::string key = kube::ObjectKey(object);
  if (type == kube::ReflectorEventType::kDeleted) {
    cache.erase(key);
  } else {
    cache[key] = object;
  }
  const std::string job_id = Label(object, k8s::kJobIdLabel);
  const std::string attempt = Label(object, k8s::kAttemptLabel);
  if (job_id.empty() || attempt.empty()) return;
  Evaluate(job_id, std::atoll(attempt.c_str()));
}

std::vector<std::pair<std::string, int64_t>> KubeExecutor::AttemptsOnNode(const std::string& node) const {
  std::set<std::pair<std::string, int64_t>> attempts;
  for (const auto& [key, pod] : pods_) {
    if (!pod.contains("spec") || pod["spec"].value("nodeName", "") != node) continue;
    const std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
    if (phase == "Succeeded" || phase == "Failed") continue;
    if (pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp")) continue;  // going away
    const std::string id = Label(pod, k8s::kJobIdLabel);
    const std::string attempt = Label(pod, k8s::kAttemptLabel);
    if (id.empty()) continue;
    attempts.insert({id, std::atoll(attempt.c_str())});
  }
  return {attempts.begin(), attempts.end()};
}

int KubeExecutor::DeleteOrphans(const std::function<bool(const std::string& job_id)>& live) {
  std::set<std::string> dead;
  for (const auto* cache : {&jobs_, &rayjobs_}) {
    for (const auto& [key, object] : *cache) {
      const std::string id = Label(object, k8s::kJobIdLabel);
      if (!id.empty() && !live(id)) dead.insert(id);
    }
  }
  for (const std::string& id : dead) {
    log::Info("kubernetes", "deleting the objects of a job that is not waiting or running", {{"job", id}});
    Discard(id);
  }
  return static_cast<int>(dead.size());
}

}  // namespace tau::server
