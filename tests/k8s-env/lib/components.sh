# How each component of a test cluster is started and probed. Sourced by
# cluster.sh, never run. Every function reads the cluster's settings from
# the variables that DIR/env assigns (K8S_ENV_DIR, K8S_ENV_BIN, the ports).
#
# Contract of start_NAME: starts the component in the background, its output
# in DIR/logs/NAME.log, and records "NAME PID BINARY" in DIR/pids; it does
# not wait. probe_NAME returns 0 once the component answers, without
# waiting. Everything listens on 127.0.0.1 only.

# The components in start order; down stops them in reverse.
K8S_ENV_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok
                    fake-ray-dashboard kuberay-operator kueue)

# Prints N distinct free TCP ports on 127.0.0.1 (held open together while
# chosen, so they differ; another process may still take one before use,
# which shows as that component failing to start).
free_ports() {
  "${PYTHON:-python3}" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# spawn NAME BINARY [ARGS...]: runs BINARY in its own session with no
# terminal input, logs to DIR/logs/NAME.log, records its pid with the path
# its command line must contain: SPAWN_MATCH if set (for a BINARY that
# executes another, such as an interpreter shim or unshare), else BINARY.
# Environment assignments for it go in SPAWN_ENV (an array of NAME=VALUE).
spawn() {
  local name="$1" bin="$2"
  shift 2
  local log="$K8S_ENV_DIR/logs/$name.log"
  env "${SPAWN_ENV[@]}" setsid "$bin" "$@" </dev/null >>"$log" 2>&1 &
  local pid=$!
  bin="${SPAWN_MATCH:-$bin}"
  echo "$name $pid $bin" >>"$K8S_ENV_DIR/pids"
  SPAWN_ENV=()
  SPAWN_MATCH=
  # The forked shell runs env, which runs setsid, which runs the command
  # (through unshare and bash for some): wait until that chain has reached
  # the component itself, so that every later check of the command line
  # (is_ours) sees the component's and not a launcher's mid-exec.
  local i argv0
  for ((i = 0; i < 200; i++)); do
    case "$(proc_state "$pid")" in
      "" | Z | X) return 0 ;;
    esac
    argv0="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1)" || true
    case "${argv0##*/}" in
      "" | env | setsid | unshare | bash) ;;
      *) return 0 ;;
    esac
    sleep 0.05
  done
}
SPAWN_ENV=()
SPAWN_MATCH=

# curl for probes: never through a proxy, short timeouts, quiet.
probe_curl() {
  curl --noproxy '*' -s --connect-timeout 1 --max-time 3 "$@"
}

kc() {
  KUBECACHEDIR="$K8S_ENV_DIR/kubecache" "$K8S_ENV_BIN/kubectl" --kubeconfig "$K8S_ENV_DIR/kubeconfig" "$@"
}

pki() {
  echo "$K8S_ENV_DIR/pki/$1"
}

start_etcd() {
  local peer="http://127.0.0.1:$ETCD_PEER_PORT" client="http://127.0.0.1:$ETCD_PORT"
  spawn etcd "$K8S_ENV_BIN/etcd" --name=default --data-dir="$K8S_ENV_DIR/etcd" \
    --listen-client-urls="$client" --advertise-client-urls="$client" \
    --listen-peer-urls="$peer" --initial-advertise-peer-urls="$peer" \
    --initial-cluster="default=$peer" --unsafe-no-fsync --log-level=warn
}
probe_etcd() {
  probe_curl "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'
}

start_kube-apiserver() {
  spawn kube-apiserver "$K8S_ENV_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --tls-cert-file="$(pki apiserver.crt)" --tls-private-key-file="$(pki apiserver.key)" \
    --client-ca-file="$(pki ca.crt)" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$(pki sa.pub)" --service-account-signing-key-file="$(pki sa.key)" \
    --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=RBAC \
    --kubelet-preferred-address-types=InternalIP \
    --kubelet-certificate-authority="$(pki ca.crt)" \
    --kubelet-client-certificate="$(pki apiserver-kubelet-client.crt)" \
    --kubelet-client-key="$(pki apiserver-kubelet-client.key)" \
    --allow-privileged=true --endpoint-reconciler-type=none --profiling=false
}
probe_kube-apiserver() {
  probe_curl -f --cacert "$(pki ca.crt)" --cert "$(pki admin.crt)" --key "$(pki admin.key)" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" >/dev/null
}

