// taugrid-agent: the GPU health module of taugridd on one Kubernetes node
// (docs/gpu-health.md, "On Kubernetes: the node agent"). It reads the
// node's GPUs through NVML, moves each GPU's health state machine exactly
// as the embedded daemon does, and reports through the API server on its
// Node: the TauGridGPUHealthy condition, a NoSchedule taint or a cordon
// while a GPU is Unhealthy, per-GPU health in an annotation; dcgm-exporter's
// metrics on a port for Prometheus.
//
// Threads: the GPU monitor's two (polls, XID events) and a watch of the
// Node post to an inbox; the main thread alone owns the health state and
// writes to the API server; the metrics server reads the registry.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "agent/node_gpu_health.h"
#include "agent/node_lease.h"
#include "agent/node_report.h"
#include "cli/version.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/log.h"
#include "gpu/gpu_metrics.h"
#include "gpu/gpu_monitor.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/reflector.h"
#include "metrics/registry.h"

namespace tau::agent {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Flags {
  std::string node;
  std::string kubeconfig;
  UnhealthyAction action = UnhealthyAction::kTaint;
  std::string metrics_address = "0.0.0.0";
  int metrics_port = 9400;
  Duration poll_interval{15000};
  Duration heartbeat_interval{300000};
  std::string xid_classes;
  std::string state_file;
  // Beside the kubelets' leases: cluster-wide, so that agents of two
  // installs on one node see each other.
  std::string lease_namespace = "kube-node-lease";
  std::string identity;
  log::Level log_level = log::Level::kInfo;
  log::Format log_format = log::Format::kJson;
};

constexpr const char* kUsage =
    "usage: taugrid-agent --node NAME [--kubeconfig PATH] [--unhealthy-action taint|cordon|condition]\n"
    "                     [--metrics-address ADDR] [--metrics-port N (0: none)] [--poll-interval DURATION]\n"
    "                     [--heartbeat-interval DURATION] [--xid-classes FILE] [--state-file PATH]\n"
    "                     [--lease-namespace NS] [--identity NAME]\n"
    "                     [--log-level debug|info|warn|error] [--log-format json|logfmt] [--version]\n"
    "Flags take their value as the next argument or after '=' (--node=gpu-1).\n"
    "NVML: the system's libnvidia-ml.so.1, or the library TAU_NVML_LIBRARY names.\n"
    "--node defaults to $NODE_NAME; without --kubeconfig the pod's service account is used.\n"
    "--state-file keeps the GPUs' faults on the node (so one not yet written to the API server\n"
    "survives a restart). One agent reports per node: it holds the Lease taugrid-agent-NODE in\n"
    "--lease-namespace (default kube-node-lease) as --identity\n"
    "(default $POD_NAME, else host:pid).\n";

[[noreturn]] void Usage(const std::string& error) {
  if (error.empty()) {
    std::fputs(kUsage, stdout);
    std::exit(0);
  }
  std::fprintf(stderr, "taugrid-agent: %s\n%s", error.c_str(), kUsage);
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  if (const char* n = std::getenv("NODE_NAME")) f.node = n;
  if (const char* pod = std::getenv("POD_NAME")) f.identity = pod;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // --flag=value as well as --flag value.
    std::optional<std::string> inline_value;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto value = [&]() -> std::string {
      if (inline_value) {
        std::string v = *inline_value;
        inline_value.reset();
        return v;
      }
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    auto duration = [&](Duration min) {
      const std::string text = value();
      auto d = ParseDuration(text);
      // At most a day: time arithmetic on larger values overflows.
      const Duration max = std::chrono::hours(24);
      if (!d.ok() || *d < min || *d > max) {
        Usage(fmt::format("{} is a duration from {} to {} (e.g. 15s), not \"{}\"", a, FormatDuration(min),
                          FormatDuration(max), text));
      }
      return *d;
    };
    if ((a == "--version" || a == "--help" || a == "-h") && inline_value) Usage(fmt::format("{} takes no value", a));
    if (a == "--version") {
      std::printf("taugrid-agent %s\n", cli::kVersion);
      std::exit(0);
    } else if (a == "--help" || a == "-h") {
      Usage("");
    } else if (a == "--node") {
      f.node = value();
    } else if (a == "--kubeconfig") {
      f.kubeconfig = value();
    } else if (a == "--unhealthy-action") {
      const std::string v = value();
      auto parsed = ParseUnhealthyAction(v);
      if (!parsed) Usage(fmt::format("--unhealthy-action is taint, cordon or condition, not \"{}\"", v));
      f.action = *parsed;
    } else if (a == "--metrics-address") {
      f.metrics_address = value();
    } else if (a == "--metrics-port") {
      const std::string v = value();
      char* end = nullptr;
      long p = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || p < 0 || p > 65535) Usage(fmt::format("--metrics-port is 0 to 65535, not \"{}\"", v));
      f.metrics_port = static_cast<int>(p);
    } else if (a == "--poll-interval") {
      f.poll_interval = duration(Duration(100));
    } else if (a == "--heartbeat-interval") {
      f.heartbeat_interval = duration(Duration(1000));
    } else if (a == "--xid-classes") {
      f.xid_classes = value();
    } else if (a == "--state-file") {
      f.state_file = value();
    } else if (a == "--lease-namespace") {
      f.lease_namespace = value();
    } else if (a == "--identity") {
      f.identity = value();
    } else if (a == "--log-level") {
      const std::string v = value();
      if (v == "debug") f.log_level = log::Level::kDebug;
      else if (v == "info") f.log_level = log::Level::kInfo;
      else if (v == "warn") f.log_level = log::Level::kWarn;
      else if (v == "error") f.log_level = log::Level::kError;
      else Usage(fmt::format("--log-level is debug, info, warn or error, not \"{}\"", v));
    } else if (a == "--log-format") {
      const std::string v = value();
      if (v == "json") f.log_format = log::Format::kJson;
      else if (v == "logfmt") f.log_format = log::Format::kLogfmt;
      else Usage(fmt::format("--log-format is json or logfmt, not \"{}\"", v));
    } else {
      Usage(fmt::format("unknown argument \"{}\"", a));
    }
  }
  if (f.node.empty()) Usage("name the node this agent runs on: --node NAME (or NODE_NAME)");
  if (f.identity.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    f.identity = fmt::format("{}:{}", host, ::getpid());
  }
  return f;
}

