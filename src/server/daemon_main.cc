// taugridd: the embedded control plane (docs/server.md).
//
//   taugridd [--home DIR] [--listen ADDR:PORT | --port N] [--log-format logfmt|json] [--log-level L]
//            [--backend local|kubernetes [--kubeconfig PATH [--context NAME]] [--checkpoint-pvc [WORKSPACE=]NAME]...
//             [--pod-annotation KEY=VALUE]...]
//   taugridd --version
//
// With --backend kubernetes, jobs run on a cluster (docs/kubernetes.md):
// Kueue admits them and its scheduler places their pods; without
// --kubeconfig it connects as the pod it runs in.
//
// Holds TAU_HOME/taugridd.lock while it runs (one daemon per TAU_HOME),
// writes TAU_HOME/server.json, TAU_HOME/token and TAU_HOME/metrics-token
// (GET /metrics only), and stops on SIGTERM or
// SIGINT, leaving running jobs running.

#include <fcntl.h>
#include <sched.h>
#include <fmt/format.h>
#include <openssl/rand.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/version.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/log.h"
#include "common/names.h"
#include "common/tau_home.h"
#include "exec/oom_evidence.h"
#include "exec/cgroup.h"
#include "exec/gpu_inventory.h"
#include "exec/host_facts.h"
#include "gpu/gpu_health.h"
#include "gpu/gpu_monitor.h"
#include "gpu/gpu_source.h"
#include "exec/process_info.h"
#include "sched/admission_policy.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "server/admission/kueue_admission.h"
#include "server/api_server.h"
#include "server/execution/kube_executor.h"
#include "server/execution/local_executor.h"
#include "server/kubernetes/cluster_api.h"
#include "server/kubernetes/cluster_cache.h"
#include "server/kubernetes/node_table.h"
#include "server/kubernetes/pod_logs.h"
#include "server/control_loop.h"
#include "server/daemon_flags.h"
#include "server/job_manager.h"
#include "server/page_build_gate.h"
#include "server/state_view.h"
#include "store/job_store.h"

extern char** environ;

namespace tau::server {
namespace {
namespace fs = std::filesystem;

// The build's version: project() in the top CMakeLists.txt, which also tags
// the container image (scripts/build-image).
using cli::kGitCommit;
using cli::kVersion;


// The settings row that keeps the address taugridd listened on, so the
// next run without --listen takes the same one.
constexpr char kListenSetting[] = "server.listen";
// How much nicer than the daemon the thread that does background file work
// (evidence, checkpoint digests) runs: it takes the CPU a submit leaves.
constexpr int kBackgroundNice = 5;

// Writes `data` to `path` atomically with the given mode.
Status WriteFileAtomically(const fs::path& path, const std::string& data, mode_t mode) {
  fs::path tmp = path.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError(errno, fmt::format("write {}", tmp.string()));
  ::fchmod(fd, mode);
  bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return ErrnoError(err, fmt::format("write {}", tmp.string()));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError(errno, fmt::format("rename {}", path.string()));
  return Status::Ok();
}

// Rewrites the existing file `path` with `data` in place: on a full disk
// it still fits in the blocks the file already has (a few hundred bytes,
// under one block), where a new file would need a new block. Readers may
// see it half-written for an instant; a client reading server.json then
// finds no "url" and reads it again.
Status RewriteFileInPlace(const fs::path& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, fmt::format("write {}", path.string()));
  bool ok = ::pwrite(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()) &&
            ::ftruncate(fd, static_cast<off_t>(data.size())) == 0 && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  return ok ? Status::Ok() : ErrnoError(err, fmt::format("write {}", path.string()));
}

// server.json tells clients where this daemon listens: written atomically,
// else (a full disk) rewritten in place.
Status WriteServerJson(const fs::path& path, const std::string& data) {
  Status st = WriteFileAtomically(path, data, 0600);
  if (st.ok() || st.code() != StatusCode::kResourceExhausted) return st;
  if (Status in_place = RewriteFileInPlace(path, data); !in_place.ok()) return st;
  log::Warn("server", "the disk is full: server.json was rewritten in place", {{"error", st.ToString()}});
  return Status::Ok();
}

Result<std::string> LoadOrCreateToken(const fs::path& path) {
  std::ifstream in(path);
  std::string token;
  if (in && std::getline(in, token) && token.size() >= 32) return token;
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return InternalError("no randomness for the API token");
  token.clear();
  for (unsigned char b : bytes) token += fmt::format("{:02x}", b);
  TAU_RETURN_IF_ERROR(WriteFileAtomically(path, token + "\n", 0600));
  return token;
}

std::string SelfDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : exe.parent_path().string();
}