start_kube-controller-manager() {
  local k="$K8S_ENV_DIR/kubeconfig"
  spawn kube-controller-manager "$K8S_ENV_BIN/kube-controller-manager" \
    --kubeconfig="$k" --authentication-kubeconfig="$k" --authorization-kubeconfig="$k" \
    --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" \
    --tls-cert-file="$(pki controller-manager.crt)" --tls-private-key-file="$(pki controller-manager.key)" \
    --service-account-private-key-file="$(pki sa.key)" --root-ca-file="$(pki ca.crt)" \
    --use-service-account-credentials \
    --cluster-signing-cert-file="$(pki ca.crt)" --cluster-signing-key-file="$(pki ca.key)" \
    --leader-elect=false --profiling=false
}
probe_kube-controller-manager() {
  probe_curl -f --cacert "$(pki ca.crt)" "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz" >/dev/null
}

start_kube-scheduler() {
  local k="$K8S_ENV_DIR/kubeconfig"
  spawn kube-scheduler "$K8S_ENV_BIN/kube-scheduler" \
    --kubeconfig="$k" --authentication-kubeconfig="$k" --authorization-kubeconfig="$k" \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
    --tls-cert-file="$(pki scheduler.crt)" --tls-private-key-file="$(pki scheduler.key)" \
    --leader-elect=false --profiling=false
}
probe_kube-scheduler() {
  probe_curl -f --cacert "$(pki ca.crt)" "https://127.0.0.1:$SCHEDULER_PORT/healthz" >/dev/null
}

# kwok manages the nodes labelled type=kwok with the stage files the build
# copied: nodes become Ready and keep their leases; pods become Ready, and
# pods of Jobs complete, at once ("fast") or after kwok's general delays
# (K8S_ENV_POD_STAGES=general; delays can be set per pod by annotation).
start_kwok() {
  local stages="$K8S_ENV_HOME/manifests/kwok/stage" pod="${K8S_ENV_POD_STAGES:-fast}"
  case "$pod" in
    fast | general) ;;
    *) die "K8S_ENV_POD_STAGES is '$pod'; expected fast or general" ;;
  esac
  local f cfg="$K8S_ENV_DIR/kwok-stages.yaml"
  : >"$cfg"
  for f in "$stages/node/fast/node-initialize.yaml" \
           "$stages/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
           "$stages/pod/$pod"/pod-*.yaml; do
    [ -f "$f" ] || die "kwok stage file missing: $f"
    { echo "---"; cat "$f"; } >>"$cfg"
  done
  # Pod logs: every container of every pod on the kwok nodes serves
  # DIR/pod.log (CRI log format: "RFC3339NANO stdout F text" per line),
  # followed as it grows. The nodes' InternalIP and kubelet port are kwok's
  # server, which answers TLS (the cluster CA's kwok certificate) and plain
  # HTTP (the health probe) on the same port.
  : >"$K8S_ENV_DIR/pod.log"
  cat >>"$cfg" <<LOGS
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: taugrid-k8s-env-pod-log
spec:
  logs:
  - logsFile: $K8S_ENV_DIR/pod.log
    follow: true
LOGS
  spawn kwok "$K8S_ENV_BIN/kwok" --kubeconfig="$K8S_ENV_DIR/kubeconfig" --config="$cfg" \
    --manage-nodes-with-label-selector=type=kwok \
    --server-address="127.0.0.1:$KWOK_PORT" --node-lease-duration-seconds=40 \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" \
    --tls-cert-file="$(pki kwok.crt)" --tls-private-key-file="$(pki kwok.key)"
}
probe_kwok() {
  probe_curl -f "http://127.0.0.1:$KWOK_PORT/healthz" >/dev/null
}

