# `scripts/k8s-env up|down|status DIR`: one test cluster whose state lives
# in DIR. Sourced by scripts/k8s-env, never run.
#
# DIR after `up`:
#   env         shell assignments: K8S_ENV_DIR, K8S_ENV_HOME, K8S_ENV_BIN,
#               KUBECONFIG, KUBECACHEDIR, K8S_API_SERVER and every *_PORT
#   pids        "NAME PID BINARY" per component, in start order
#   kubeconfig  the admin (system:masters) identity
#   logs/       one NAME.log per component, plus up.log (kubectl output)
#   pki/        CA, certificates and keys; etcd/ its data
# `down` stops by the recorded pids only (checking each command line first)
# and renames pids to pids.stopped; logs stay for debugging.

# shellcheck source=certs.sh
. "$K8S_ENV_SRC/lib/certs.sh"
# shellcheck source=components.sh
. "$K8S_ENV_SRC/lib/components.sh"

# Settings read by `up`, with their defaults.
: "${K8S_ENV_NODES:=2}"            # kwok nodes
: "${K8S_ENV_GPUS_PER_NODE:=8}"    # nvidia.com/gpu of each node
: "${K8S_ENV_GPU_CLASS:=h100}"     # the taugrid.io/gpu-class label of each node
: "${K8S_ENV_UP_TIMEOUT:=300}"     # seconds until every component must answer

abs_dir() {
  mkdir -p "$1"
  (cd "$1" && pwd)
}

load_env() {
  [ -f "$1/env" ] || die "$1/env not found: no cluster was started in $1"
  # shellcheck disable=SC1091
  . "$1/env"
}

# True when PID is alive and its command line names BINARY and DIR: a pid
# recorded by an earlier cluster and since reused by something else fails.
# A process in the middle of an exec shows an empty command line for a
# moment, as a zombie does: an empty one is read again while /proc/PID/stat
# says the process is neither a zombie nor gone.
is_ours() {
  local pid="$1" bin="$2" cmdline="" i
  for ((i = 0; i < 20; i++)); do
    [ -r "/proc/$pid/cmdline" ] || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    [ -z "$cmdline" ] || break
    case "$(proc_state "$pid")" in
      "" | Z | X) return 1 ;;
    esac
    sleep 0.05
  done
  [[ "$cmdline" == *"$bin"* && "$cmdline" == *"$K8S_ENV_DIR"* ]]
}

# Prints the last lines of a component's log, for a failure message.
log_tail() {
  local log="$K8S_ENV_DIR/logs/$1.log"
  echo "---- last lines of $log ----" >&2
  if [ -s "$log" ]; then
    tail -n "${2:-25}" "$log" >&2
  else
    echo "(empty)" >&2
  fi
}

# Fails `up`: the message, the component's log tail, then everything that
# was started is stopped (DIR and its logs stay).
up_fail() {
  local component="$1"
  shift
  echo "k8s-env: up failed: $*" >&2
  [ -z "$component" ] || log_tail "$component" 40
  echo "k8s-env: stopping what was started; logs stay in $K8S_ENV_DIR/logs" >&2
  k8s_env_down "$K8S_ENV_DIR" >&2 || true
  exit 1
}

ensure_namespace() {
  kc get namespace "$1" || kc create namespace "$1"
}

# alive NAME: the recorded process of component NAME still runs (an exited
# child not yet reaped has an empty command line and counts as gone).
alive() {
  local name pid bin
  while read -r name pid bin; do
    if [ "$name" = "$1" ]; then
      is_ours "$pid" "$bin"
      return
    fi
  done <"$K8S_ENV_DIR/pids"
  return 1
}

