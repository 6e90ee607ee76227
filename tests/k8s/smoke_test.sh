#!/usr/bin/env bash
# Smoke test of the test cluster (scripts/k8s-env): a cluster comes up with
# kwok GPU nodes and every component listening on 127.0.0.1 only; Kueue's
# webhook suspends a queued Job created unsuspended; Kueue admits a suspended Job that fits an 8-GPU
# ClusterQueue and kwok completes it; a 16-GPU Job stays suspended with
# Kueue's insufficient-quota message; a RayJob goes through KubeRay to
# SUCCEEDED; `down` leaves no process and no listening port behind.
#   smoke_test.sh SOURCE_DIR WORK_DIR
# Exits 77 (ctest: skipped) only when not root, which `up` needs; fails when
# the components cannot be built or any step does not happen in time.
set -euo pipefail
src="$1" work="$2"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: not root; the test cluster runs Kueue in a private mount namespace (unshare -m), which needs root"
  exit 77
fi

k8s_env="$src/scripts/k8s-env"
dir="$work/cluster"
rm -rf "$dir"
mkdir -p "$dir"

fail() {
  echo "FAIL: $*" >&2
  if [ -f "$dir/env" ] && [ -f "$dir/pids" ]; then
    echo "---- cluster objects ----" >&2
    kubectl get nodes,jobs,pods,workloads,clusterqueues,localqueues,rayjobs,rayclusters -A -o wide >&2 || true
    echo "---- workloads ----" >&2
    kubectl get workloads -A -o yaml 2>/dev/null | grep -E '^\s+(message|reason|type|status):' >&2 || true
    for c in kueue kuberay-operator kwok; do
      echo "---- last lines of $dir/logs/$c.log ----" >&2
      tail -n 20 "$dir/logs/$c.log" >&2 || true
    done
  fi
  exit 1
}

