#!/usr/bin/env bash
# `helm install` of charts/taugrid (examples/one-gpu-class.yaml) into the
# test cluster (scripts/k8s-env; kwok runs the pods, so no image is pulled
# and no container runs: this checks the objects and their lifecycle, not
# taugridd): the state PVC binds, the taugridd Deployment becomes
# Available, the agent DaemonSet is Available on both GPU nodes, and the
# platform's Kueue objects exist and are active; `helm upgrade` keeps the
# same PVC; `helm uninstall` leaves no object of the release behind except
# that PVC.
#   chart_install_test.sh SOURCE_DIR WORK_DIR
# Exits 77 (ctest: skipped) only when not root, which `up` needs.
set -euo pipefail
src="$1" work="$2"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: not root; the test cluster runs Kueue in a private mount namespace (unshare -m), which needs root"
  exit 77
fi

k8s_env="$src/scripts/k8s-env"
chart="$src/charts/taugrid"
dir="$work/cluster"
rm -rf "$work"
mkdir -p "$dir"

fail() {
  echo "FAIL: $*" >&2
  if [ -f "$dir/env" ] && [ -f "$dir/pids" ]; then
    kubectl get all,pvc,pv,clusterqueues,localqueues,resourceflavors -A -o wide >&2 || true
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
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"
ns=taugrid-system

# The test cluster has no storage provisioner: one PersistentVolume without
# a class for the chart's claim (the cluster has no default class either).
mkdir -p "$work/pv"
kubectl apply -f - >/dev/null <<YAML || fail "creating the PersistentVolume"
apiVersion: v1
kind: PersistentVolume
metadata:
  name: taugrid-test-state
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath:
    path: $work/pv
YAML

echo "== helm install"
helm install taugrid "$chart" -n "$ns" --create-namespace -f "$chart/examples/one-gpu-class.yaml" \
  --wait --timeout 180s || fail "helm install did not finish with everything ready"
avail="$(kubectl get deployment taugrid -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')"
[ "$avail" = "True" ] || fail "Deployment taugrid is not Available: $avail"
ds="$(kubectl get daemonset taugrid-agent -n "$ns" -o jsonpath='{.status.desiredNumberScheduled}/{.status.numberAvailable}')"
[ "$ds" = "2/2" ] || fail "DaemonSet taugrid-agent: expected 2 of 2 GPU nodes Available, got $ds"
pvc_uid="$(kubectl get pvc taugrid-state -n "$ns" -o jsonpath='{.metadata.uid}')"
[ "$(kubectl get pvc taugrid-state -n "$ns" -o jsonpath='{.status.phase}')" = "Bound" ] || fail "the state PVC is not Bound"
active="$(kubectl get clusterqueue gpu -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')"
for _ in $(seq 60); do
  [ "$active" = "True" ] && break
  sleep 0.5
  active="$(kubectl get clusterqueue gpu -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')"
done
[ "$active" = "True" ] || fail "ClusterQueue gpu is not Active in Kueue: $active"
for n in team-vision team-speech; do
  kubectl get localqueue default -n "$n" >/dev/null || fail "no LocalQueue default in workspace $n"
done
echo "ok: installed: Deployment Available, DaemonSet 2/2, PVC Bound, ClusterQueue Active, LocalQueues in both workspaces"

echo "== helm upgrade"
helm upgrade taugrid "$chart" -n "$ns" -f "$chart/examples/one-gpu-class.yaml" --set server.logLevel=debug \
  --wait --timeout 180s || fail "helm upgrade did not finish with everything ready"
args="$(kubectl get deployment taugrid -n "$ns" -o jsonpath='{.spec.template.spec.containers[0].args}')"
[[ "$args" == *'"--log-level","debug"'* ]] || fail "the upgrade did not reach the Deployment: $args"
[ "$(kubectl get pvc taugrid-state -n "$ns" -o jsonpath='{.metadata.uid}')" = "$pvc_uid" ] ||
  fail "the upgrade replaced the state PVC"
echo "ok: upgraded; the same PVC"

echo "== helm uninstall"
helm uninstall taugrid -n "$ns" --wait --timeout 180s || fail "helm uninstall failed"
kinds="$(kubectl api-resources --verbs=list -o name | grep -v '^events' | paste -sd, -)"
left="$(kubectl get "$kinds" -A -l app.kubernetes.io/instance=taugrid -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}{"\n"}{end}' 2>/dev/null | sort -u)"
left_but_terminating="$(grep -v '^Namespace/' <<<"$left" || true)"
[ "$left_but_terminating" = "PersistentVolumeClaim/taugrid-state" ] ||
  fail "after uninstall expected only PersistentVolumeClaim/taugrid-state, found: $left"
for n in team-vision team-speech; do
  phase="$(kubectl get namespace "$n" -o jsonpath='{.status.phase}' 2>/dev/null || echo gone)"
  [ "$phase" = "gone" ] || [ "$phase" = "Terminating" ] || fail "workspace namespace $n is $phase after uninstall"
done
[ "$(kubectl get pvc taugrid-state -n "$ns" -o jsonpath='{.metadata.uid}')" = "$pvc_uid" ] || fail "the PVC changed"
echo "ok: uninstalled; only the state PVC is left"
echo "PASS"
