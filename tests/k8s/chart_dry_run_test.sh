#!/usr/bin/env bash
# The Helm chart charts/taugrid against a real API server (scripts/k8s-env:
# Kueue's CRDs and webhooks, KubeRay's CRDs): `helm template` of the default
# values and of each example under charts/taugrid/examples/, CRDs included,
# is accepted by `kubectl apply --server-side --dry-run=server` (schema,
# CRD validation, Kueue's validating and mutating webhooks, RBAC). The
# namespaces a render creates (the release's and the workspaces') are made
# for real first: a dry run persists nothing, so objects in a namespace the
# same dry run creates would be refused. A ClusterQueue the chart could
# never render (a quota with borrowingLimit but no cohort) shows the dry run
# does reach validation.
#   chart_dry_run_test.sh SOURCE_DIR WORK_DIR
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
mkdir -p "$dir" "$work/rendered"

cleanup() {
  [ ! -f "$dir/pids" ] || "$k8s_env" down "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$k8s_env" up "$dir" || { echo "FAIL: scripts/k8s-env up failed" >&2; exit 1; }
# shellcheck disable=SC1091
. "$dir/env"
PATH="$K8S_ENV_BIN:$PATH"
ns=taugrid-system
fails=0

PYTHON=python3
for c in "$(command -v python3 || true)" /usr/bin/python3; do
  if [ -n "$c" ] && "$c" -c 'import yaml' 2>/dev/null; then PYTHON="$c"; break; fi
done

# split RENDERED EXISTING-CRDS: writes RENDERED.namespaces (the Namespace
# objects' names), RENDERED.crds (the CustomResourceDefinitions named in the
# file EXISTING-CRDS, one customresourcedefinition.apiextensions.k8s.io/NAME
# a line) and RENDERED.rest (everything else).
split() {
  "$PYTHON" - "$1" "$2" <<'PY'
import sys, yaml
path, existing_path = sys.argv[1:3]
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
existing = {l.strip().split("/", 1)[-1] for l in open(existing_path) if l.strip()}
docs = [d for d in yaml.load_all(open(path), Loader=loader) if d]
with open(path + ".namespaces", "w") as f:
    for d in docs:
        if d["kind"] == "Namespace":
            f.write(d["metadata"]["name"] + "\n")
def replaces(d):
    return d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] in existing
yaml.dump_all([d for d in docs if replaces(d)], open(path + ".crds", "w"), Dumper=dumper)
yaml.dump_all([d for d in docs if not replaces(d)], open(path + ".rest", "w"), Dumper=dumper)
PY
}

# dry_run NAME VALUES-ARGS...: renders the chart and dry-runs the result.
dry_run() {
  local name="$1" out n
  shift
  local file="$work/rendered/$name.yaml"
  if ! "$K8S_ENV_BIN/helm" template taugrid "$chart" -n "$ns" --include-crds "$@" >"$file" 2>"$file.err"; then
    echo "FAIL: $name: helm template failed: $(cat "$file.err")" >&2
    fails=$((fails + 1))
    return
  fi
  kubectl get crd -o name >"$work/rendered/existing-crds"
  split "$file" "$work/rendered/existing-crds"
  kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null
  while read -r n; do
    kubectl get namespace "$n" >/dev/null 2>&1 || kubectl create namespace "$n" >/dev/null
  done <"$file.namespaces"
  local ok=1 accepted=0
  # The test cluster has Kueue's and KubeRay's CRDs already, patched for its
  # out-of-cluster Kueue (a conversion webhook by URL): a CRD the chart ships
  # is checked whole, as an update replacing that one (kubectl replace), not
  # merged into it.
  if grep -q '^kind:' "$file.crds"; then
    if out="$(kubectl replace --dry-run=server -f "$file.crds" 2>&1)"; then
      accepted=$((accepted + $(grep -c 'replaced' <<<"$out")))
    else
      ok=0
      echo "FAIL: $name: the API server refused CRDs of $file:" >&2
      grep -v 'replaced' <<<"$out" >&2
    fi
  fi
  if out="$(kubectl apply --server-side --force-conflicts --field-manager=helm --dry-run=server -f "$file.rest" 2>&1)"; then
    accepted=$((accepted + $(grep -c 'serverside-applied' <<<"$out")))
  else
    ok=0
    echo "FAIL: $name: the API server refused objects of $file:" >&2
    grep -v 'serverside-applied' <<<"$out" >&2
  fi
  if [ "$ok" -eq 1 ]; then
    echo "ok: $name: $accepted objects accepted by the API server ($(grep -c '^kind:' "$file") rendered)"
  else
    fails=$((fails + 1))
  fi
}

echo "== helm template | kubectl apply --dry-run=server"
dry_run default
for f in "$chart"/examples/*.yaml; do
  dry_run "$(basename "$f" .yaml)" -f "$f"
done

echo "== the dry run reaches validation"
cat >"$work/rendered/invalid.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: no-cohort-but-borrowing
spec:
  resourceGroups:
    - coveredResources: ["nvidia.com/gpu"]
      flavors:
        - name: default-gpu
          resources:
            - name: nvidia.com/gpu
              nominalQuota: "8"
              borrowingLimit: "8"
YAML
if kubectl apply --server-side --field-manager=helm --dry-run=server -f "$work/rendered/invalid.yaml" >/dev/null 2>&1; then
  echo "FAIL: a ClusterQueue with a borrowingLimit and no cohort was accepted: the dry run does not validate" >&2
  fails=$((fails + 1))
else
  echo "ok: an invalid ClusterQueue is refused"
fi

[ "$fails" -eq 0 ] || { echo "FAIL: $fails renders refused" >&2; exit 1; }
echo "PASS"