// What the other threads hand the main thread.
class Inbox {
 public:
  void Post(std::function<void(NodeGpuHealth&)> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    cv_.notify_one();
  }
  void SetNode(json node) {
    std::lock_guard<std::mutex> lock(mu_);
    node_ = std::move(node);
    node_changed_ = true;
    cv_.notify_one();
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  // Waits up to `timeout` for work; runs the tasks on `health`; true when a
  // task ran or the node changed (`node` then holds the newest).
  bool Wait(std::chrono::milliseconds timeout, NodeGpuHealth& health, json& node, bool& stopping) {
    std::deque<std::function<void(NodeGpuHealth&)>> tasks;
    bool node_changed = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, timeout, [&] { return stopping_ || node_changed_ || !tasks_.empty(); });
      tasks.swap(tasks_);
      if (node_changed_) {
        node = node_;
        node_changed_ = false;
        node_changed = true;
      }
      stopping = stopping_;
    }
    for (auto& t : tasks) t(health);
    return node_changed || !tasks.empty();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void(NodeGpuHealth&)>> tasks_;
  json node_;
  bool node_changed_ = false;
  bool stopping_ = false;
};

// Set by SIGTERM/SIGINT; the main loop looks at least once a second.
std::atomic<bool> g_stop{false};

// `node_known`: the Node was read (faults recorded there restored); until
// then the node's health is not reported.
void UpdateMetrics(metrics::Registry& r, const NodeGpuHealth& health, const std::string& node, bool node_known) {
  gpu::ResetGpuMetrics(r);
  for (size_t i = 0; i < health.gpus().size(); ++i) {
    const NodeGpuHealth::Gpu& g = health.gpus()[i];
    gpu::SetGpuMetrics(r, static_cast<int>(i), &g.info, node, g.health.state(), g.health.last_sample(), g.last_xid);
  }
  if (node_known) r.Set("taugrid_agent_node_healthy", {{"node", node}}, health.Healthy() ? 1 : 0);
}

