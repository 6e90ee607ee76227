#include "server/kubernetes/cluster_cache.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "server/kubernetes/attempt_objects.h"
#include "server/kubernetes/cluster_api.h"

namespace tau::server::kubernetes {

ClusterCache::ClusterCache(kube::KubeClient* client, std::function<void(std::function<void()>)> post,
                           Handlers handlers)
    : client_(client), post_(std::move(post)) {
  const std::string ours = fmt::format("{}={}", kManagedByLabel, kManagedByValue);
  auto add = [&](std::string kind, kube::ResourceRef ref, std::string selector, Handler handler) {
    auto source = std::make_unique<Source>();
    source->kind = std::move(kind);
    source->lister = std::make_unique<kube::ClientListerWatcher>(client_, std::move(ref));
    kube::ReflectorOptions options;
    options.label_selector = std::move(selector);
    const std::string name = source->kind;
    options.on_error = [name](const Status& st) {
      log::Warn("kubernetes", "following the cluster failed; retrying", {{"kind", name}, {"error", st.ToString()}});
    };
    Source* raw = source.get();
    source->reflector = std::make_unique<kube::Reflector>(
        raw->lister.get(), options,
        [this, raw, handler = std::move(handler)](kube::ReflectorEventType type, const nlohmann::json& object) {
          post_([handler, type, object] { handler(type, object); });
          if (type == kube::ReflectorEventType::kSynced) raw->synced = true;
        });
    sources_.push_back(std::move(source));
  };
  add("Jobs", JobsRef(), ours, std::move(handlers.jobs));
  add("RayJobs", RayJobsRef(), ours, std::move(handlers.rayjobs));
  add("Pods", PodsRef(), ours, std::move(handlers.pods));
  add("Workloads", WorkloadsRef(), "", std::move(handlers.workloads));
  add("LocalQueues", LocalQueuesRef(), "", std::move(handlers.local_queues));
  add("ClusterQueues", ClusterQueuesRef(), "", std::move(handlers.cluster_queues));
  add("WorkloadPriorityClasses", PriorityClassesRef(), "", std::move(handlers.priority_classes));
  if (handlers.nodes) add("Nodes", NodesRef(), "", std::move(handlers.nodes));
}

ClusterCache::~ClusterCache() { Stop(); }

void ClusterCache::Start() {
  for (auto& source : sources_) {
    kube::Reflector* reflector = source->reflector.get();
    source->thread = std::thread([reflector] { (void)reflector->Run(); });
  }
}

Status ClusterCache::WaitSynced(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<std::string> waiting;
    for (const auto& source : sources_) {
      if (!source->synced) waiting.push_back(source->kind);
    }
    if (waiting.empty()) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return UnavailableError(fmt::format("the cluster's {} were not listed within {} s", Join(waiting, ", "),
                                          timeout.count() / 1000));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ClusterCache::Stop() {
  for (auto& source : sources_) source->reflector->Stop();
  for (auto& source : sources_) {
    if (source->thread.joinable()) source->thread.join();
  }
}

}  // namespace tau::server::kubernetes