int Main(int argc, char** argv) {
  DaemonFlags flags = ParseDaemonFlags(argc, argv);
  log::Configure(flags.log_level, flags.log_format);
  ::signal(SIGPIPE, SIG_IGN);
  // Before any thread starts: as many arenas as list pages may be built at
  // once. With 20k jobs and 200 concurrent limit=1000 lists this kept RSS
  // near 50 MB rather than near 95 MB with the default arenas
  // (docs/performance.md#job-history).
  CapMallocArenas(PageBuildGate::DefaultBound());
  // Every API connection (and a followed log holds one for hours) takes a
  // descriptor: raise the soft limit toward the hard one (jobs inherit it,
  // as they would in a container).
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 &&
                      files.rlim_cur < files.rlim_max) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 65536);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  // Block before any thread starts so only sigwait below sees them.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  TauHome home(flags.home);
  std::error_code ec;
  fs::create_directories(home.root(), ec);
  if (ec) {
    log::Error("server", "cannot create TAU_HOME", {{"path", home.root().string()}, {"error", ec.message()}});
    return 1;
  }
  ::chmod(home.root().c_str(), 0700);
  int lock_fd = ::open(home.daemon_lock().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  // `tau` may hold the lock shared for an instant to see whether a daemon
  // holds it: such a hold ends within a second.
  bool locked = false;
  for (int i = 0; lock_fd >= 0 && i < 20 && !locked; ++i) {
    locked = ::flock(lock_fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!locked) {
    std::fprintf(stderr, "taugridd: another taugridd is running for %s\n", home.root().c_str());
    return 1;
  }

  auto capacity_info = exec::ReadMachineCapacity();
  if (!capacity_info.ok()) {
    log::Error("server", "cannot read the machine's capacity", {{"error", capacity_info.status().ToString()}});
    return 1;
  }
  // On Kubernetes: the cluster's API server. Its calls are made on the
  // control loop, so they time out sooner than the client's default.
  const bool on_cluster = flags.backend == "kubernetes";
  std::unique_ptr<kube::KubeClient> kube_client;
  if (on_cluster) {
    auto config = flags.kubeconfig.empty() ? kube::LoadInClusterConfig()
                                           : kube::LoadKubeconfig(flags.kubeconfig, flags.kube_context);
    if (!config.ok()) {
      std::fprintf(stderr, "taugridd: %s\n", config.status().message().c_str());
      return 2;
    }
    kube::TransportOptions transport;
    transport.request_timeout = std::chrono::seconds(10);
    auto client = kube::KubeClient::Create(std::move(*config), transport);
    if (!client.ok()) {
      log::Error("server", "cannot make the Kubernetes client", {{"error", client.status().ToString()}});
      return 1;
    }
    kube_client = std::move(*client);
    log::Info("server", "jobs run on Kubernetes: Kueue admits them, the cluster places them",
              {{"server", kube_client->config().server}});
  }
  // GPUs: from NVML when it loads (TAU_NVML_LIBRARY names the library),
  // else from TAU_HOME/gpus.json, else none. On Kubernetes, the nodes'.
  std::unique_ptr<gpu::GpuSource> nvml;
  std::vector<gpu::GpuInfo> gpus;
  std::string driver_version, cuda_version;
  const char* nvml_path = std::getenv("TAU_NVML_LIBRARY");
  if (on_cluster) {
    // No GPU of this machine is handed out or watched.
  } else if (auto opened = gpu::OpenNvml(nvml_path ? nvml_path : ""); opened.ok()) {
    nvml = std::move(*opened);
    gpus = nvml->inventory().gpus;
    driver_version = nvml->inventory().driver_version;
    cuda_version = nvml->inventory().cuda_version;
    log::Info("gpu", "GPUs from NVML, watched for faults",
              {{"count", std::to_string(gpus.size())}, {"driver", driver_version}, {"library", nvml->inventory().source}});
  } else {
    exec::GpuConfigFile gpu_config((home.root() / "gpus.json").string());
    auto listed = gpu_config.List();
    if (!listed.ok()) {
      log::Error("server", "cannot read the GPU list", {{"error", listed.status().ToString()}});
      return 1;
    }
    for (const auto& g : *listed) {
      gpus.push_back({g.index, g.uuid, g.model, "", g.memory_mib, gpu::GpuClassOf(g.model, g.memory_mib)});
    }
    log::Info("gpu", listed->empty() ? "no NVML and no gpus.json: a CPU-only machine"
                                     : "no NVML: GPUs from gpus.json, taken as healthy and not watched",
              {{"nvml", opened.status().message()}});
  }
  gpu::XidCatalog xid_catalog = gpu::XidCatalog::Defaults();
  {
    fs::path xid_file = flags.xid_classes.empty() ? home.root() / "xid-classes.yaml" : fs::path(flags.xid_classes);
    std::ifstream in(xid_file);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      if (Status st = xid_catalog.MergeYaml(text.str(), xid_file.string()); !st.ok()) {
        std::fprintf(stderr, "taugridd: %s\n", st.message().c_str());
        return 2;
      }
    } else if (!flags.xid_classes.empty()) {
      std::fprintf(stderr, "taugridd: cannot read %s\n", xid_file.c_str());
      return 2;
    }
  }
  sched::Resources capacity{capacity_info->cpus_milli, capacity_info->memory_bytes,
                            static_cast<int64_t>(gpus.size())};

  auto store = store::JobStore::Open(home.database().string());
  if (!store.ok()) {
    log::Error("server", "cannot open the database", {{"error", store.status().ToString()}});
    return 1;
  }
  auto token = LoadOrCreateToken(home.token());
  if (!token.ok()) {
    log::Error("server", "cannot write the token", {{"error", token.status().ToString()}});
    return 1;
  }
  auto metrics_token = LoadOrCreateToken(home.root() / "metrics-token");
  if (!metrics_token.ok()) {
    log::Error("server", "cannot write the metrics token", {{"error", metrics_token.status().ToString()}});
    return 1;
  }
  // Where to listen: --listen, else where the last run listened (a stable
  // address for scrape configs and port forwards), else a free port of
  // 127.0.0.1.
  std::string listen_host = "127.0.0.1";
  int listen_port = 0;
  const bool listen_given = !flags.listen.empty();
  auto stored_listen = (*store)->Setting(kListenSetting);
  if (listen_given) {
    ParseListen(flags.listen, &listen_host, &listen_port);
  } else if (stored_listen.ok() && !stored_listen->empty()) {
    if (!ParseListen(*stored_listen, &listen_host, &listen_port)) {
      log::Warn("server", "the stored listen address is not ADDR:PORT; taking a free port", {{"stored", *stored_listen}});
      listen_host = "127.0.0.1";
      listen_port = 0;
    }
  }

  JobManagerOptions options;
  options.capacity = capacity;
  // One GPU class on the machine: the default flavor is labelled with it.
  std::string gpu_class = gpus.empty() ? "" : gpus.front().gpu_class;
  for (const auto& g : gpus) {
    if (g.gpu_class != gpus.front().gpu_class) gpu_class.clear();
  }
  options.kueue = DefaultKueueConfig(capacity, gpu_class);
  options.default_manifests = DefaultKueueManifests(capacity, gpu_class);
  options.gpu_info = gpus;
  options.gpu_health_monitored = nvml != nullptr;
  options.xid_catalog = xid_catalog;
  options.health_thresholds = gpu::ThresholdsForPollInterval(flags.gpu_poll_interval.count());
  options.health_thresholds.temperature_warn_c = flags.gpu_temp_warn_c;
  options.health_thresholds.temperature_fatal_c = flags.gpu_temp_fatal_c;
  options.allow_foreign_gpu_processes = flags.allow_foreign_gpu_processes;
  {
    // What every job's evidence records about this machine.
    exec::HostFacts facts = exec::ReadHostFacts();
    nlohmann::json gpu_list = nlohmann::json::array();
    for (const auto& g : gpus) {
      gpu_list.push_back({{"index", g.index},
                          {"uuid", g.uuid},
                          {"model", g.model},
                          {"gpu_class", g.gpu_class},
                          {"memory_mib", g.memory_mib},
                          {"pci_bus_id", g.pci_bus_id},
                          {"driver_version", driver_version},
                          {"cuda_version", cuda_version}});
    }
    options.hostname = facts.hostname;
    options.host_json = nlohmann::json{{"hostname", facts.hostname},
                                       {"os", facts.os},
                                       {"kernel", facts.kernel},
                                       {"arch", facts.arch},
                                       {"cpu_model", facts.cpu_model},
                                       {"cpus", facts.cpus},
                                       {"memory_bytes", facts.memory_bytes},
                                       {"python3", facts.python3},
                                       {"gpus", gpu_list},
                                       {"taugrid_version", kVersion}}
                            .dump();
  }
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "TAU_", 4) != 0) options.base_env.emplace_back(*e);
  }
  std::unique_ptr<exec::Cgroup2Driver> cgroups;
  if (on_cluster) {
    // Pods get their limits from their spec.
  } else if (auto detected = exec::DetectCgroup2(); detected.ok()) {
    cgroups = std::move(*detected);
    options.cgroups = cgroups.get();
    log::Info("server", "jobs run in cgroup v2 leaves with cpu, memory and pids limits");
  } else {
    // Once, here: each job is pinned to CPUs and gets RLIMIT_DATA instead.
    log::Warn("server",
              "cgroup v2 limits are not available; jobs are pinned to CPUs and get RLIMIT_DATA instead of cpu, "
              "memory and pids limits",
              {{"reason", detected.error().message()}});
    // OOM kills are told from the kernel's count of them and peak RSS.
    options.oom_kill_count = [] { return exec::ReadOomKillCount(); };
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) options.cpu_ids.push_back(c);
      }
    }
  }
  options.max_interruptions = flags.max_interruptions;
  options.history_keep = flags.history_keep;
  options.progress_stall_after = flags.progress_stall_after;
  options.ray_program = flags.ray_program;
  if (on_cluster) {
    options.runs_locally = false;
    options.max_snapshot_bytes = kubernetes::kMaxSnapshotBytes;
    options.max_snapshot_why = " (the Kubernetes backend delivers a job's code in a ConfigMap)";
  }
  metrics::Registry registry;
  DefineMetrics(registry, kVersion);
  options.metrics = &registry;
  StatePublisher publisher;
  ControlLoop loop;
  // Slow file work (checkpoint digests) runs here, off the control loop.
  // Declared after `loop`, so it stops first and its last results can
  // still be posted back.
  ControlLoop files;
  options.defer = [&loop](std::function<void()> task) { loop.Post(std::move(task)); };
  options.after = [&loop](std::chrono::milliseconds delay, std::function<void()> task) {
    loop.PostAfter(delay, std::move(task));
  };
  // Evidence sealing and checkpoint digests yield the CPU to submits and
  // the control loop: on a busy machine they finish later, never first.
  files.Post([] {
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, 0);  // the daemon's
    if (errno == 0) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), std::min(19, nice + kBackgroundNice));
  });
  options.background = [&files](std::function<void()> task) { files.Post(std::move(task)); };
  // A short job's "Running" goes with its end; others' with a flush for all.
  options.deferred_write_delay = std::chrono::milliseconds(20);
  JobManager* jobs_ptr = nullptr;
  auto on_rank_end = [&loop, &jobs_ptr](uint64_t token) {
    loop.Post([&jobs_ptr, token] { jobs_ptr->OnShimExit(token); });
  };
  std::unique_ptr<Executor> executor;
  std::unique_ptr<kubernetes::KubeClientApi> kube_api;
  KubeExecutor* kube_executor = nullptr;
  std::unique_ptr<KueueAdmission> kueue;
  if (on_cluster) {
    kube_api = std::make_unique<kubernetes::KubeClientApi>(kube_client.get());
    auto made = std::make_unique<KubeExecutor>(kube_api.get(), kubernetes::BackendSettings{flags.checkpoint_pvc, flags.pod_annotations, flags.checkpoint_pvcs},
                                               on_rank_end);
    kube_executor = made.get();
    executor = std::move(made);
    kueue = std::make_unique<KueueAdmission>(
        [kube_executor](const std::string& id) { return kube_executor->PreparedAttempt(id); });
    options.admission = kueue.get();
  } else {
    executor = std::make_unique<LocalExecutor>(home, options.cgroups, SelfDir() + "/tau-shim", on_rank_end);
  }
  sched::FifoPolicy policy;
  JobManager jobs(home, store->get(), executor.get(), &policy, SystemClock::Get(), options, &publisher);
  jobs_ptr = &jobs;
  // However main returns, the loops finish their tasks (which use `jobs`)
  // before `jobs` is destroyed: file work first, then the control loop.
  struct StopLoops {
    ControlLoop& files;
    ControlLoop& loop;
    ~StopLoops() {
      files.Stop();
      loop.Stop();
    }
  } stop_loops{files, loop};
  // On Kubernetes, the cluster as reflectors see it, each change handled
  // on the loop; listed once before the store is reconciled with it.
  std::unique_ptr<kubernetes::ClusterCache> cluster;
  // The cluster's nodes and the GPU health their agents report (loop only).
  kubernetes::NodeTable node_table;
  auto fault_node = [&jobs, &kube_executor](const kubernetes::NodeHealthReport& node) {
    jobs.FaultJobsOnNode(kube_executor->AttemptsOnNode(node.name),
                         fmt::format("node {} has a GPU fault ({}): {}", node.name, node.reason, node.message));
  };
  if (on_cluster) {
    using Type = kube::ReflectorEventType;
    auto on = [kube_executor](KubeExecutor::Kind kind) {
      return [kube_executor, kind](Type type, const nlohmann::json& object) { kube_executor->OnObject(kind, type, object); };
    };
    kubernetes::ClusterCache::Handlers handlers;
    handlers.jobs = on(KubeExecutor::Kind::kJob);
    handlers.rayjobs = on(KubeExecutor::Kind::kRayJob);
    handlers.pods = [kube_executor, &node_table, &fault_node](Type type, const nlohmann::json& pod) {
      kube_executor->OnObject(KubeExecutor::Kind::kPod, type, pod);
      // A pod placed on a node already reported Unhealthy.
      if (type == Type::kDeleted || !pod.contains("spec")) return;
      if (const auto* bad = node_table.Unhealthy(pod["spec"].value("nodeName", ""))) fault_node(*bad);
    };
    handlers.nodes = [&node_table, &fault_node](Type type, const nlohmann::json& node) {
      if (auto bad = node_table.OnNode(type, node)) fault_node(*bad);
    };
    handlers.workloads = [&kueue, &jobs](Type type, const nlohmann::json& object) {
      kueue->OnWorkload(type, object);
      jobs.OnAdmissionChanged();
    };
    handlers.local_queues = [&kueue](Type type, const nlohmann::json& object) { kueue->OnLocalQueue(type, object); };
    handlers.cluster_queues = [&kueue](Type type, const nlohmann::json& object) {
      kueue->OnClusterQueue(type, object);
    };
    handlers.priority_classes = [&kueue](Type type, const nlohmann::json& object) {
      kueue->OnPriorityClass(type, object);
    };
    cluster = std::make_unique<kubernetes::ClusterCache>(
        kube_client.get(), [&loop](std::function<void()> task) { loop.Post(std::move(task)); }, std::move(handlers));
    cluster->Start();
    if (Status synced = cluster->WaitSynced(std::chrono::seconds(60)); !synced.ok()) {
      log::Error("server", "cannot follow the cluster", {{"error", synced.ToString()}});
      return 1;
    }
  }
  Status recovered = loop.Call([&] { return jobs.Recover(); });
  if (!recovered.ok()) {
    log::Error("server", "cannot recover the state", {{"error", recovered.ToString()}});
    return 1;
  }
  if (kube_executor) {
    // Jobs on nodes that went Unhealthy while no daemon ran.
    (void)loop.Call([&] {
      for (const kubernetes::NodeHealthReport& bad : node_table.UnhealthyNodes()) fault_node(bad);
      return Status::Ok();
    });
    // Objects of jobs that ended or were removed while no daemon ran.
    (void)loop.Call([&] {
      auto view = publisher.Current();
      kube_executor->DeleteOrphans([&view](const std::string& id) {
        auto job = view->Find(id);
        return job && !store::IsTerminal(job->job.state);
      });
      return Status::Ok();
    });
  }
  // The GPU monitor's threads read NVML; what they read is handled on the loop.
  std::unique_ptr<gpu::GpuMonitor> monitor;
  if (nvml) {
    monitor = std::make_unique<gpu::GpuMonitor>(
        nvml.get(), flags.gpu_poll_interval,
        gpu::GpuMonitor::Callbacks{
            [&loop, &jobs](int index, gpu::GpuSample sample) {
              loop.Post([&jobs, index, sample = std::move(sample)]() mutable { jobs.OnGpuSample(index, std::move(sample)); });
            },
            [&loop, &jobs](gpu::XidEvent event) { loop.Post([&jobs, event] { jobs.OnGpuXid(event); }); },
            [&loop, &jobs](int index, std::optional<std::string> why) {
              loop.Post([&jobs, index, why = std::move(why)]() mutable { jobs.OnGpuXidUnreadable(index, std::move(why)); });
            }});
    monitor->Start();
  }
  // Checkpoints of running jobs are indexed (and pruned) periodically.
  std::function<void()> scan_checkpoints = [&] {
    jobs.RefreshRunningCheckpoints();
    loop.PostAfter(flags.checkpoint_scan_interval, scan_checkpoints);
  };
  loop.PostAfter(flags.checkpoint_scan_interval, scan_checkpoints);
  // Progress of running jobs, from their TAU_METRICS_FILE.
  std::function<void()> follow_progress = [&] {
    jobs.RefreshProgress();
    loop.PostAfter(std::chrono::seconds(2), follow_progress);
  };
  loop.PostAfter(std::chrono::seconds(2), follow_progress);

  ApiServerOptions api_options;
  api_options.bind_address = listen_host;
  api_options.port = listen_port;
  api_options.token = *token;
  api_options.metrics_token = *metrics_token;
  api_options.capacity = capacity;
  api_options.metrics = &registry;
  api_options.max_streams = flags.max_streams;
  if (kube_client) {
    api_options.cluster = kube_client.get();
    api_options.cluster_nodes = [&node_table] { return node_table.Json().dump(); };
    // The pod of a rank: labelled with the job's id and attempt, its
    // completion index the rank (none on a one-worker Job: rank 0).
    api_options.rank_pod = [client = kube_client.get()](const std::string& job_id, int64_t attempt,
                                                        int rank) -> Result<kubernetes::PodRef> {
      kube::ListOptions mine;
      mine.label_selector = fmt::format("{}={},{}={}", kubernetes::kJobIdLabel, job_id, kubernetes::kAttemptLabel, attempt);
      TAU_ASSIGN_OR_RETURN(nlohmann::json pods, client->List(kubernetes::PodsRef(), mine));
      const nlohmann::json* newest = nullptr;
      for (const nlohmann::json& pod : pods["items"]) {
        const nlohmann::json annotations = pod["metadata"].value("annotations", nlohmann::json::object());
        const int index = std::atoi(annotations.value("batch.kubernetes.io/job-completion-index", "0").c_str());
        if (index != rank) continue;
        if (!newest || pod["metadata"].value("creationTimestamp", "") >
                           (*newest)["metadata"].value("creationTimestamp", "")) {
          newest = &pod;
        }
      }
      if (!newest) {
        return NotFoundError(fmt::format("no pod of rank {} of attempt {} of job {} exists", rank, attempt, job_id));
      }
      return kubernetes::PodRef{(*newest)["metadata"].value("namespace", ""), (*newest)["metadata"].value("name", ""),
                                ""};
    };
  }
  auto api = std::make_unique<ApiServer>(home, &loop, &jobs, &publisher, api_options);
  auto port = api->Bind();
  if (!port.ok() && !listen_given && listen_port != 0) {
    // The last run's port is taken now: another one, said in the log.
    log::Warn("server", "the port of the last run is taken; listening on a free one",
              {{"listen", fmt::format("{}:{}", listen_host, listen_port)}, {"error", port.status().ToString()}});
    api_options.port = 0;
    api = std::make_unique<ApiServer>(home, &loop, &jobs, &publisher, api_options);
    port = api->Bind();
  }
  if (!port.ok()) {
    log::Error("server", "cannot listen", {{"error", port.status().ToString()}});
    return 1;
  }
  const bool v6 = listen_host.find(':') != std::string::npos;
  const std::string listen = v6 ? fmt::format("[{}]:{}", listen_host, *port) : fmt::format("{}:{}", listen_host, *port);
  // Written only when it changed: a restart on a full disk writes nothing.
  Status st_listen = stored_listen.ok() && *stored_listen == listen ? Status::Ok()
                                                                     : (*store)->SetSetting(kListenSetting, listen);
  if (Status st = st_listen; !st.ok()) {
    log::Warn("server", "cannot store the listen address; the next run may take another port",
              {{"error", st.ToString()}});
  }
  std::thread http([&] { api->Serve(); });
  // Clients on this machine reach an any-address listener on loopback.
  const std::string client_host = listen_host == "0.0.0.0" ? "127.0.0.1"
                                  : listen_host == "::"    ? "[::1]"
                                  : v6                     ? "[" + listen_host + "]"
                                                           : listen_host;
  std::string url = fmt::format("http://{}:{}", client_host, *port);
  nlohmann::json info = {{"pid", ::getpid()}, {"port", *port}, {"url", url}, {"listen", listen}, {"version", kVersion}};
  if (Status st = WriteServerJson(home.server_json(), info.dump() + "\n"); !st.ok()) {
    if (st.code() != StatusCode::kResourceExhausted) {
      log::Error("server", "cannot write server.json", {{"error", st.ToString()}});
      api->Stop();
      http.join();
      return 1;
    }
    // A full disk and no server.json to rewrite: serve all the same, for
    // clients told the address (TAU_SERVER).
    log::Error("server",
               "DiskFull: cannot write server.json; tau finds this taugridd only with TAU_SERVER=" + url +
                   " until it is restarted with free space",
               {{"error", st.ToString()}});
  }
  log::Info("server", "listening", {{"url", url}, {"home", home.root().string()}, {"pid", std::to_string(::getpid())}});

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log::Info("server", "stopping; running jobs keep running", {{"signal", strsignal(sig)}});
  // Emptied of its address rather than removed, so the next daemon can
  // rewrite it in place even on a full disk (clients read no "url" as no
  // daemon).
  if (!RewriteFileInPlace(home.server_json(), "{\"stopped\": true}\n").ok()) fs::remove(home.server_json(), ec);
  api->Stop();
  http.join();
  if (monitor) monitor->Stop();
  if (cluster) cluster->Stop();
  files.Stop();
  loop.Call([&] { jobs.FlushDeferred(); });  // what is recorded in memory only
  loop.Stop();
  return 0;
}

}  // namespace
}  // namespace tau::server

int main(int argc, char** argv) { return tau::server::Main(argc, argv); }
