#include "agent/node_lease.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/clock.h"

namespace tau::agent {
using nlohmann::json;

std::string MicroTimeNow() {
  // "2026-12-07T12:00:00.123Z" -> "2026-12-07T12:00:00.123000Z": MicroTime
  // takes exactly six digits.
  std::string t = FormatRfc3339(SystemClock::Get()->Now());
  if (!t.empty() && t.back() == 'Z') t.insert(t.size() - 1, "000");
  return t;
}

namespace {

// What changes whenever a holder renews.
std::string Record(const json& lease) {
  const json spec = lease.value("spec", json::object());
  auto text = [&](const char* key) {
    return spec.contains(key) && spec[key].is_string() ? spec[key].get<std::string>() : std::string();
  };
  return text("holderIdentity") + "|" + text("renewTime") + "|" +
         lease.value("metadata", json::object()).value("resourceVersion", "");
}

std::string VersionOf(const json& lease) {
  return lease.value("metadata", json::object()).value("resourceVersion", "");
}

}  // namespace

NodeLease::NodeLease(kube::KubeClient* api, NodeLeaseOptions options) : api_(api), options_(std::move(options)) {}

kube::ResourceRef NodeLease::Ref() const {
  return {"coordination.k8s.io", "v1", "leases", options_.name_space, lease_name(), ""};
}

Result<bool> NodeLease::Step(Steady::time_point now) {
  const std::string wall = MicroTimeNow();
  auto got = api_->Get(Ref());
  if (!got.ok() && got.status().code() == StatusCode::kNotFound) {
    // Gone: another holder that gave it up (deleted it) was alive just now.
    if (!holder_.empty() && holder_ != options_.identity) others_renewal_seen_ = now;
    holder_.clear();
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", lease_name()}, {"namespace", options_.name_space}}},
                  {"spec",
                   {{"holderIdentity", options_.identity},
                    {"leaseDurationSeconds", options_.duration.count()},
                    {"acquireTime", wall},
                    {"renewTime", wall},
                    {"leaseTransitions", 0}}}};
    auto created = api_->Create(Ref(), lease);
    if (created.ok()) {
      written_version_ = VersionOf(*created);
      observed_record_ = Record(*created);
      observed_at_ = now;
      holder_ = options_.identity;
      return held_ = true;
    }
    if (created.status().code() == StatusCode::kAlreadyExists) return held_ = false;  // another made it first
    return created.status();
  }
  if (!got.ok()) return got.status();
  json lease = *got;
  const std::string record = Record(lease);
  const bool changed = record != observed_record_;
  if (changed) {
    observed_record_ = record;
    observed_at_ = now;
  }
  json& spec = lease["spec"];
  if (!spec.is_object()) spec = json::object();
  holder_ = spec.contains("holderIdentity") && spec["holderIdentity"].is_string() ? spec["holderIdentity"].get<std::string>() : "";
  const bool ours = holder_ == options_.identity;
  if (changed && !ours && !holder_.empty()) others_renewal_seen_ = now;
  std::chrono::seconds duration = options_.duration;
  if (spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].is_number_integer()) {
    duration = std::max(std::chrono::seconds(1), std::chrono::seconds(spec["leaseDurationSeconds"].get<int64_t>()));
  }
  const bool run_out = now - observed_at_ > duration;
  if (!ours && !holder_.empty() && !run_out) return held_ = false;
  if (!ours) {
    spec["acquireTime"] = wall;
    const int64_t transitions = spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer()
                                    ? spec["leaseTransitions"].get<int64_t>()
                                    : 0;
    spec["leaseTransitions"] = transitions + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = options_.duration.count();
  spec["renewTime"] = wall;
  auto written = api_->Replace(Ref(), lease);  // with the resourceVersion read: a conflict loses
  if (!written.ok()) {
    if (written.status().code() == StatusCode::kAborted) return held_ = false;  // someone else wrote first
    return written.status();
  }
  written_version_ = VersionOf(*written);
  observed_record_ = Record(*written);
  observed_at_ = now;
  holder_ = options_.identity;
  return held_ = true;
}

Status NodeLease::Release() {
  if (!held_ || written_version_.empty()) return Status::Ok();
  held_ = false;
  // Deleted, not left without a holder: a successor makes it anew, and an
  // uninstalled chart leaves no Lease behind. Only the lease as this agent
  // last wrote it: one another agent took meanwhile stays.
  kube::DeleteOptions options;
  options.precondition_resource_version = written_version_;
  auto deleted = api_->Delete(Ref(), options);
  if (deleted.ok() || deleted.status().code() == StatusCode::kNotFound) return Status::Ok();
  return deleted.status();
}

}  // namespace tau::agent
