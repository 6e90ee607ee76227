#pragma once

// A cluster for tests: objects in memory by resource, namespace and name;
// Create answers AlreadyExists like the API server, List matches label
// selectors of the form k=v,k2=v2, and every call is recorded.

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "common/strings.h"
#include "server/kubernetes/cluster_api.h"

namespace tau::server::kubernetes {

class FakeClusterApi final : public ClusterApi {
 public:
  Result<nlohmann::json> Get(const kube::ResourceRef& ref) override {
    calls.push_back("GET " + Key(ref));
    auto it = objects.find(Key(ref));
    if (it == objects.end()) {
      return NotFoundError(fmt::format("{} not found", Key(ref)));
    }
    return it->second;
  }
  Result<nlohmann::json> List(const kube::ResourceRef& ref, const kube::ListOptions& options) override {
    calls.push_back("LIST " + ref.resource + " " + options.label_selector);
    nlohmann::json items = nlohmann::json::array();
    const std::string prefix = ref.resource + "/";
    for (const auto& [key, object] : objects) {
      if (!key.starts_with(prefix) || !Matches(object, options.label_selector)) {
        continue;
      }
      if (!ref.namespace_.empty() && object["metadata"].value("namespace", "") != ref.namespace_) {
        continue;
      }
      items.push_back(object);
    }
    return nlohmann::json{{"items", items}, {"metadata", {{"resourceVersion", "1"}}}};
  }
  Result<nlohmann::json> Create(const kube::ResourceRef& ref, const nlohmann::json& object) override {
    kube::ResourceRef named = ref;
    named.name = object["metadata"].value("name", "");
    calls.push_back("CREATE " + Key(named));
    if (objects.count(Key(named))) {
      return AlreadyExistsError(fmt::format("{} already exists", Key(named)));
    }
    nlohmann::json made = object;
    made["metadata"]["uid"] = fmt::format("uid-{}", next_uid++);
    objects[Key(named)] = made;
    return made;
  }
  Result<nlohmann::json> Delete(const kube::ResourceRef& ref, const kube::DeleteOptions& options) override {
    calls.push_back("DELETE " + Key(ref) +
                    (options.grace_period_seconds ? fmt::format(" grace={}", *options.grace_period_seconds) : ""));
    if (objects.erase(Key(ref)) == 0) {
      return NotFoundError(fmt::format("{} not found", Key(ref)));
    }
    return nlohmann::json::object();
  }

  static std::string Key(const kube::ResourceRef& ref) { return ref.resource + "/" + ref.namespace_ + "/" + ref.name; }

  std::map<std::string, nlohmann::json> objects;  // "resource/namespace/name"
  std::vector<std::string> calls;
  int next_uid = 1;

 private:
  static bool Matches(const nlohmann::json& object, const std::string& selector) {
    if (selector.empty()) {
      return true;
    }
    const nlohmann::json& labels = object["metadata"].value("labels", nlohmann::json::object());
    for (const std::string& term : Split(selector, ',')) {
      const size_t eq = term.find('=');
      auto it = labels.find(term.substr(0, eq));
      if (it == labels.end() || *it != term.substr(eq + 1)) {
        return false;
      }
    }
    return true;
  }
};

}  // namespace tau::server::kubernetes
