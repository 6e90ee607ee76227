#include "server/local_ray.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "common/strings.h"

namespace tau::server {
namespace {

// Runs on the Python that has Ray (its SDK is Python only).
constexpr char kScript[] = R"py("""TauGrid's local Ray cluster for one attempt of a rayjob (docs/execution.md).

  python3 -c SCRIPT TEMP_DIR NODES CPUS GPUS MEMORY LOGS_DIR SUBMISSION_ID ENTRYPOINT INFO_FILE

Starts a Ray head that offers no CPUs or GPUs (it only coordinates, as on
KubeRay), then NODES worker nodes of CPUS, GPUS and MEMORY bytes each, one
after the other, all with --node-ip-address 127.0.0.1, free ports and a
token of their own (RAY_AUTH_MODE=token); submits ENTRYPOINT as the Ray job
SUBMISSION_ID; copies its log to stdout until it ends; stops every process
below this one (SIGTERM, SIGKILL after 3 s); keeps Ray's logs in LOGS_DIR
and removes TEMP_DIR. INFO_FILE gets, first, the Ray and Python it runs on
(JSON, for the job's evidence). Exits 0 when the Ray job succeeded, else with the
driver's exit code (1 when Ray gives none), or 143 when stopped by SIGTERM.
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time

START_TIMEOUT_S = float(os.environ.get("TAU_RAY_START_TIMEOUT", "180"))
RAY_MAIN = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; sys.exit(main())"


def say(text):
    print("tau: " + text, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def become_subreaper():
    """Processes that leave this one's tree (Ray's workers, the job's driver
    in a session of its own) are reparented here when their parent ends, so
    stop_cluster finds them all."""
    import ctypes
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def descendants():
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found = [os.getpid()]
    for pid in found:
        found.extend(child for child, parent in parents.items() if parent == pid)
    return found[1:]


def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def stop_cluster(grace_s=3.0):
    """SIGTERM to every process below this one, SIGKILL after `grace_s`.
    The job's driver has ended (or had the job's whole grace period when
    the job was stopped); Ray's own processes need no more than this."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        pids = descendants()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            reap()
            pids = descendants()
        if not pids:
            return


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class Cluster:
    def __init__(self, temp_dir, nodes, cpus, gpus, memory):
        self.temp_dir = temp_dir
        self.nodes = nodes
        self.dashboard = ""
        self.starts = []  # (name, Popen, output file)
        env = dict(os.environ)
        env.update({
            # `python` in the entrypoint is the one Ray runs on.
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(24),
            "RAY_USAGE_STATS_ENABLED": "0",
            # Workers give up quickly once the head is gone.
            "RAY_gcs_rpc_server_reconnect_timeout_s": "10",
        })
        env.pop("RAY_ADDRESS", None)
        self.env = env
        os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_USAGE_STATS_ENABLED")})
        self.cpus, self.gpus, self.memory = cpus, gpus, memory
        visible = [g for g in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
        self.gpu_lists = [visible[i * gpus:(i + 1) * gpus] for i in range(nodes)]

    def _start(self, name, args, env):
        out_path = os.path.join(self.temp_dir, name + ".out")
        out = open(out_path, "w")
        cmd = [sys.executable, "-c", RAY_MAIN, "start", "--block", "--node-ip-address", "127.0.0.1",
               "--temp-dir", self.temp_dir, "--disable-usage-stats",
               # Ray picks free ports for everything else; this one is fixed by default.
               "--dashboard-agent-listen-port", "0"] + args
        self.starts.append((name, subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                                   stderr=subprocess.STDOUT), out_path))

    def start_head(self):
        self.gcs = gcs = free_port()
        self.dashboard = "http://127.0.0.1:" + free_port()
        self._start("head", ["--head", "--port", gcs, "--dashboard-host", "127.0.0.1",
                             "--dashboard-port", self.dashboard.rsplit(":", 1)[1],
                             "--ray-client-server-port", free_port(), "--include-dashboard", "true",
                             "--num-cpus", "0", "--num-gpus", "0"], self.env)

    def start_worker(self, i):
        """Starts worker node i; Ray names a node's files by the order of
        its start, so nodes start one after the other."""
        object_store = max(80 * 1024 * 1024, self.memory * 3 // 10)
        env = dict(self.env, TAU_WORKER_INDEX=str(i), CUDA_VISIBLE_DEVICES=",".join(self.gpu_lists[i]))
        self._start(f"worker-{i}", ["--address", "127.0.0.1:" + self.gcs, "--num-cpus", str(self.cpus),
                                    "--num-gpus", str(self.gpus), "--memory", str(self.memory),
                                    "--object-store-memory", str(object_store)], env)

    def check_alive(self):
        for name, proc, out_path in self.starts:
            if proc.poll() is not None:
                raise RuntimeError(f"Ray's {name} node exited with code {proc.returncode}; its output:\n"
                                   + tail(out_path))

    def wait_nodes(self, count, deadline):
        """Waits until `count` nodes are alive (the head counts)."""
        from ray.util.state import list_nodes
        why = "no answer yet"
        while True:
            self.check_alive()
            try:
                alive = list_nodes(address=self.dashboard, filters=[("state", "=", "ALIVE")],
                                   raise_on_missing_output=False, timeout=5)
                if len(alive) >= count:
                    return
                why = f"{len(alive)} of {count} nodes alive"
            except Exception as e:  # the dashboard is not up yet
                why = str(e).split("\n")[0]
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray cluster was not up after {START_TIMEOUT_S:.0f} s ({why})")
            time.sleep(0.5)


def submit(client, submission_id, entrypoint, cluster, deadline):
    """Submits once: a retry after an error that created the job finds it."""
    while True:
        cluster.check_alive()
        try:
            client.submit_job(entrypoint=entrypoint, submission_id=submission_id)
            return
        except Exception as e:  # the job agent may register after the nodes
            if "already exists" in str(e):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"Ray refused the job: {e}")
        time.sleep(0.5)


def follow(client, submission_id):
    import asyncio
    import logging
    logging.getLogger("ray.dashboard.modules.job.sdk").setLevel(logging.WARNING)

    async def copy():
        async for chunk in client.tail_job_logs(submission_id):
            sys.stdout.write(chunk)
            sys.stdout.flush()

    asyncio.run(copy())


def write_info(path):
    # From the package's metadata: importing ray here would fix its view of
    # RAY_AUTH_MODE before Cluster sets it.
    import importlib.metadata
    import json
    import platform
    with open(path + ".tmp", "w") as f:
        json.dump({"version": importlib.metadata.version("ray"), "python": platform.python_version(),
                   "python_executable": sys.executable}, f)
    os.replace(path + ".tmp", path)


def main():
    temp_dir, nodes, cpus, gpus, memory, logs_dest, submission_id, entrypoint, info_file = sys.argv[1:10]
    try:
        write_info(info_file)
    except Exception as e:  # a broken install: say so rather than a traceback
        say(f"Ray is not installed for {sys.executable}: {e}")
        sys.exit(1)
    os.makedirs(temp_dir, exist_ok=True)
    become_subreaper()
    cluster = Cluster(temp_dir, int(nodes), int(cpus), int(gpus), int(memory))
    stopping = []

    def on_term(signum, frame):
        stopping.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    code = 1
    client = None
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        say(f"starting a local Ray cluster: a head and {cluster.nodes} worker node(s) of {cpus} CPU(s), "
            f"{gpus} GPU(s) and {int(memory) >> 20} MiB each")
        cluster.start_head()
        cluster.wait_nodes(1, deadline)
        for i in range(cluster.nodes):
            cluster.start_worker(i)
            cluster.wait_nodes(2 + i, deadline)
        say(f"the Ray cluster is up; its dashboard: {cluster.dashboard}")
        from ray.job_submission import JobSubmissionClient, JobStatus
        client = JobSubmissionClient(cluster.dashboard)
        submit(client, submission_id, entrypoint, cluster, deadline)
        say(f"submitted Ray job {submission_id}: {entrypoint}")
        follow(client, submission_id)
        info = client.get_job_info(submission_id)
        while not info.status.is_terminal():
            time.sleep(0.2)
            info = client.get_job_info(submission_id)
        # Ray's message repeats the end of the log after the first line.
        message = (info.message or "").split("\n")[0].split(", last available logs")[0]
        say(f"Ray job {submission_id} {info.status.value}" + (f": {message}" if message else ""))
        if info.status == JobStatus.SUCCEEDED:
            code = 0
        elif info.driver_exit_code:
            code = info.driver_exit_code
    except KeyboardInterrupt:
        say("stopping the Ray job")
        if client is not None:
            try:
                client.stop_job(submission_id)
            except Exception:
                pass
        code = 143
    except Exception as e:
        say(f"the local Ray cluster failed: {e}")
        code = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_cluster()
        logs = os.path.join(temp_dir, "session_latest", "logs")
        if os.path.isdir(logs):
            shutil.rmtree(logs_dest, ignore_errors=True)
            shutil.copytree(logs, logs_dest, symlinks=False, ignore_dangling_symlinks=True,
                            dirs_exist_ok=True)
        shutil.rmtree(temp_dir, ignore_errors=True)
    sys.exit(code)


main()
)py";

}  // namespace

const char* LocalRayScript() { return kScript; }

std::vector<std::string> LocalRayCommand(const LocalRaySetup& s) {
  return {s.python,
          "-c",
          kScript,
          s.temp_dir,
          std::to_string(s.nodes),
          std::to_string(s.cpus_per_node),
          std::to_string(s.gpus_per_node),
          std::to_string(s.memory_per_node),
          s.logs_dir,
          s.submission_id,
          s.entrypoint,
          s.info_file};
}

int AttemptRanks(const spec::JobSpec& spec) {
  if (spec.run.workload_kind == spec::WorkloadKind::kRayJob) return 1;
  return static_cast<int>(std::max<int64_t>(1, spec.compute.workers));
}

RankShare AttemptRankShare(const spec::JobSpec& spec) {
  RankShare share{spec.compute.cpus.milli(), spec.compute.memory.milli() / 1000};
  if (spec.run.workload_kind == spec::WorkloadKind::kRayJob) {
    constexpr int64_t kHeadCpusMilli = 1000;
    constexpr int64_t kHeadMemoryBytes = int64_t{2} << 30;
    share.cpus_milli = share.cpus_milli * spec.compute.workers + kHeadCpusMilli;
    share.memory_bytes = share.memory_bytes * spec.compute.workers + kHeadMemoryBytes;
  }
  return share;
}

Result<std::string> FindRayPython(const std::string& ray_program, const std::string& path) {
  std::string program = ray_program;
  if (program.empty()) {
    for (const std::string& dir : Split(path, ':')) {
      if (dir.empty()) continue;
      std::string candidate = dir + "/ray";
      if (::access(candidate.c_str(), X_OK) == 0) {
        program = candidate;
        break;
      }
    }
  }
  if (!program.empty() && ::access(program.c_str(), X_OK) != 0) {
    return FailedPreconditionError(fmt::format(
        "the Ray program {} (taugridd --ray, TAU_RAY) is not there or cannot be run", program));
  }
  if (program.empty()) {
    return FailedPreconditionError(
        "workload_kind rayjob runs on a local Ray cluster, and Ray is not installed where taugridd can find "
        "it: install it (python3 -m pip install 'ray[default]') so that `ray` is on taugridd's PATH, or point "
        "TAU_RAY (taugridd --ray) at its `ray` program; or run the job on a Kubernetes cluster with KubeRay "
        "(`tau render` writes the RayJob)");
  }
  std::ifstream in(program);
  std::string first;
  std::getline(in, first);
  if (!in && first.empty()) {
    return FailedPreconditionError(fmt::format("cannot read the Ray program {}", program));
  }
  if (first.rfind("#!", 0) != 0) {
    return FailedPreconditionError(fmt::format(
        "{} is not the `ray` script pip installs (it has no #! line naming its Python)", program));
  }
  std::string python = first.substr(2);
  while (!python.empty() && (python.back() == '\r' || python.back() == ' ')) python.pop_back();
  while (!python.empty() && python.front() == ' ') python.erase(0, 1);
  // "#!/usr/bin/env python3" names the interpreter through env.
  std::vector<std::string> words = Split(python, ' ');
  if (words.size() == 2 && words[0] == "/usr/bin/env") python = words[1];
  else if (!words.empty()) python = words[0];
  if (python.find('/') != std::string::npos && ::access(python.c_str(), X_OK) != 0) {
    return FailedPreconditionError(
        fmt::format("the Python that runs {} ({}) is not there any more; reinstall Ray", program, python));
  }
  return python;
}

}  // namespace tau::server
