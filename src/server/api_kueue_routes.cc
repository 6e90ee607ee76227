// The Kueue configuration routes of embedded mode: the objects are kept
// in the store and enforced by the embedded engine (docs/queueing.md).
// With a cluster, api_cluster_routes.cc serves the same routes.

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "render/kueue_config.h"
#include "server/api_body.h"
#include "server/api_http.h"
#include "server/job_manager.h"
#include "server/kubernetes/kueue_objects.h"
#include "spec/diagnostics.h"

namespace tau::server {
namespace {

using json = nlohmann::json;

// The "file" a manifests object names for its errors ("manifests" when it
// names none, or not as a string).
std::string FileName(const json& f) {
  return f.contains("file") && f["file"].is_string() ? f["file"].get<std::string>() : "manifests";
}

}  // namespace

void ServeKueueApply(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto parsed = ParseJsonObjectBody(req.body);
  if (!parsed.ok()) return SendError(res, parsed.error());
  json body = std::move(*parsed);
  const char* expected = "expected {\"manifests\": \"<YAML>\", \"file\": \"name\"} or {\"files\": "
                         "[{\"manifests\": \"<YAML>\", \"file\": \"name\"}, ...]}";
  // One file, or several applied in order (force_conflicts has nothing
  // to take over here: the daemon is the configuration's only writer).
  std::vector<std::pair<std::string, std::string>> files;
  if (body.contains("files") && body["files"].is_array()) {
    for (const json& f : body["files"]) {
      if (!f.is_object() || !f.contains("manifests") || !f["manifests"].is_string()) {
        return SendError(res, InvalidArgumentError(expected));
      }
      files.emplace_back(FileName(f), f["manifests"].get<std::string>());
    }
  } else if (body.contains("manifests") && body["manifests"].is_string()) {
    files.emplace_back(FileName(body), body["manifests"].get<std::string>());
  }
  if (files.empty()) return SendError(res, InvalidArgumentError(expected));
  // Decode here first so errors name the user's file and positions.
  json warnings = json::array();
  spec::Diagnostics diags;
  bool ok = true;
  for (const auto& [file, text] : files) {
    render::DecodedKueueConfig decoded;
    if (!render::DecodeKueueManifests(text, file, &decoded, &diags)) ok = false;
  }
  for (const auto& d : diags.Sorted()) {
    if (d.severity == spec::Severity::kWarning) warnings.push_back(spec::FormatDiagnostic(d));
  }
  if (!ok) return SendError(res, InvalidArgumentError(diags.Format()));
  json changes = json::array();
  for (const auto& [file, text] : files) {
    auto applied = ctx.loop->Call([&] { return ctx.jobs->ApplyKueue(text, {}); });
    if (!applied.ok()) return SendError(res, applied.error());
    for (const std::string& c : *applied) changes.push_back(c);
  }
  SendJson(res, {{"changes", changes}, {"warnings", warnings}});
}

void ServeKueueObjects(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::string kind = req.get_param_value("kind"), name = req.get_param_value("name");
  // The kinds stored here: those a cluster has, and the Configuration
  // embedded mode acts on. A kind not among them is a mistake, not a
  // kind with no objects.
  std::vector<std::string> kinds = kubernetes::KueueKindsInApplyOrder();
  kinds.push_back("Configuration");
  if (!kind.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    return SendError(res, InvalidArgumentError(fmt::format("parameter kind: \"{}\" is not a Kueue kind TauGrid "
                                                           "keeps; expected one of {}", kind, Join(kinds, ", "))));
  }
  auto objects = ctx.loop->Call([&] { return ctx.jobs->KueueObjects(); });
  json out = json::array();
  for (const auto& o : objects) {
    if (!kind.empty() && o.kind != kind) continue;
    if (!name.empty() && o.name != name) continue;
    out.push_back(json::parse(o.json));
  }
  SendJson(res, {{"objects", out}});
}

void ServeKueueDelete(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  KueueObjectKey key{req.matches[1], req.get_param_value("namespace"), req.matches[2]};
  auto changes = ctx.loop->Call([&] { return ctx.jobs->ApplyKueue("", {key}); });
  if (!changes.ok()) return SendError(res, changes.error());
  SendJson(res, {{"changes", *changes}});
}

void ServeQueues(const ApiContext& ctx, httplib::Response& res) {
  std::string text = ctx.loop->Call([&] { return ctx.jobs->QueuesJson(); });
  res.status = 200;
  res.set_content(text, "application/json");
}

}  // namespace tau::server
