// The node agent (taugrid-agent) end to end on kwok nodes of the backend's
// test cluster, its GPUs from the fake NVML library: a fatal fault taints
// the node and moves the job on it; one agent reports per node; faults
// survive a restart. Linked into kube_backend_k8s_test (its cluster, its
// main).
#include "k8s/kube_backend_cluster.h"

namespace tau {
namespace {

using namespace kube_backend_test;  // NOLINT
using ::testing::HasSubstr;
using ::testing::Not;

// The nodes the pods of one attempt of a job are placed on.
std::set<std::string> NodesOf(const std::string& job_id, int attempt) {
  kube::ListOptions mine;
  mine.label_selector = "taugrid.io/job-id=" + job_id + ",taugrid.io/attempt=" + std::to_string(attempt);
  auto pods = Cluster::Get()->client().List({"", "v1", "pods", "", "", ""}, mine);
  std::set<std::string> nodes;
  if (!pods.ok()) return nodes;
  for (const json& pod : (*pods)["items"]) {
    const std::string node = pod["spec"].value("nodeName", "");
    if (!node.empty()) nodes.insert(node);
  }
  return nodes;
}

json GetNode(const std::string& name) {
  auto node = Cluster::Get()->client().Get({"", "v1", "nodes", "", name, ""});
  return node.ok() ? *node : json::object();
}

std::string NodeCondition(const json& node) {
  for (const json& c : node["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "TauGridGPUHealthy") return c.value("status", "");
  }
  return "";
}

bool AgentTainted(const json& node) {
  for (const json& t : node["spec"].value("taints", json::array())) {
    if (t.value("key", "") == "taugrid.io/gpu-unhealthy" && t.value("effect", "") == "NoSchedule") return true;
  }
  return false;
}

// taugrid-agent on one kwok node, its GPUs from the fake NVML library.
class Agent {
 public:
  // `extra`: more flags; `kubeconfig`: another than the chart's agent
  // identity.
  Agent(std::string node, std::string scenario, int metrics_port, const std::string& tag = "",
        std::vector<std::string> extra = {}, std::string kubeconfig = "") {
    if (kubeconfig.empty()) kubeconfig = Cluster::Get()->agent_kubeconfig();
    log_ = fs::path(g_work_dir) / ("agent-" + node + tag + ".log");
    std::ofstream(log_, std::ios::trunc).close();  // not an earlier run's, before the agent opens it
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(log_.c_str(), "w", stdout);
      (void)out;
      ::dup2(STDOUT_FILENO, STDERR_FILENO);
      ::setenv("TAU_NVML_LIBRARY", TAU_FAKE_NVML_PATH, 1);
      ::setenv("TAU_FAKE_NVML", scenario.c_str(), 1);
      std::vector<std::string> args = {testing::BinPath("taugrid-agent"), "--node", node, "--kubeconfig", kubeconfig,
                                       "--poll-interval", "200ms", "--metrics-address", "127.0.0.1", "--metrics-port",
                                       std::to_string(metrics_port), "--log-format", "logfmt",
                                       // Where the chart puts the lease (and its Role).
                                       "--lease-namespace", "kube-node-lease",
                                       // A pod's name: a restarted agent takes its lease back at once.
                                       "--identity", "agent-" + node};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~Agent() { Stop(SIGTERM); }
  void Stop(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Sends `signal` and waits up to `seconds` for the agent to end; true
  // when it did (it is killed otherwise).
  bool StopWithin(int signal, int seconds) {
    if (pid_ <= 0) return true;
    ::kill(pid_, signal);
    for (int i = 0; i < seconds * 20; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Stop(SIGKILL);
    return false;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
};

// The agent's /metrics (curl through sh: RunCommand does not search PATH).
testing::CommandResult Scrape(int port) {
  return testing::RunCommand({"/bin/sh", "-c", "curl -sf http://127.0.0.1:" + std::to_string(port) + "/metrics"});
}

std::string FakeGpus(int count, const std::string& events) {
  json devices = json::array();
  for (int i = 0; i < count; ++i) {
    devices.push_back({{"uuid", "GPU-kwok-" + std::to_string(i)}, {"name", "NVIDIA H100 80GB HBM3"},
                       {"memory_total_mib", 81559}, {"temperature_c", 40}, {"power_mw", 70000},
                       {"utilization_gpu", 0}, {"ecc_uncorrected", 0}, {"ecc_corrected", 0}});
  }
  return json{{"driver_version", "580.159.03"}, {"cuda_version", 13000}, {"devices", devices},
              {"events", json::parse(events)}}
      .dump();
}

// An operator's clear of every GPU fault of `node` (the agent acts on it).
bool ClearFaults(const std::string& node) {
  auto cleared = Cluster::Get()->client().MergePatch(
      {"", "v1", "nodes", "", node, ""}, {{"metadata", {{"annotations", {{"taugrid.io/gpu-clear", "all"}}}}}});
  EXPECT_TRUE(cleared.ok()) << cleared.status().ToString();
  return cleared.ok();
}

// Replaces a fake NVML scenario at once (the library rereads it).
void WriteScenario(const fs::path& path, const std::string& scenario) {
  std::ofstream(path.string() + ".tmp") << scenario;
  fs::rename(path.string() + ".tmp", path);
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// The node agent end to end: a fatal XID on a GPU of the node a job runs
// on makes the node's condition False and taints it; the job is stopped
// and retried, uncharged, on the other node, where kube-scheduler also
// puts new work; an operator's clear removes the taint.
TEST_F(KubeBackendTest, AFatalGpuFaultTaintsItsNodeAndTheJobOnItMovesToTheOtherNode) {
  if (home_.empty()) {
    return;
  }
  Daemon d(home_);
  ASSERT_TRUE(d.Start(kHold)) << d.log();
  const std::string id = Submit(d, "on-faulty-node", 4);
  ASSERT_TRUE(Eventually(60, [&] { return d.State("on-faulty-node") == "Running" && NodesOf(id, 1).size() == 1; }))
      << d.log();
  const std::string bad = *NodesOf(id, 1).begin();

  const fs::path scenario = fs::path(g_work_dir) / "fake-nvml.json";
  std::ofstream(scenario) << FakeGpus(8, "[]");
  const int port = FreePort();
  auto agent = std::make_unique<Agent>(bad, scenario.string(), port);
  ASSERT_TRUE(Eventually(30, [&] { return NodeCondition(GetNode(bad)) == "True"; })) << agent->log();
  EXPECT_FALSE(AgentTainted(GetNode(bad)));

  // XID 95 (uncontained ECC error) on GPU 1: within 10 s the node says so.
  WriteScenario(scenario, FakeGpus(8, R"([{"at_s": 0, "gpu": 1, "xid": 95}])"));
  ASSERT_TRUE(Eventually(10, [&] {
    json node = GetNode(bad);
    return NodeCondition(node) == "False" && AgentTainted(node);
  })) << GetNode(bad).dump(2) << "\n" << agent->log();
  json node = GetNode(bad);
  json gpus = json::parse(node["metadata"]["annotations"].value("taugrid.io/gpu-health", "[]"));
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[1]["health"], "Unhealthy");
  EXPECT_EQ(gpus[0]["health"], "Healthy");
  // kubectl describe node shows why: a Warning Event on the Node.
  kube::ListOptions on_node;
  on_node.field_selector = "involvedObject.kind=Node,involvedObject.name=" + bad;
  auto node_events = Cluster::Get()->client().List({"", "v1", "events", "default", "", ""}, on_node);
  ASSERT_TRUE(node_events.ok()) << node_events.status().ToString();
  bool warned = false;
  for (const json& e : (*node_events)["items"]) {
    warned |= e.value("type", "") == "Warning" && e.value("reason", "") == "XidFatal" &&
              e.value("message", "").find("XID 95") != std::string::npos;
  }
  EXPECT_TRUE(warned) << node_events->dump(2) << "\n" << agent->log();

  // The job on it is stopped and retried on the other node, not charged.
  ASSERT_TRUE(Eventually(90, [&] {
    return d.Status("on-faulty-node").value("attempt", 0) == 2 && d.State("on-faulty-node") == "Running" &&
           NodesOf(id, 2).size() == 1;
  })) << d.Status("on-faulty-node").dump(2) << "\n" << d.log();
  EXPECT_NE(*NodesOf(id, 2).begin(), bad);
  auto events = d.Tau({"events", "on-faulty-node"});
  EXPECT_THAT(events.out, HasSubstr("GpuFault")) << events.out << events.err;
  // New work goes to the healthy node too (kube-scheduler, the taint).
  const std::string fresh = Submit(d, "after-fault", 4);
  ASSERT_TRUE(Eventually(60, [&] { return d.State("after-fault") == "Running" && NodesOf(fresh, 1).size() == 1; }))
      << d.log();
  EXPECT_NE(*NodesOf(fresh, 1).begin(), bad);

  // tau nodes shows it; the agent's metrics carry dcgm-exporter's names.
  auto nodes = d.Tau({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("Unhealthy"));
  EXPECT_THAT(nodes.out, HasSubstr("tainted"));
  EXPECT_THAT(nodes.out, HasSubstr("GPU 1 GPU-kwok-1: Unhealthy"));
  auto metrics = Scrape(port);
  EXPECT_THAT(metrics.out, HasSubstr("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\",UUID=\"GPU-kwok-1\""));
  EXPECT_THAT(metrics.out, HasSubstr("taugrid_agent_node_healthy{node=\"" + bad + "\"} 0"));

  // The agent is killed and replaced (a pod restart, an upgrade). NVML
  // does not replay the XID to the new one; the Node's record keeps the
  // fault until an operator clears it.
  WriteScenario(scenario, FakeGpus(8, "[]"));
  agent->Stop(SIGKILL);
  const int port2 = FreePort();
  agent = std::make_unique<Agent>(bad, scenario.string(), port2, "-2");
  ASSERT_TRUE(Eventually(30, [&] { return agent->log().find("stays Unhealthy") != std::string::npos; }))
      << agent->log();
  {
    EXPECT_TRUE(Eventually(10, [&] {
      return Scrape(port2).out.find("taugrid_agent_node_healthy{node=\"" + bad + "\"} 0") != std::string::npos;
    })) << Scrape(port2).out;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several polls of the new agent
  node = GetNode(bad);
  EXPECT_EQ(NodeCondition(node), "False") << node.dump(2) << "\n" << agent->log();
  EXPECT_TRUE(AgentTainted(node)) << node.dump(2);

  // After the repair the operator clears the fault: the taint goes.
  ASSERT_TRUE(ClearFaults(bad));
  EXPECT_TRUE(Eventually(30, [&] {
    json n = GetNode(bad);
    return NodeCondition(n) == "True" && !AgentTainted(n) &&
           !n["metadata"].value("annotations", json::object()).contains("taugrid.io/gpu-clear");
  })) << GetNode(bad).dump(2) << "\n" << agent->log();

  auto cancel = d.Tau({"cancel", "on-faulty-node", "after-fault"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(Eventually(60, [&] { return ObjectsOf("jobs", id) == 0 && ObjectsOf("jobs", fresh) == 0; }));
}

// A copy of the agent's kubeconfig that points at `server` instead.
std::string KubeconfigFor(const std::string& server, const std::string& name) {
  std::ifstream in(Cluster::Get()->agent_kubeconfig());
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const size_t at = config.find("server: ");
  const size_t end = config.find('\n', at);
  config.replace(at, end - at, "server: " + server);
  const fs::path path = fs::path(g_work_dir) / name;
  std::ofstream(path) << config;
  return path.string();
}

// One agent per node (the node's Lease); a fault found while the API
// server cannot be reached survives a restart (the state file); a stop
// while the API server does not answer is prompt.
TEST_F(KubeBackendTest, OneAgentReportsPerNodeAndKeepsItsFaultsOnTheNode) {
  if (home_.empty()) {
    return;
  }
  auto nodes = Cluster::Get()->client().List({"", "v1", "nodes", "", "", ""});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  std::string name;
  for (const json& n : (*nodes)["items"]) {
    if (NodeCondition(n) != "False") name = n["metadata"]["name"];
  }
  ASSERT_FALSE(name.empty()) << nodes->dump(2);
  const fs::path scenario = fs::path(g_work_dir) / "fake-nvml-lease.json";
  std::ofstream(scenario) << FakeGpus(8, "[]");

  // A second agent on the node waits, saying who holds it; when the first
  // stops it takes over at once (the first released the lease).
  auto first = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-first", std::vector<std::string>{"--identity", "first"});
  ASSERT_TRUE(Eventually(30, [&] { return first->log().find("reporting for the node") != std::string::npos; }))
      << first->log();
  auto second = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-second", std::vector<std::string>{"--identity", "second"});
  ASSERT_TRUE(Eventually(30, [&] { return second->log().find("another agent reports for this node") != std::string::npos; }))
      << second->log();
  EXPECT_THAT(second->log(), HasSubstr("holder=first"));
  EXPECT_THAT(second->log(), Not(HasSubstr("reporting for the node")));
  auto lease = Cluster::Get()->client().Get({"coordination.k8s.io", "v1", "leases", "kube-node-lease", "taugrid-agent-" + name, ""});
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "first");
  // Both see XID 95 on GPU 3; the holder reports it; the operator clears it
  // through the holder. The agent that takes over keeps it cleared: it
  // starts from the Node's record, not from what it saw while waiting.
  WriteScenario(scenario, FakeGpus(8, R"([{"at_s": 0, "gpu": 3, "xid": 95}])"));
  ASSERT_TRUE(Eventually(30, [&] { return AgentTainted(GetNode(name)); })) << first->log();
  ASSERT_TRUE(Eventually(30, [&] { return second->log().find("XID event") != std::string::npos; })) << second->log();
  ASSERT_TRUE(ClearFaults(name));
  ASSERT_TRUE(Eventually(30, [&] { return NodeCondition(GetNode(name)) == "True" && !AgentTainted(GetNode(name)); }))
      << first->log();
  ASSERT_TRUE(first->StopWithin(SIGTERM, 20));
  ASSERT_TRUE(Eventually(15, [&] { return second->log().find("reporting for the node") != std::string::npos; }))
      << second->log();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several polls of the new holder
  EXPECT_EQ(NodeCondition(GetNode(name)), "True") << second->log();
  EXPECT_FALSE(AgentTainted(GetNode(name))) << "a fault the operator cleared came back\n" << second->log();
  WriteScenario(scenario, FakeGpus(8, "[]"));

  // The holder is killed (no release); a third agent, waiting, finds XID 95
  // on GPU 5 after the holder's last renewal: the holder never reported it,
  // so the third keeps it when the lease runs out and it takes over.
  const fs::path third_scenario = fs::path(g_work_dir) / "fake-nvml-lease-third.json";
  std::ofstream(third_scenario) << FakeGpus(8, "[]");
  auto third = std::make_unique<Agent>(name, third_scenario.string(), FreePort(), "-third",
                                       std::vector<std::string>{"--identity", "third"});
  ASSERT_TRUE(Eventually(30, [&] { return third->log().find("another agent reports for this node") != std::string::npos; }))
      << third->log();
  // While it waits, the lease's Role goes (an RBAC rollout gone wrong):
  // having seen a holder, it goes on waiting rather than write beside it.
  const kube::ResourceRef role_ref{"rbac.authorization.k8s.io", "v1", "roles", "kube-node-lease", "taugrid-agent", ""};
  auto role = Cluster::Get()->client().Get(role_ref);
  ASSERT_TRUE(role.ok()) << role.status().ToString();
  ASSERT_TRUE(Cluster::Get()->client().Delete(role_ref).ok());
  ASSERT_TRUE(Eventually(30, [&] { return third->log().find("it goes on waiting") != std::string::npos; }))
      << third->log();
  EXPECT_THAT(third->log(), Not(HasSubstr("reporting for the node")));
  json restored_role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                        {"kind", "Role"},
                        {"metadata", {{"name", "taugrid-agent"}, {"namespace", "kube-node-lease"},
                                      {"labels", (*role)["metadata"].value("labels", json::object())}}},
                        {"rules", (*role)["rules"]}};
  ASSERT_TRUE(Cluster::Get()->client().Create(role_ref, restored_role).ok());
  second->Stop(SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  WriteScenario(third_scenario, FakeGpus(8, R"([{"at_s": 0, "gpu": 5, "xid": 95}])"));
  ASSERT_TRUE(Eventually(30, [&] { return third->log().find("XID event") != std::string::npos; })) << third->log();
  ASSERT_TRUE(Eventually(60, [&] { return third->log().find("reporting for the node") != std::string::npos; }))
      << third->log();
  ASSERT_TRUE(Eventually(30, [&] {
    json n = GetNode(name);
    return NodeCondition(n) == "False" && AgentTainted(n);
  })) << "a fault the dead holder never reported was lost\n" << GetNode(name).dump(2) << "\n" << third->log();
  EXPECT_THAT(third->log(), HasSubstr("a GPU fault found after the previous agent last renewed the lease is kept"));
  ASSERT_TRUE(ClearFaults(name));
  ASSERT_TRUE(Eventually(30, [&] { return NodeCondition(GetNode(name)) == "True" && !AgentTainted(GetNode(name)); }))
      << third->log();
  third->Stop(SIGTERM);
  // A stopped agent leaves no Lease behind (an uninstall leaves none).
  auto gone = Cluster::Get()->client().Get({"coordination.k8s.io", "v1", "leases", "kube-node-lease", "taugrid-agent-" + name, ""});
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << (gone.ok() ? gone->dump(2) : gone.status().ToString());

  // Cut off from the API server (nothing listens there), an agent finds
  // XID 95 and keeps it in its state file; killed, the next agent (the API
  // server reachable again, NVML not replaying the XID) restores it and
  // the node is tainted.
  const fs::path state = fs::path(g_work_dir) / "agent-state" / "faults.json";
  fs::create_directories(state.parent_path());
  std::ofstream(scenario.string() + ".xid") << FakeGpus(8, R"([{"at_s": 0, "gpu": 2, "xid": 95}])");
  const std::string unreachable = KubeconfigFor("https://127.0.0.1:" + std::to_string(FreePort()), "unreachable.kubeconfig");
  auto cut_off = std::make_unique<Agent>(name, scenario.string() + ".xid", FreePort(), "-cut-off",
                                         std::vector<std::string>{"--state-file", state.string()}, unreachable);
  ASSERT_TRUE(Eventually(30, [&] {
    std::ifstream in(state);
    std::stringstream text;
    text << in.rdbuf();
    return text.str().find("GPU-kwok-2") != std::string::npos;
  })) << cut_off->log();
  cut_off->Stop(SIGKILL);
  auto restarted = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-restarted",
                                           std::vector<std::string>{"--state-file", state.string()});
  ASSERT_TRUE(Eventually(30, [&] {
    json n = GetNode(name);
    return NodeCondition(n) == "False" && AgentTainted(n);
  })) << GetNode(name).dump(2) << "\n" << restarted->log();
  EXPECT_THAT(restarted->log(), HasSubstr("stays Unhealthy"));
  // Cleared by the operator: the state file forgets it too.
  ASSERT_TRUE(ClearFaults(name));
  EXPECT_TRUE(Eventually(30, [&] {
    json n = GetNode(name);
    std::ifstream in(state);
    std::stringstream text;
    text << in.rdbuf();
    return NodeCondition(n) == "True" && !AgentTainted(n) && text.str() == "[]";
  })) << GetNode(name).dump(2) << "\n" << restarted->log();
  restarted->Stop(SIGTERM);

  // An API server that accepts connections and never answers: SIGTERM
  // still ends the agent promptly (well within a pod's 30 s grace).
  int frozen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(frozen, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(frozen, 64), 0);
  ASSERT_EQ(::getsockname(frozen, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string silent = KubeconfigFor("https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "silent.kubeconfig");
  auto stuck = std::make_unique<Agent>(name, scenario.string(), FreePort(), "-stuck", std::vector<std::string>{}, silent);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // inside its first call
  EXPECT_TRUE(stuck->StopWithin(SIGTERM, 15)) << stuck->log();
  ::close(frozen);
}


}  // namespace
}  // namespace tau
