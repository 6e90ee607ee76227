#!/usr/bin/env python3
"""`helm install` of charts/taugrid end to end: `tau` against the installed
control plane runs jobs, and `helm upgrade` keeps the jobs and the database.

    chart_e2e_test.py SOURCE_DIR BUILD_DIR WORK_DIR

The test cluster (scripts/k8s-env, kwok's general pod stages) has no
container runtime: kwok plays every pod. So this test is the kubelet of the
release's one pod that must really run, taugridd's: it reads the
Deployment's pod template from the API server, as the chart rendered it,
and runs its container from the image scripts/build-image writes, unpacked
into a root folder, with what a kubelet gives a container:

- the container's command and args, the image's Env plus the container's
  env, and KUBERNETES_SERVICE_HOST/PORT naming the API server;
- the pod's user and group (securityContext runAsUser/runAsGroup, fsGroup
  owning the state volume) and a read-only root when the container asks;
- its volumes: the state PVC as the folder of the PersistentVolume it is
  bound to, emptyDir as a fresh folder, and the ServiceAccount's token
  (`kubectl create token` for the pod's serviceAccountName), the cluster CA
  and the namespace in /var/run/secrets/kubernetes.io/serviceaccount;
- a private mount namespace with its own /proc (unshare --mount, chroot).

The pod's network is the host's. When the Deployment's template changes
(`helm upgrade`), the pod is replaced as strategy Recreate does: the old
process gets SIGTERM and ends before the new one starts, on the same PV.

The scenario: install (--wait: the Deployment and the agent DaemonSet on
both GPU nodes Available, the state PVC Bound, the ClusterQueue Active in
Kueue, a LocalQueue in each workspace); the token through the pod (`tau server token`, as `kubectl
exec` would run it); `tau run` of a job through Kueue to Succeeded; an
upgrade that adds a server flag (the pod replaced): the finished job, its
events and the database are still there, and a second job is held running;
a second upgrade: the running job is adopted at attempt 1 with its one
Job object, then cancelled (its objects deleted); both upgrades keep the
same PVC; uninstall stops the pod and leaves no object of the release but
the state PVC (the workspace namespaces go).

Needs root (the cluster, chroot, mounts); exit 77 (skipped) saying why
without it. Exit 0 passed, 1 failed.
"""

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "image"))
import image_test  # noqa: E402  (read_layout, unpack)

NAMESPACE = "taugrid-system"
RELEASE = "taugrid"
WORKSPACE = "team-vision"
HOLD = ["--pod-annotation", "pod-complete.stage.kwok.x-k8s.io/delay=1h",
        "--pod-annotation", "pod-complete.stage.kwok.x-k8s.io/jitter-delay=1h"]
failures = []


def fail(what):
    failures.append(what)
    print(f"FAIL: {what}", file=sys.stderr)


def check(ok, what):
    if not ok:
        fail(what)
    return ok