cleanup() {
  [ ! -f "$dir/pids" ] || "$k8s_env" down "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$k8s_env" up "$dir" || fail "scripts/k8s-env up failed"
# shellcheck disable=SC1091
. "$dir/env"
PATH="$K8S_ENV_BIN:$PATH"

# Waits up to SECONDS for CMD to succeed; fails with WHAT otherwise.
eventually() {
  local seconds="$1" what="$2"
  shift 2
  local deadline=$(( $(date +%s) + seconds ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what (waited $seconds s)"
    sleep 0.5
  done
}

echo "== nodes: 2 Ready, 8 GPUs each"
"$k8s_env" status "$dir" || fail "status reports a component not answering"
gpus="$(kubectl get nodes -l type=kwok -o jsonpath='{range .items[*]}{.metadata.name}={.status.allocatable.nvidia\.com/gpu},{.status.conditions[?(@.type=="Ready")].status},{.metadata.labels.taugrid\.io/gpu-class}{"\n"}{end}')"
echo "$gpus"
[ "$(echo "$gpus" | grep -c '=8,True,h100$')" -eq 2 ] || fail "expected 2 Ready nodes with 8 GPUs and gpu-class h100, got: $gpus"

echo "== every component listens on 127.0.0.1 only"
listeners="$(python3 - "$dir/pids" <<'PY'
import os, sys
pids = [line.split()[1] for line in open(sys.argv[1]) if line.strip()]
inodes = {}
for pid in pids:
    try:
        for fd in os.listdir("/proc/%s/fd" % pid):
            try:
                target = os.readlink("/proc/%s/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes[target[8:-1]] = pid
    except OSError:
        pass
for table in ("tcp", "tcp6", "udp", "udp6"):
    with open("/proc/net/" + table) as f:
        next(f)
        for row in f:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if inode not in inodes or (table.startswith("tcp") and state != "0A"):
                continue
            addr = local.split(":")[0]
            loopback = addr in ("0100007F", "00000000000000000000000001000000")
            print("%s %s pid=%s %s" % ("ok" if loopback else "NOT-LOOPBACK", table, inodes[inode], local))
PY
)"
echo "$listeners" | grep -c '^ok' | sed 's/^/loopback listeners: /'
if echo "$listeners" | grep -q '^NOT-LOOPBACK'; then
  fail "a component listens beyond 127.0.0.1: $(echo "$listeners" | grep '^NOT-LOOPBACK')"
fi
[ -n "$listeners" ] || fail "found no listening socket of the components"

echo "== queues: ClusterQueue of 8 GPUs, LocalQueue"
kubectl apply --server-side -f - <<'YAML' || fail "creating the queues"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: gpu-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: "64"
      - name: memory
        nominalQuota: 512Gi
      - name: nvidia.com/gpu
        nominalQuota: "8"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: gpu-lq
  namespace: default
spec:
  clusterQueue: gpu-cq
YAML
cq_active() {
  [ "$(kubectl get clusterqueue gpu-cq -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]
}
eventually 60 "ClusterQueue gpu-cq did not become Active" cq_active

job() {
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: gpu-lq
spec:
  suspend: true
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/train:1
        resources:
          requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "$2"}
          limits: {nvidia.com/gpu: "$2"}
YAML
}

echo "== a suspended 8-GPU Job is admitted and completes"
job fits 8 | kubectl create -f - || fail "creating Job fits"
job_complete() {
  [ "$(kubectl get job fits -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}')" = True ]
}
eventually 120 "Job fits did not complete" job_complete
[ "$(kubectl get job fits -o jsonpath='{.spec.suspend}')" = false ] || fail "Job fits completed but is still marked suspended"
admitted="$(kubectl get workloads -n default -o jsonpath='{range .items[?(@.metadata.ownerReferences[0].name=="fits")]}{.status.conditions[?(@.type=="Admitted")].status}{end}')"
[ "$admitted" = True ] || fail "Job fits completed without an admitted Workload (Admitted=$admitted)"

echo "== Kueue's webhook suspends a queued Job created unsuspended"
# The object create returns is the one admission stored, before Kueue's
# controller may admit and unsuspend it.
created="$(job unsuspended 1 | sed 's/  suspend: true/  suspend: false/' |
             kubectl create -f - -o jsonpath='{.spec.suspend}')" || fail "creating Job unsuspended"
[ "$created" = true ] || fail "Job unsuspended was stored with suspend=$created: Kueue's mutating webhook did not suspend it"
kubectl delete job unsuspended --wait=false >/dev/null

echo "== a 16-GPU Job stays suspended with Kueue's insufficient-quota message"
job too-big 16 | kubectl create -f - || fail "creating Job too-big"
quota_message() {
  kubectl get workloads -n default -o jsonpath='{range .items[?(@.metadata.ownerReferences[0].name=="too-big")]}{.status.conditions[?(@.type=="QuotaReserved")].message}{end}'
}
has_insufficient_quota() {
  quota_message | grep -q 'insufficient quota for nvidia.com/gpu'
}
eventually 60 "the Workload of Job too-big never reported insufficient quota (message: '$(quota_message)')" has_insufficient_quota
echo "message: $(quota_message)"
[ "$(kubectl get job too-big -o jsonpath='{.spec.suspend}')" = true ] || fail "Job too-big is not suspended"
[ -z "$(kubectl get pods -l job-name=too-big -o name)" ] || fail "Job too-big has pods"

echo "== a RayJob reaches SUCCEEDED"
kubectl create -f - <<'YAML' || fail "creating RayJob"
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: ray-smoke
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: gpu-lq
spec:
  suspend: true
  entrypoint: python -c "print('hello')"
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: registry.invalid/ray:2
            resources:
              requests: {cpu: "1", memory: 2Gi}
    workerGroupSpecs:
    - groupName: gpu
      replicas: 1
      minReplicas: 1
      maxReplicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: registry.invalid/ray:2
            resources:
              requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: "1"}
              limits: {nvidia.com/gpu: "1"}
YAML
ray_status() {
  kubectl get rayjob ray-smoke -o jsonpath='{.status.jobStatus}/{.status.jobDeploymentStatus}'
}
ray_succeeded() {
  case "$(ray_status)" in
    SUCCEEDED/*) return 0 ;;
    FAILED/* | */Failed) fail "RayJob ray-smoke failed: $(ray_status) $(kubectl get rayjob ray-smoke -o jsonpath='{.status.reason} {.status.message}')" ;;
  esac
  return 1
}
eventually 180 "RayJob ray-smoke did not reach SUCCEEDED (status: $(ray_status))" ray_succeeded
echo "rayjob: $(ray_status)"

echo "== down leaves no process and no listening port"
mapfile -t ports < <(grep -E '_PORT=' "$dir/env" | cut -d= -f2)
"$k8s_env" down "$dir" || fail "scripts/k8s-env down failed"
[ ! -f "$dir/pids" ] || fail "down left $dir/pids"
while read -r name pid bin; do
  if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$bin"; then
    fail "$name (pid $pid) still runs after down"
  fi
done <"$dir/pids.stopped"
for port in "${ports[@]}"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "port $port still accepts connections after down"
  fi
done
echo "PASS"
