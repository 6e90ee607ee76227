#!/usr/bin/env bash
# Gives a test the identities the Helm chart gives taugridd and the node
# agent: the chart's RBAC (templates/rbac.yaml, rendered by helm with the
# given workspace namespaces) and its ServiceAccounts are applied to the
# test cluster, a token of each ServiceAccount is requested (`kubectl create
# token`), and a kubeconfig with that token and nothing else is written for
# each: OUT_DIR/server.kubeconfig and OUT_DIR/agent.kubeconfig. A process
# run with one can do exactly what the chart lets it do, so any verb the
# chart's Roles lack fails the test that drives it.
#   chart_service_account.sh SOURCE_DIR CLUSTER_DIR OUT_DIR NAMESPACE...
# NAMESPACE...: the workspaces (the chart binds its workspace Role in each);
# they must exist.
set -euo pipefail
src="$1" dir="$2" out_dir="$3"
shift 3
[ $# -gt 0 ] || { echo "chart_service_account.sh: name at least one workspace namespace" >&2; exit 2; }

# shellcheck disable=SC1091
. "$dir/env"
PATH="$K8S_ENV_BIN:$PATH"
release_ns=taugrid-system
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export HELM_CACHE_HOME="$work/cache" HELM_CONFIG_HOME="$work/config" HELM_DATA_HOME="$work/data"

{
  echo "platform:"
  echo "  workspaces:"
  for ns in "$@"; do
    echo "    - {namespace: $ns, clusterQueue: default, localQueue: default, createNamespace: false}"
  done
} >"$work/values.yaml"

helm template taugrid "$src/charts/taugrid" -n "$release_ns" -f "$work/values.yaml" \
  --show-only templates/rbac.yaml >"$work/rbac.yaml"
kubectl create namespace "$release_ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
for sa in taugrid taugrid-agent; do
  kubectl create serviceaccount "$sa" -n "$release_ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
done
kubectl apply -f "$work/rbac.yaml" >/dev/null

ca="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
server="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')"
umask 077
mkdir -p "$out_dir"
write() {  # write SERVICE_ACCOUNT FILE
  local token
  token="$(kubectl create token "$1" -n "$release_ns" --duration 24h)"
  cat >"$2.tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: taugrid-test
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $1
  user:
    token: $token
contexts:
- name: taugrid-test
  context:
    cluster: taugrid-test
    user: $1
current-context: taugrid-test
KUBECONFIG
  mv "$2.tmp" "$2"
}
write taugrid "$out_dir/server.kubeconfig"
write taugrid-agent "$out_dir/agent.kubeconfig"