def eventually(seconds, predicate):
    """A limit on waiting for the cluster, not a timing assertion."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.5)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, source, work):
        self.source = source
        self.dir = os.path.join(work, "cluster")
        self.k8s_env = os.path.join(source, "scripts", "k8s-env")
        self.env = None

    def up(self):
        os.makedirs(self.dir, exist_ok=True)
        r = subprocess.run([self.k8s_env, "up", self.dir], env=dict(os.environ, K8S_ENV_POD_STAGES="general"))
        if r.returncode != 0:
            return False
        self.env = {}
        with open(os.path.join(self.dir, "env")) as f:
            for line in f:
                if "=" in line and not line.startswith(("#", "export")):
                    k, v = line.strip().split("=", 1)
                    self.env[k] = v.strip("'")
        return True

    def down(self):
        if os.path.exists(os.path.join(self.dir, "pids")):
            subprocess.run([self.k8s_env, "down", self.dir], capture_output=True)

    def tool_env(self, work):
        env = dict(os.environ)
        env["PATH"] = self.env["K8S_ENV_BIN"] + ":" + env["PATH"]
        env["KUBECONFIG"] = os.path.join(self.dir, "kubeconfig")
        env["KUBECACHEDIR"] = os.path.join(self.dir, "kubecache")
        for k in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
            env[k] = os.path.join(work, "helm", k.lower())
        return env


class Tools:
    def __init__(self, env):
        self.env = env

    def run(self, argv, check_ok=True, timeout=300):
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        if check_ok and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {(r.stdout + r.stderr).strip()}")
        return r

    def kubectl(self, *args, check_ok=True):
        return self.run(["kubectl", *args], check_ok=check_ok)

    def get(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def helm(self, *args):
        return self.run(["helm", *args], timeout=600)


class ServerPod:
    """taugridd's pod of the release, run as a process from the image."""

    def __init__(self, tools, root, image_env, work):
        self.tools = tools
        self.root = root
        self.image_env = image_env
        self.work = work
        self.process = None
        self.generation = None
        self.starts = 0
        self.log_path = None
        self.state_folder = None

    def _template(self):
        deployment = self.tools.get("deployment", RELEASE, "-n", NAMESPACE)
        return deployment["metadata"]["generation"], deployment["spec"]["template"]["spec"]

    def _volume_folder(self, volume):
        if "persistentVolumeClaim" in volume:
            claim = self.tools.get("pvc", volume["persistentVolumeClaim"]["claimName"], "-n", NAMESPACE)
            if claim["status"].get("phase") != "Bound":
                raise RuntimeError(f"claim {claim['metadata']['name']} is {claim['status'].get('phase')}")
            pv = self.tools.get("pv", claim["spec"]["volumeName"])
            return pv["spec"]["hostPath"]["path"]
        if "emptyDir" in volume:
            folder = os.path.join(self.work, f"pod-{self.starts}", "emptydir-" + volume["name"])
            os.makedirs(folder, exist_ok=True)
            return folder
        raise RuntimeError(f"volume {volume['name']}: a kind this test does not give a pod: {sorted(volume)}")

    def _plan(self, spec, argv=None):
        """(the shell script and its arguments) that run the container."""
        container = spec["containers"][0]
        pod_security = spec.get("securityContext", {})
        security = container.get("securityContext", {})
        uid = security.get("runAsUser", pod_security.get("runAsUser", 0))
        gid = security.get("runAsGroup", pod_security.get("runAsGroup", 0))
        fs_group = pod_security.get("fsGroup")
        read_only = security.get("readOnlyRootFilesystem", False)

        mounts = []  # (host folder, path in the container, read-only)
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for m in container.get("volumeMounts", []):
            folder = self._volume_folder(volumes[m["name"]])
            if "persistentVolumeClaim" in volumes[m["name"]]:
                self.state_folder = folder
            if fs_group is not None:
                os.chown(folder, uid, fs_group)  # fsGroup: the volume is the pod's group's
                os.chmod(folder, 0o2770)
            mounts.append((folder, m["mountPath"], m.get("readOnly", False)))
        account = spec.get("serviceAccountName", "default")
        sa = os.path.join(self.work, f"pod-{self.starts}", "serviceaccount")
        os.makedirs(sa, exist_ok=True)
        token = self.tools.kubectl("create", "token", account, "-n", NAMESPACE, "--duration", "1h").stdout.strip()
        config = json.loads(self.tools.kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
        ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        for name, data in (("token", token.encode()), ("ca.crt", ca), ("namespace", NAMESPACE.encode())):
            with open(os.path.join(sa, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(sa, name), 0o644)
        mounts.append((sa, "/var/run/secrets/kubernetes.io/serviceaccount", True))

        env = dict(e.split("=", 1) for e in self.image_env)
        server = config["clusters"][0]["cluster"]["server"]  # https://127.0.0.1:PORT
        host, port = server.removeprefix("https://").rsplit(":", 1)
        env.update({"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port})
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
            elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                env[e["name"]] = NAMESPACE
            else:
                raise RuntimeError(f"env {e['name']}: a source this test does not give a pod: {e}")

        command = argv if argv is not None else container.get("command", []) + container.get("args", [])
        lines = ["set -e", 'r="$1"', 'mount --bind "$r" "$r"', 'mount -t proc proc "$r/proc"']
        args = [self.root]
        for i, (folder, path, ro) in enumerate(mounts):
            os.makedirs(self.root + path, exist_ok=True)
            n = len(args) + 1
            lines.append(f'mount --bind "${{{n}}}" "$r{path}"')
            if ro:
                lines.append(f'mount -o remount,bind,ro "$r{path}"')
            args.append(folder)
        if read_only:
            lines.append('mount -o remount,bind,ro "$r"')
        env_args = " ".join(f"'{k}={v}'" for k, v in env.items())
        quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in command)
        lines.append(f'exec env -i {env_args} {shutil.which("chroot")} --userspec={uid}:{gid} "$r" {quoted}')
        os.makedirs(os.path.join(self.root, "proc"), exist_ok=True)
        return ["unshare", "--mount", "--fork", "--kill-child=SIGTERM", "sh", "-c", "\n".join(lines), "sh", *args]

    def start(self):
        self.generation, spec = self._template()
        self.starts += 1
        self.log_path = os.path.join(self.work, f"taugridd-{self.starts}.log")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self._plan(spec), stdout=log, stderr=subprocess.STDOUT)
        self.port = int(next(a for a in spec["containers"][0]["args"] if a.startswith("0.0.0.0:")).split(":")[1])

    def _container_pid(self):
        """The container's process, taugridd: unshare's child runs chroot,
        which execs it (its pid is in server.json on the state volume). A
        signal to unshare would not reach it: the kernel drops the
        parent-death signal when chroot --userspec changes the user."""
        try:
            with open(os.path.join(self.state_folder, "server.json")) as f:
                pid = json.load(f)["pid"]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return pid if b"taugridd" in f.read() else None
        except (OSError, ValueError, KeyError):
            return None

    def stop(self):
        """Recreate's first half: SIGTERM to the container, then its end
        (unshare --fork exits with its child's status)."""
        rc = None
        if self.process:
            pid = self._container_pid()
            if self.process.poll() is None and pid:
                os.kill(pid, signal.SIGTERM)
            try:
                rc = self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                if pid:
                    os.kill(pid, signal.SIGKILL)
                self.process.kill()
                self.process.wait()
                rc = "killed after 60 s"
        self.process = None
        return rc

    def follow(self):
        """Replaces the process when the Deployment's template changed."""
        generation, _ = self._template()
        if generation == self.generation:
            return False
        rc = self.stop()
        check(rc == 0, f"taugridd ends with status 0 on SIGTERM, not {rc} (see {self.log_path})")
        self.start()
        return True

    def answers(self):
        if self.process is None or self.process.poll() is not None:
            return False  # this pod's container is not running
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as resp:
                return json.load(resp).get("status") == "ok"
        except OSError:
            return False

    def exec(self, argv):
        """`kubectl exec` into the pod: ARGV in the container's root and mounts."""
        _, spec = self._template()
        self.starts += 1
        return subprocess.run(self._plan(spec, argv), capture_output=True, text=True, timeout=60)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]


def check_installed(tools):
    """What helm install --wait must leave: every workload Available, the
    claim Bound, the platform's Kueue objects active."""
    deployment = tools.get("deployment", RELEASE, "-n", NAMESPACE)
    available = [c["status"] for c in deployment["status"].get("conditions", []) if c["type"] == "Available"]
    check(available == ["True"], f"Deployment {RELEASE} is Available: {available}")
    # helm's --wait takes a DaemonSet as ready with maxUnavailable (1) pods
    # still coming: wait for both.
    def agent_status():
        return tools.get("daemonset", "taugrid-agent", "-n", NAMESPACE)["status"]
    eventually(90, lambda: (agent_status().get("desiredNumberScheduled"), agent_status().get("numberAvailable")) == (2, 2))
    ds = agent_status()
    check((ds.get("desiredNumberScheduled"), ds.get("numberAvailable")) == (2, 2),
          f"DaemonSet taugrid-agent Available on both GPU nodes: {ds}")
    check(tools.get("pvc", "taugrid-state", "-n", NAMESPACE)["status"].get("phase") == "Bound", "the state PVC is Bound")

    def active():
        cq = tools.get("clusterqueue", "gpu")
        return [c["status"] for c in cq.get("status", {}).get("conditions", []) if c["type"] == "Active"] == ["True"]
    check(eventually(30, active), "ClusterQueue gpu is Active in Kueue")
    for ns in ("team-vision", "team-speech"):
        check(tools.kubectl("get", "localqueue", "default", "-n", ns, check_ok=False).returncode == 0,
              f"a LocalQueue default in workspace {ns}")


def check_uninstalled(tools, pvc_uid):
    """helm uninstall leaves no object of the release but the state PVC."""
    kinds = [k for k in tools.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
             if not k.startswith("events")]

    def left_over():
        listed = tools.kubectl("get", ",".join(kinds), "-A", "-l", f"app.kubernetes.io/instance={RELEASE}",
                               "-o", "json", check_ok=False)
        return sorted({f"{o['kind']}/{o['metadata']['name']}"
                       for o in json.loads(listed.stdout or '{"items": []}')["items"] if o["kind"] != "Namespace"})

    # helm's --wait covers the objects it made; their pods go afterwards, by
    # the garbage collector (background propagation), so wait for those.
    left = left_over()
    if left != ["PersistentVolumeClaim/taugrid-state"]:
        eventually(90, lambda: left_over() == ["PersistentVolumeClaim/taugrid-state"])
        left = left_over()
    ok = check(left == ["PersistentVolumeClaim/taugrid-state"], f"after uninstall only the state PVC is left: {left}")
    for ns in ("team-vision", "team-speech"):
        r = tools.kubectl("get", "namespace", ns, "-o", "json", check_ok=False)
        phase = json.loads(r.stdout)["status"]["phase"] if r.returncode == 0 else "gone"
        check(phase in ("gone", "Terminating"), f"workspace namespace {ns} goes with the release: {phase}")
    ok = check(tools.get("pvc", "taugrid-state", "-n", NAMESPACE)["metadata"]["uid"] == pvc_uid,
               "the same PVC stays") and ok
    return ok


def helm_args(source, port, extra):
    chart = os.path.join(source, "charts", "taugrid")
    return [chart, "-n", NAMESPACE, "-f", os.path.join(chart, "examples", "one-gpu-class.yaml"),
            "--set", f"server.port={port}", "--set", f"service.port={port}", *extra, "--wait", "--timeout", "180s"]


def main(source, build, work):
    if os.geteuid() != 0:
        print("SKIPPED: not root; the test cluster and the pod's mounts and chroot need root")
        return 77
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIPPED: unshare --mount is not permitted here ({probe.stderr.strip()})")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tau = os.path.join(build, "bin", "tau")

    # The image, unpacked: what the pod runs.
    layout = os.path.join(work, "image")
    r = image_test.build_image(source, build, layout)
    if r.returncode != 0:
        fail(f"scripts/build-image: {r.stdout}{r.stderr}")
        return 1
    _, _, config, layers = image_test.read_layout(layout)
    if image_test.failures:
        fail(f"the image layout: {image_test.failures}")
        return 1
    root = os.path.join(work, "root")
    os.makedirs(root)
    image_test.unpack(layers, root)
    image_env = config["config"]["Env"]

    cluster = Cluster(source, work)
    pod = None
    try:
        if not cluster.up():
            fail("scripts/k8s-env up failed")
            return 1
        tools = Tools(cluster.tool_env(work))
        pv = os.path.join(work, "pv")
        os.makedirs(pv)
        pv_manifest = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "taugrid-e2e-state"},
                       "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                                "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": pv}}}
        subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(pv_manifest), text=True, check=True,
                       env=tools.env, capture_output=True)

        port = free_port()
        print("== helm install")
        tools.helm("install", RELEASE, *helm_args(source, port, ["--create-namespace"]))
        check_installed(tools)
        pvc_uid = tools.get("pvc", "taugrid-state", "-n", NAMESPACE)["metadata"]["uid"]
        pod = ServerPod(tools, root, image_env, work)
        pod.start()
        if not check(eventually(90, pod.answers), f"the installed taugridd answers /healthz: {pod.log()}"):
            return 1
        token = pod.exec(["tau", "server", "token"])
        if not check(token.returncode == 0 and token.stdout.strip(),
                     f"tau server token in the pod: exit {token.returncode} {token.stdout}{token.stderr}"):
            return 1
        client_env = dict(os.environ, TAU_SERVER=f"http://127.0.0.1:{port}", TAU_TOKEN=token.stdout.strip(),
                          TAU_HOME=os.path.join(work, "client-home"))

        def tau_cli(*args, cwd=None):
            return subprocess.run([tau, *args], capture_output=True, text=True, env=client_env, cwd=cwd, timeout=120)

        def status(job):
            r = tau_cli("status", job, "-o", "json")
            try:
                return json.loads(r.stdout)
            except ValueError:
                return {}

        def submit(name):
            d = os.path.join(work, "jobs", name)
            os.makedirs(d)
            with open(os.path.join(d, "run.sh"), "w") as f:
                f.write("echo hello from " + name + "\n")
            with open(os.path.join(d, "tau.yaml"), "w") as f:
                f.write(f"schema_version: 1\nname: {name}\nworkspace: {WORKSPACE}\nqueue: default\n"
                        "run: {entrypoint: ./run.sh}\ncompute: {cpus: 1, memory: 1Gi, gpus: 1}\n")
            r = tau_cli("run", "tau.yaml", cwd=d)
            check(r.returncode == 0, f"tau run {name}: exit {r.returncode}: {r.stdout}{r.stderr}")
            return r.stdout.split()[0] if r.stdout.split() else ""

        def jobs_of(job_id):
            return len(tools.get("jobs", "-A", "-l", f"taugrid.io/job-id={job_id}")["items"])

        quick = submit("quick")
        check(eventually(120, lambda: status("quick").get("state") == "Succeeded"),
              f"the job runs through Kueue to Succeeded: {status('quick')}\n{pod.log()}")
        print(f"ok: installed; tau run through the installed control plane: {quick} Succeeded")

        print("== helm upgrade (a server flag: the pod is replaced)")
        tools.helm("upgrade", RELEASE, *helm_args(source, port, [f"--set-json=server.extraArgs={json.dumps(HOLD)}"]))
        check(pod.follow(), "the upgrade changed the Deployment's pod template")
        check(eventually(90, pod.answers), f"the upgraded taugridd answers: {pod.log()}")
        after = status("quick")
        check(after.get("state") == "Succeeded" and after.get("id") == quick,
              f"the job from before the upgrade is still there, Succeeded: {after}")
        events = tau_cli("events", "quick")
        check(events.returncode == 0 and "Succeeded" in events.stdout,
              f"its events survived the upgrade: {events.stdout}{events.stderr}")
        listed = tau_cli("list")
        check(quick in listed.stdout, f"tau list after the upgrade names it: {listed.stdout}{listed.stderr}")
        held = submit("held")
        check(eventually(120, lambda: status("held").get("state") == "Running"),
              f"a job submitted after the upgrade runs: {status('held')}\n{pod.log()}")
        check(tools.get("pvc", "taugrid-state", "-n", NAMESPACE)["metadata"]["uid"] == pvc_uid,
              "the upgrade keeps the same state PVC")
        print(f"ok: upgraded; the same PVC; {quick} kept, {held} Running")

        print("== helm upgrade (again, with a job running)")
        tools.helm("upgrade", RELEASE, *helm_args(source, port, [f"--set-json=server.extraArgs={json.dumps(HOLD)}",
                                                                 "--set", "server.logLevel=debug"]))
        check(pod.follow(), "the second upgrade changed the pod template")
        check(eventually(90, pod.answers), f"taugridd answers after the second upgrade: {pod.log()}")
        s = status("held")
        check(s.get("state") == "Running" and s.get("attempt") == 1,
              f"the running job is adopted, still attempt 1: {s}\n{pod.log()}")
        check(jobs_of(held) == 1, f"one Job object of {held}, not two: {jobs_of(held)}")
        cancel = tau_cli("cancel", "held")
        check(cancel.returncode == 0, f"tau cancel: {cancel.stdout}{cancel.stderr}")
        check(eventually(60, lambda: jobs_of(held) == 0), "cancel deletes the job's Job")
        check(eventually(60, lambda: status("held").get("state") == "Cancelled"), f"held is Cancelled: {status('held')}")
        print("ok: the running job was adopted across the upgrade and cancelled")

        print("== helm uninstall")
        tools.run(["helm", "uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "180s"])
        check(eventually(60, lambda: not tools.kubectl("get", "deployment", RELEASE, "-n", NAMESPACE,
                                                       check_ok=False).returncode == 0),
              "the Deployment is gone after uninstall")
        rc = pod.stop()
        check(rc == 0, f"the pod's taugridd ends with status 0 on SIGTERM, not {rc}")
        pod = None
        if check_uninstalled(tools, pvc_uid):
            print("ok: uninstalled; only the state PVC is left")
    except (RuntimeError, subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
        fail(f"{type(e).__name__}: {e}")
    finally:
        if pod is not None:
            pod.stop()
        cluster.down()
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*(os.path.abspath(a) for a in sys.argv[1:])))