start_fake-ray-dashboard() {
  SPAWN_MATCH="$K8S_ENV_SRC/fake_ray_dashboard.py"
  spawn fake-ray-dashboard "$PYTHON" "$K8S_ENV_SRC/fake_ray_dashboard.py" \
    --port "$FAKE_RAY_DASHBOARD_PORT" --state-file "$K8S_ENV_DIR/ray-dashboard-jobs.json"
}
probe_fake-ray-dashboard() {
  probe_curl -f "http://127.0.0.1:$FAKE_RAY_DASHBOARD_PORT/healthz" >/dev/null
}

# KubeRay polls the dashboard of a RayCluster's head service by its DNS
# name over plain HTTP; the proxy settings send those requests to the fake
# dashboard, and keep the API server (loopback) direct.
start_kuberay-operator() {
  local proxy="http://127.0.0.1:$FAKE_RAY_DASHBOARD_PORT"
  SPAWN_ENV=(HTTP_PROXY="$proxy" http_proxy="$proxy" HTTPS_PROXY= https_proxy=
             NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
             KUBECONFIG="$K8S_ENV_DIR/kubeconfig")
  spawn kuberay-operator "$K8S_ENV_BIN/ray-operator" --kubeconfig="$K8S_ENV_DIR/kubeconfig" \
    --enable-leader-election=false --metrics-addr="127.0.0.1:$KUBERAY_METRICS_PORT" \
    --health-probe-bind-address="127.0.0.1:$KUBERAY_HEALTH_PORT" --log-stdout-encoder=console
}
probe_kuberay-operator() {
  probe_curl -f "http://127.0.0.1:$KUBERAY_HEALTH_PORT/readyz" >/dev/null
}

# Kueue serves its webhooks and metrics with certificates of the cluster's
# Kueue CA (IP name 127.0.0.1, which its internal certificate management
# does not give). Kueue v0.17 reads the metrics certificate from the fixed
# path /etc/kueue/metrics/certs, so it runs in a private mount namespace
# where a tmpfs-backed overlay on /etc provides that path; the real /etc is
# never written. The visibility API is off: it too wants a fixed path.
start_kueue() {
  local d="$K8S_ENV_DIR/kueue"
  mkdir -p "$d/certs" "$d/overlay"
  cp "$(pki kueue.crt)" "$d/certs/tls.crt"
  cp "$(pki kueue.key)" "$d/certs/tls.key"
  cat >"$d/config.yaml" <<CONFIG
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$KUEUE_HEALTH_PORT
metrics:
  bindAddress: 127.0.0.1:$KUEUE_METRICS_PORT
webhook:
  host: 127.0.0.1
  port: $KUEUE_WEBHOOK_PORT
  certDir: $d/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks:
  - batch/job
  - ray.io/rayjob
  - ray.io/raycluster
CONFIG
  # shellcheck disable=SC2016
  local setup='set -e
o="$1"; certs="$2"; shift 2
mount -t tmpfs -o mode=0700 taugrid-kueue "$o"
mkdir -p "$o/upper/kueue/metrics/certs" "$o/work"
cp "$certs/tls.crt" "$certs/tls.key" "$o/upper/kueue/metrics/certs/"
mount -t overlay taugrid-kueue-etc -o "lowerdir=/etc,upperdir=$o/upper,workdir=$o/work" /etc
exec "$@"'
  SPAWN_ENV=(KUBECONFIG="$K8S_ENV_DIR/kubeconfig")
  SPAWN_MATCH="$K8S_ENV_BIN/kueue"
  spawn kueue "$(command -v unshare)" -m --propagation private -- /bin/bash -c "$setup" kueue-mount \
    "$d/overlay" "$d/certs" "$K8S_ENV_BIN/kueue" --config="$d/config.yaml" \
    --kubeconfig="$K8S_ENV_DIR/kubeconfig" --feature-gates=VisibilityOnDemand=false
}
probe_kueue() {
  probe_curl -f "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz" >/dev/null || return 1
  local code
  code="$(probe_curl -o /dev/null -w '%{http_code}' --cacert "$(pki kueue-ca.crt)" \
            "https://127.0.0.1:$KUEUE_WEBHOOK_PORT/healthz")" || true
  [ -n "$code" ] && [ "$code" != 000 ]
}