// Writes `text` to `path` whole or not at all (a temporary file, fsynced,
// renamed over it, the folder fsynced).
Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());  // a file, or a link someone put there: never written through
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int why = ok ? errno : err;
    ::unlink(tmp.c_str());
    return InternalError(fmt::format("cannot write {}: {}", path, std::strerror(why)));
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

// A state file holds a few records per GPU; anything much larger is not
// one (and reading it whole could exceed the pod's memory).
constexpr uintmax_t kMaxStateFile = 1 << 20;

// A stop takes at most this long: a call to an API server that does not
// answer would otherwise hold the agent for the client's 30 s timeout,
// past the pod's grace period. Nothing is lost by exiting: the faults are
// in the state file and on the Node.
constexpr auto kStopLimit = std::chrono::seconds(5);

void StartStopWatchdog() {
  std::thread([] {
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(kStopLimit);
    log::Warn("agent", "stopped without finishing: a call to the API server did not end in time",
              {{"limit", FormatDuration(std::chrono::duration_cast<Duration>(kStopLimit))}});
    std::fflush(nullptr);
    ::_exit(0);
  }).detach();
}

int Run(const Flags& flags) {
  log::Configure(flags.log_level, flags.log_format);
  // The health module, as taugridd runs it.
  gpu::XidCatalog catalog = gpu::XidCatalog::Defaults();
  if (!flags.xid_classes.empty()) {
    std::ifstream in(flags.xid_classes);
    if (!in) {
      log::Error("agent", "cannot read the XID classes file", {{"file", flags.xid_classes}});
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    if (Status st = catalog.MergeYaml(text.str(), flags.xid_classes); !st.ok()) {
      log::Error("agent", "bad XID classes file", {{"error", st.ToString()}});
      return 1;
    }
  }
  const char* nvml_path = std::getenv("TAU_NVML_LIBRARY");
  auto nvml = gpu::OpenNvml(nvml_path ? nvml_path : "");
  if (!nvml.ok()) {
    log::Error("agent", "cannot read the node's GPUs through NVML", {{"error", nvml.status().ToString()}});
    return 1;
  }
  std::unique_ptr<gpu::GpuSource> source = std::move(*nvml);
  NodeGpuHealth health(source->inventory().gpus, gpu::ThresholdsForPollInterval(flags.poll_interval.count()), catalog);
  // Faults this agent (or the one before it on this node) found, kept on
  // the node: one seen while the API server was unreachable is not lost
  // by a restart.
  std::string saved_faults;
  if (!flags.state_file.empty()) {
    std::error_code ec;
    const bool exists = fs::exists(flags.state_file, ec);
    const bool regular = fs::is_regular_file(flags.state_file, ec);
    const auto size = regular ? fs::file_size(flags.state_file, ec) : 0;
    std::ifstream in;
    if (exists && (!regular || size > kMaxStateFile)) {
      log::Warn("agent", "cannot read the state file; no fault restored from it",
                {{"file", flags.state_file},
                 {"problem", regular ? fmt::format("it is {} bytes, over {}", size, kMaxStateFile) : "it is not a regular file"}});
    } else if (exists) {
      in.open(flags.state_file);
    }
    if (in.is_open()) {
      std::stringstream text;
      text << in.rdbuf();
      std::string problem;
      for (const std::string& uuid : RestoreFromHealthJson(text.str(), health, &problem)) {
        log::Warn("agent", "a GPU stays Unhealthy from before the agent restarted",
                  {{"gpu", uuid}, {"from", flags.state_file}});
      }
      if (!problem.empty()) {
        log::Warn("agent", "the state file does not parse; no fault restored from it",
                  {{"file", flags.state_file}, {"problem", problem}});
      } else {
        saved_faults = FaultRecords(health).dump();
      }
    }
  }
  log::Info("agent", "watching the node's GPUs",
            {{"node", flags.node}, {"gpus", std::to_string(health.gpus().size())},
             {"driver", source->inventory().driver_version}, {"library", source->inventory().source}});

  // The API server.
  auto config = flags.kubeconfig.empty() ? kube::LoadInClusterConfig() : kube::LoadKubeconfig(flags.kubeconfig);
  if (!config.ok()) {
    log::Error("agent", "cannot reach the API server", {{"error", config.status().ToString()}});
    return 1;
  }
  // Short calls: the main thread that makes them also moves the health
  // state and keeps the state file, so an API server that does not answer
  // must not hold it for long (the watch has its own limit).
  kube::TransportOptions transport;
  transport.connect_timeout = std::chrono::seconds(3);
  transport.request_timeout = std::chrono::seconds(5);
  transport.user_agent = "taugrid-agent";
  auto client = kube::KubeClient::Create(*config, transport);
  if (!client.ok()) {
    log::Error("agent", "cannot reach the API server", {{"error", client.status().ToString()}});
    return 1;
  }
  kube::KubeClient& api = **client;
  const kube::ResourceRef node_ref{"", "v1", "nodes", "", flags.node, ""};
  kube::ResourceRef status_ref = node_ref;
  status_ref.subresource = "status";
  const kube::ResourceRef events_ref{"", "v1", "events", "default", "", ""};
  NodeLeaseOptions lease_options;
  lease_options.name_space = flags.lease_namespace.empty() ? config->default_namespace : flags.lease_namespace;
  lease_options.node = flags.node;
  lease_options.identity = flags.identity;
  NodeLease lease(&api, lease_options);

  // Metrics.
  metrics::Registry registry;
  gpu::DefineGpuMetrics(registry);
  registry.Define("taugrid_agent_node_healthy", metrics::Registry::Type::kGauge,
                  "1 while no GPU of the node is Unhealthy.");
  registry.Define("taugrid_build_info", metrics::Registry::Type::kGauge, "Always 1; the version in a label.");
  registry.Set("taugrid_build_info", {{"version", cli::kVersion}, {"component", "agent"}}, 1);
  UpdateMetrics(registry, health, flags.node, /*node_known=*/false);
  httplib::Server metrics_server;
  std::thread metrics_thread;
  if (flags.metrics_port > 0) {
    metrics_server.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
      res.set_content(registry.Expose(), "text/plain; version=0.0.4");
    });
    metrics_server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    // Scrapes and probes are short: a client that sends slowly or keeps a
    // connection idle must not hold the few workers for long.
    metrics_server.new_task_queue = [] { return new httplib::ThreadPool(32); };
    metrics_server.set_read_timeout(2, 0);
    metrics_server.set_write_timeout(5, 0);
    metrics_server.set_keep_alive_timeout(2);
    if (!metrics_server.bind_to_port(flags.metrics_address, flags.metrics_port)) {
      log::Error("agent", "cannot listen for metrics",
                 {{"address", fmt::format("{}:{}", flags.metrics_address, flags.metrics_port)}});
      return 1;
    }
    metrics_thread = std::thread([&] { metrics_server.listen_after_bind(); });
    log::Info("agent", "metrics", {{"listen", fmt::format("{}:{}", flags.metrics_address, flags.metrics_port)}});
  }

  Inbox inbox;
  // The Node, watched: an operator's clear request is seen at once.
  kube::ClientListerWatcher nodes(&api, {"", "v1", "nodes", "", "", ""});
  kube::ReflectorOptions watch_options;
  watch_options.field_selector = "metadata.name=" + flags.node;
  watch_options.on_error = [](const Status& st) { log::Warn("agent", "watching the node", {{"error", st.ToString()}}); };
  kube::Reflector reflector(&nodes, watch_options, [&inbox](kube::ReflectorEventType type, const json& object) {
    if (type == kube::ReflectorEventType::kAdded || type == kube::ReflectorEventType::kModified) inbox.SetNode(object);
  });
  std::thread watch_thread([&] { (void)reflector.Run(); });

  gpu::GpuMonitor monitor(
      source.get(), flags.poll_interval,
      gpu::GpuMonitor::Callbacks{
          [&inbox](int index, gpu::GpuSample sample) {
            inbox.Post([index, sample = std::move(sample)](NodeGpuHealth& h) { h.OnSample(index, sample); });
          },
          [&inbox](gpu::XidEvent event) {
            inbox.Post([event](NodeGpuHealth& h) {
              h.OnXid(event);
              log::Warn("agent", "XID event", {{"event", h.last_event()}});
            });
          },
          [&inbox](int index, std::optional<std::string> why) {
            inbox.Post([index, why = std::move(why)](NodeGpuHealth& h) mutable { h.OnXidUnreadable(index, std::move(why)); });
          }});
  monitor.Start();

  ::signal(SIGTERM, [](int) { g_stop = true; });
  ::signal(SIGINT, [](int) { g_stop = true; });
  StartStopWatchdog();

  json node;
  bool stopping = false;
  bool dirty = true;
  bool restored = false;
  bool warned_missing = false;
  const auto started = std::chrono::steady_clock::now();
  std::string reported;  // the condition's status+reason+message last written
  auto last_heartbeat = std::chrono::steady_clock::time_point{};
  bool held = false;  // the node's lease: only its holder writes
  auto held_until = std::chrono::steady_clock::time_point{};
  auto next_lease_step = std::chrono::steady_clock::time_point{};
  std::string lease_problem, state_problem;
  std::string told_holder;  // the holder last named while waiting
  bool waited = false;      // another agent held the lease since this one last did
  auto last_lease_step = std::chrono::steady_clock::time_point{};
  bool lease_looked_at = false;  // a first look at the lease was made (whatever it said)
  auto next_write = std::chrono::steady_clock::time_point{};  // after a refused write: not before
  // When this agent first saw each GPU Unhealthy (by UUID): a fault found
  // while another agent held the lease, after that agent's last renewal,
  // is one it may never have reported.
  std::map<std::string, std::chrono::steady_clock::time_point> unhealthy_since;
  // While waiting: the holder's report on the Node as last seen (the
  // condition and the GPUs' annotation), and when it last changed (the
  // holder was alive then, and had seen what this agent saw before).
  std::string others_report;
  auto others_report_changed = std::chrono::steady_clock::time_point{};
  while (!g_stop && !stopping) {
    dirty |= inbox.Wait(std::chrono::milliseconds(1000), health, node, stopping);
    if (held) {
      others_report.clear();
    } else if (node.is_object()) {
      std::string report = node.value("metadata", json::object())
                               .value("annotations", json::object())
                               .value(std::string(kHealthAnnotation), "");
      for (const json& c : node.value("status", json::object()).value("conditions", json::array())) {
        if (c.is_object() && c.value("type", "") == kConditionType) report += c.dump();
      }
      if (!others_report.empty() && report != others_report) others_report_changed = std::chrono::steady_clock::now();
      others_report = report;
    }
    for (const auto& gpu : health.gpus()) {
      if (gpu.health.state() == gpu::HealthState::kUnhealthy) {
        unhealthy_since.emplace(gpu.info.uuid, std::chrono::steady_clock::now());
      } else {
        unhealthy_since.erase(gpu.info.uuid);
      }
    }
    // Not while another agent holds the lease: a waiting agent's view
    // misses what an operator cleared through the holder. (Cut off from
    // the API server, with no holder known, it is kept: that is what the
    // file is for.)
    if (lease_looked_at && !(waited && !held) && !flags.state_file.empty()) {
      const std::string faults = FaultRecords(health).dump();
      if (faults != saved_faults) {
        if (Status st = WriteFileAtomically(flags.state_file, faults); st.ok()) {
          saved_faults = faults;
          state_problem.clear();
        } else if (st.ToString() != state_problem) {
          state_problem = st.ToString();
          log::Warn("agent", "cannot keep the faults in the state file (said once until it changes)",
                    {{"error", state_problem}});
        }
      }
    }
    {
      const auto now = std::chrono::steady_clock::now();
      // Before a write, a lease last looked at over 2 s ago is looked at
      // again: a holder whose lease went (deleted, taken) must not write.
      const bool about_to_write = held && (dirty || now - last_heartbeat >= flags.heartbeat_interval);
      if (now >= next_lease_step || (about_to_write && now - last_lease_step > std::chrono::seconds(2))) {
        last_lease_step = now;
        auto step = lease.Step(now);
        lease_looked_at = true;
        if (step.ok()) {
          lease_problem.clear();
          if (*step && !held) {
            log::Info("agent", "reporting for the node", {{"node", flags.node}, {"lease", lease.lease_name()},
                                                          {"identity", flags.identity}});
            dirty = true;  // write what this agent sees
            if (waited) {
              // Taking over from another agent: the Node's record is the
              // truth (an operator may have cleared a fault this agent
              // also saw), not what this one gathered while it waited;
              // except a fault found after the other agent's last renewal
              // this one saw, which that agent may never have reported.
              for (const auto& gpu : health.gpus()) {
                auto since = unhealthy_since.find(gpu.info.uuid);
                if (since != unhealthy_since.end() &&
                    since->second > std::max(lease.others_renewal_seen(), others_report_changed)) {
                  log::Warn("agent", "a GPU fault found after the previous agent last renewed the lease is kept",
                            {{"gpu", gpu.info.uuid}, {"reason", gpu.health.reason()}});
                  continue;
                }
                (void)health.Clear(gpu.info.uuid);
              }
              restored = false;
            }
            waited = false;
            told_holder.clear();
          } else if (!*step && told_holder != lease.holder()) {
            log::Error("agent", "another agent reports for this node; this one waits until it stops",
                       {{"node", flags.node}, {"holder", lease.holder().empty() ? "(being made)" : lease.holder()},
                        {"lease", lease.lease_name()}, {"identity", flags.identity}});
            told_holder = lease.holder();
          }
          if (!*step) waited = true;
          held = *step;
          if (held) held_until = now + lease.duration();
          next_lease_step = now + (held ? lease.duration() / 3 : std::chrono::seconds(2));
        } else if ((step.status().code() == StatusCode::kPermissionDenied ||
                    step.status().code() == StatusCode::kNotFound) &&
                   waited && !held) {
          // Another agent held the lease when this one last could look: it
          // goes on waiting (two agents without a lease would overwrite
          // each other's view of the node).
          if (lease_problem != "unusable while waiting") {
            lease_problem = "unusable while waiting";
            log::Error("agent", "this agent cannot use the node's lease, which another agent held; it goes on "
                                "waiting (fix the agent's RBAC on Leases)",
                       {{"error", step.status().ToString()}, {"namespace", lease_options.name_space},
                        {"holder", lease.holder()}});
          }
          next_lease_step = now + std::chrono::seconds(2);
        } else if (step.status().code() == StatusCode::kPermissionDenied ||
                   step.status().code() == StatusCode::kNotFound) {
          // RBAC without Leases (a chart older than the agent), or a lease
          // namespace that does not exist: report all the same, rather
          // than not at all.
          if (lease_problem != "unusable") {
            lease_problem = "unusable";
            log::Error("agent", "this agent cannot use the node's lease; it reports without one, and a second "
                                "agent on the node would not be noticed",
                       {{"error", step.status().ToString()}, {"namespace", lease_options.name_space}});
          }
          if (!held) dirty = true;
          held = true;
          held_until = now + std::chrono::hours(24 * 365);
          next_lease_step = now + std::chrono::seconds(60);
        } else {
          if (step.status().ToString() != lease_problem) {
            lease_problem = step.status().ToString();
            log::Warn("agent", held ? "cannot renew the node's lease" : "cannot take the node's lease",
                      {{"error", lease_problem}});
          }
          held = held && now < held_until;
          next_lease_step = now + std::chrono::seconds(2);
        }
      }
    }
    if (!held) continue;
    if (node.is_null()) {  // not listed yet
      if (!warned_missing && std::chrono::steady_clock::now() - started > std::chrono::seconds(30)) {
        log::Warn("agent", "the node is not in the cluster yet; nothing is reported until it is (check --node)",
                  {{"node", flags.node}});
        warned_missing = true;
      }
      continue;
    }
    if (!restored) {
      // Before the first write: faults found by an agent before this one
      // stay until an operator clears them.
      restored = true;
      std::string problem;
      for (const std::string& uuid : RestoreFromNode(node, health, &problem)) {
        log::Warn("agent", "a GPU stays Unhealthy from before the agent restarted", {{"gpu", uuid}});
      }
      if (!problem.empty()) {
        log::Warn("agent", "the node's GPU health annotation does not parse; no fault restored from it",
                  {{"annotation", std::string(kHealthAnnotation)}, {"problem", problem}});
      }
      dirty = true;
    }
    bool clear_done = false;
    if (auto clear = ClearRequest(node)) {
      auto cleared = health.Clear(*clear);
      if (cleared.ok()) {
        log::Info("agent", "GPU fault cleared by an operator", {{"gpus", *clear}});
      } else {
        log::Warn("agent", "a clear request names no GPU of this node", {{"error", cleared.status().ToString()}});
      }
      clear_done = true;
      dirty = true;
    }
    const auto now = std::chrono::steady_clock::now();
    const bool heartbeat = now - last_heartbeat >= flags.heartbeat_interval;
    if (!dirty && !heartbeat) continue;
    if (std::chrono::steady_clock::now() >= held_until) {
      held = false;  // the lease ran out during the calls above: not this agent's to write now
      continue;
    }
    // A write refused a moment ago (a conflict: someone else writes the
    // Node too) is not made again at once.
    if (std::chrono::steady_clock::now() < next_write) continue;
    UpdateMetrics(registry, health, flags.node, /*node_known=*/true);
    NodeUpdate update =
        PlanNodeUpdate(node, health, flags.action, FormatRfc3339(SystemClock::Get()->Now()), heartbeat, clear_done);
    bool ok = true;
    // The Node first: it carries the resourceVersion it was planned from,
    // which the status patch would change.
    if (!update.node_patch.is_null()) {
      if (auto patched = api.MergePatch(node_ref, update.node_patch); patched.ok()) {
        node = *patched;  // the watch brings the same; plan from it meanwhile
        // The status patch was planned with the Node just written.
        if (!update.status_patch.is_null()) {
          update.status_patch["metadata"]["resourceVersion"] =
              node.value("metadata", json::object()).value("resourceVersion", "");
        }
      } else {
        // A conflict: the watch brings the newer Node, and the plan is made again.
        ok = false;
        log::Warn("agent", "cannot update the node", {{"error", patched.status().ToString()}});
      }
    }
    if (!update.status_patch.is_null()) {
      if (auto patched = api.StrategicMergePatch(status_ref, update.status_patch); patched.ok()) {
        last_heartbeat = now;
        if (update.transition) {
          // Best effort: the condition is the record, the Event a courtesy.
          const json event = TransitionEvent(node, health, FormatRfc3339(SystemClock::Get()->Now()));
          if (auto posted = api.Create(events_ref, event); !posted.ok()) {
            log::Warn("agent", "cannot record an Event on the node", {{"error", posted.status().ToString()}});
          }
        }
        const std::string said = health.Reason() + ": " + health.Message();
        if (said != reported) {
          (health.Healthy() ? log::Info : log::Warn)("agent", health.Healthy() ? "node GPUs healthy" : "node GPUs unhealthy",
                                                      {{"node", flags.node}, {"reason", health.Reason()}, {"message", health.Message()}});
          reported = said;
        }
      } else if (patched.status().code() == StatusCode::kAborted) {
        // The Node changed since it was read: the watch brings it, and the
        // condition is planned again from it.
        ok = false;
        log::Debug("agent", "the node changed before its condition was written; planning again",
                   {{"error", patched.status().ToString()}});
      } else {
        ok = false;
        log::Warn("agent", "cannot write the node's condition", {{"error", patched.status().ToString()}});
      }
    }
    dirty = !ok;
    if (!ok) next_write = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
  }
  log::Info("agent", "stopping");
  if (held) {
    if (Status st = lease.Release(); !st.ok()) {
      log::Warn("agent", "cannot release the node's lease; a successor waits for it to run out", {{"error", st.ToString()}});
    }
  }
  monitor.Stop();
  reflector.Stop();
  watch_thread.join();
  if (metrics_thread.joinable()) {
    metrics_server.stop();
    metrics_thread.join();
  }
  return 0;
}

}  // namespace
}  // namespace tau::agent

int main(int argc, char** argv) { return tau::agent::Run(tau::agent::ParseFlags(argc, argv)); }