# wait_ready NAME...: waits until every named component answers, failing
# at once when one has exited and at the deadline otherwise.
wait_ready() {
  local name pending
  while :; do
    pending=()
    for name in "$@"; do
      alive "$name" || up_fail "$name" "$name exited"
      "probe_$name" || pending+=("$name")
    done
    [ ${#pending[@]} -gt 0 ] || return 0
    if [ "$(date +%s)" -ge "$UP_DEADLINE" ]; then
      up_fail "${pending[0]}" "not answering after ${K8S_ENV_UP_TIMEOUT} s: ${pending[*]} (K8S_ENV_UP_TIMEOUT sets the limit)"
    fi
    sleep 0.3
  done
}

# until_ok WHAT COMPONENT CMD...: retries CMD until it succeeds or the
# deadline passes; WHAT names the condition in the failure message.
until_ok() {
  local what="$1" component="$2"
  shift 2
  until "$@" >>"$K8S_ENV_DIR/logs/up.log" 2>&1; do
    if [ "$(date +%s)" -ge "$UP_DEADLINE" ]; then
      echo "---- last lines of $K8S_ENV_DIR/logs/up.log ----" >&2
      tail -n 15 "$K8S_ENV_DIR/logs/up.log" >&2
      up_fail "$component" "$what not reached after ${K8S_ENV_UP_TIMEOUT} s"
    fi
    sleep 0.5
  done
}

write_env() {
  local f="$K8S_ENV_DIR/env"
  {
    echo "# Written by scripts/k8s-env up; source it to reach this cluster."
    local v
    for v in K8S_ENV_DIR K8S_ENV_HOME K8S_ENV_BIN ETCD_PORT ETCD_PEER_PORT APISERVER_PORT \
             CONTROLLER_MANAGER_PORT SCHEDULER_PORT KWOK_PORT FAKE_RAY_DASHBOARD_PORT \
             KUBERAY_METRICS_PORT KUBERAY_HEALTH_PORT KUEUE_WEBHOOK_PORT KUEUE_METRICS_PORT \
             KUEUE_HEALTH_PORT; do
      printf '%s=%q\n' "$v" "${!v}"
    done
    printf 'KUBECONFIG=%q\n' "$K8S_ENV_DIR/kubeconfig"
    printf 'KUBECACHEDIR=%q\n' "$K8S_ENV_DIR/kubecache"
    printf 'K8S_API_SERVER=%q\n' "https://127.0.0.1:$APISERVER_PORT"
    echo "export KUBECONFIG KUBECACHEDIR"
  } >"$f"
}

# The kwok nodes: NVIDIA GPUs, CPU, memory and pods, the GPU class label.
node_manifests() {
  local i
  for ((i = 0; i < K8S_ENV_NODES; i++)); do
    cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-gpu-$i
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-gpu-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: kwok-gpu-$K8S_ENV_GPUS_PER_NODE
    taugrid.io/gpu-class: $K8S_ENV_GPU_CLASS
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
status:
  capacity: &resources
    cpu: "96"
    memory: 1Ti
    pods: "110"
    ephemeral-storage: 1Ti
    nvidia.com/gpu: "$K8S_ENV_GPUS_PER_NODE"
  allocatable: *resources
NODE
  done
}

all_nodes_ready() {
  local ready
  ready="$(kc get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')"
  [ "$ready" -eq "$K8S_ENV_NODES" ]
}

k8s_env_up() {
  [ "$(id -u)" -eq 0 ] ||
    die "up must run as root: Kueue runs in a private mount namespace (unshare -m) that provides the fixed path of its metrics certificate without writing /etc"
  local c
  for c in openssl curl unshare setsid; do
    command -v "$c" >/dev/null || die "up needs '$c', which is not installed (./scripts/install-deps installs it)"
  done
  find_python
  [[ "$K8S_ENV_NODES" =~ ^[1-9][0-9]*$ ]] || die "K8S_ENV_NODES is '$K8S_ENV_NODES'; expected a positive whole number"
  [[ "$K8S_ENV_GPUS_PER_NODE" =~ ^[0-9]+$ ]] || die "K8S_ENV_GPUS_PER_NODE is '$K8S_ENV_GPUS_PER_NODE'; expected a whole number"
  [[ "$K8S_ENV_UP_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "K8S_ENV_UP_TIMEOUT is '$K8S_ENV_UP_TIMEOUT'; expected seconds as a positive whole number"
  [[ "$K8S_ENV_GPU_CLASS" =~ ^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$ ]] || die "K8S_ENV_GPU_CLASS is '$K8S_ENV_GPU_CLASS'; expected a label value"

  K8S_ENV_DIR="$(abs_dir "$1")"
  if [ -f "$K8S_ENV_DIR/pids" ]; then
    die "$K8S_ENV_DIR/pids exists: a cluster was started there; run 'scripts/k8s-env down $K8S_ENV_DIR' first"
  fi
  k8s_env_build
  local start
  start="$(date +%s)"
  UP_DEADLINE=$(( start + K8S_ENV_UP_TIMEOUT ))
  K8S_ENV_BIN="$K8S_ENV_HOME/bin"
  rm -rf "$K8S_ENV_DIR/etcd" "$K8S_ENV_DIR/pki" "$K8S_ENV_DIR/kueue" "$K8S_ENV_DIR/logs" \
         "$K8S_ENV_DIR/rendered" "$K8S_ENV_DIR/kubecache" "$K8S_ENV_DIR/pids.stopped"
  mkdir -p "$K8S_ENV_DIR/logs"
  read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT CONTROLLER_MANAGER_PORT SCHEDULER_PORT \
          KWOK_PORT FAKE_RAY_DASHBOARD_PORT KUBERAY_METRICS_PORT KUBERAY_HEALTH_PORT \
          KUEUE_WEBHOOK_PORT KUEUE_METRICS_PORT KUEUE_HEALTH_PORT < <(free_ports 12)
  make_pki "$K8S_ENV_DIR"
  write_kubeconfig "$K8S_ENV_DIR" "$APISERVER_PORT"
  write_env
  : >"$K8S_ENV_DIR/pids"

  # Rendering the manifests takes a few seconds of CPU: overlap it with
  # etcd and the API server starting.
  "$PYTHON" "$K8S_ENV_SRC/render_manifests.py" "$K8S_ENV_HOME/manifests" "$K8S_ENV_DIR/rendered" \
    "$KUEUE_WEBHOOK_PORT" "$(pki kueue-ca.crt)" >"$K8S_ENV_DIR/logs/render.log" 2>&1 &
  local render=$!

  start_etcd
  start_fake-ray-dashboard
  wait_ready etcd
  start_kube-apiserver
  wait_ready kube-apiserver
  note "API server answers at https://127.0.0.1:$APISERVER_PORT ($(( $(date +%s) - start )) s)"
  start_kube-controller-manager
  start_kube-scheduler
  start_kwok

  if ! wait "$render"; then
    cat "$K8S_ENV_DIR/logs/render.log" >&2
    up_fail "" "rendering the manifests failed"
  fi
  until_ok "CRDs applied" kube-apiserver \
    kc apply --server-side --field-manager=taugrid-k8s-env -f "$K8S_ENV_DIR/rendered/crds/"
  until_ok "CRDs established" kube-apiserver \
    kc wait --for=condition=Established --timeout=10s -f "$K8S_ENV_DIR/rendered/crds/"
  until_ok "namespace kueue-system" kube-apiserver ensure_namespace kueue-system
  until_ok "Kueue's webhook configurations applied" kube-apiserver \
    kc apply --server-side --field-manager=taugrid-k8s-env -f "$K8S_ENV_DIR/rendered/webhooks/"
  start_kuberay-operator
  start_kueue
  node_manifests >"$K8S_ENV_DIR/nodes.yaml"
  until_ok "nodes created" kube-apiserver \
    kc apply --server-side --field-manager=taugrid-k8s-env -f "$K8S_ENV_DIR/nodes.yaml"

  wait_ready "${K8S_ENV_COMPONENTS[@]}"
  until_ok "$K8S_ENV_NODES kwok nodes Ready" kwok all_nodes_ready
  until_ok "the default service account of namespace default" kube-controller-manager \
    kc get serviceaccount default -n default
  note "up in $(( $(date +%s) - start )) s: source $K8S_ENV_DIR/env (KUBECONFIG=$K8S_ENV_DIR/kubeconfig)"
}

k8s_env_status() {
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "$1: no such folder"
  load_env "$dir"
  K8S_ENV_DIR="$dir"
  local pids="$K8S_ENV_DIR/pids"
  [ -f "$pids" ] || { echo "no cluster running in $K8S_ENV_DIR"; return 1; }
  local name pid bin state rc=0
  printf '%-24s %-8s %s\n' COMPONENT PID STATE
  while read -r name pid bin; do
    if ! is_ours "$pid" "$bin"; then
      state="not running"
      rc=1
    elif "probe_$name"; then
      state="answers"
    else
      state="running, not answering"
      rc=1
    fi
    printf '%-24s %-8s %s\n' "$name" "$pid" "$state"
  done <"$pids"
  return "$rc"
}

# stop_wait "PID BINARY"...: waits up to 15 s for the signalled processes to
# exit, then sends SIGKILL to those left (command lines checked again).
stop_wait() {
  local deadline=$(( $(date +%s) + 15 )) line pid bin left
  while [ $# -gt 0 ]; do
    left=()
    for line in "$@"; do
      read -r pid bin <<<"$line"
      if is_ours "$pid" "$bin"; then
        left+=("$line")
      fi
    done
    set -- "${left[@]}"
    [ $# -gt 0 ] || return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      for line in "$@"; do
        read -r pid bin <<<"$line"
        note "pid $pid ($bin) ignored SIGTERM for 15 s; sending SIGKILL"
        if is_ours "$pid" "$bin"; then
          kill -KILL "$pid" 2>/dev/null || true
        fi
      done
      sleep 0.5
      return 0
    fi
    sleep 0.2
  done
}

k8s_env_down() {
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "$1: no such folder"
  K8S_ENV_DIR="$dir"
  local pids="$K8S_ENV_DIR/pids"
  if [ ! -f "$pids" ]; then
    note "nothing recorded as running in $K8S_ENV_DIR"
    return 0
  fi
  local lines=() line name pid bin i stopped=0
  mapfile -t lines <"$pids"
  # The controllers first, then the API server, etcd last: an API server
  # whose etcd is gone waits out its shutdown instead of finishing it.
  local stage
  for stage in controllers kube-apiserver etcd; do
    local live=()
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
      read -r name pid bin <<<"${lines[i]}"
      case "$stage:$name" in
        controllers:kube-apiserver | controllers:etcd) continue ;;
        controllers:*) ;;
        "$stage:$stage") ;;
        *) continue ;;
      esac
      if is_ours "$pid" "$bin"; then
        kill -TERM "$pid" 2>/dev/null || true
        live+=("$pid $bin")
      fi
    done
    stop_wait "${live[@]}"
    stopped=$(( stopped + ${#live[@]} ))
  done
  mv "$pids" "$pids.stopped"
  note "down: stopped $stopped processes of $K8S_ENV_DIR"
}
