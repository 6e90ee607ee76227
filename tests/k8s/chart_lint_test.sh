#!/usr/bin/env bash
# The Helm chart charts/taugrid without a cluster: `helm lint` is clean for
# the default values and each example under charts/taugrid/examples/;
# values.schema.json and the chart's own checks refuse bad values with a
# message naming the value; the rendered control plane is one Recreate
# replica of `taugridd --backend kubernetes` without --kubeconfig, its state
# on a kept PVC; the default image tag is the chart's appVersion, which is
# CMake's project version.
#   chart_lint_test.sh SOURCE_DIR
# helm comes from the test cluster's build (scripts/k8s-env home).
set -euo pipefail
src="$1"
chart="$src/charts/taugrid"
home="$("$src/scripts/k8s-env" home)"
helm="$home/bin/helm"
[ -x "$helm" ] || { echo "FAIL: $helm is missing: scripts/k8s-env build did not build helm" >&2; exit 1; }
PYTHON=python3
for c in "$(command -v python3 || true)" /usr/bin/python3; do
  if [ -n "$c" ] && "$c" -c 'import yaml' 2>/dev/null; then PYTHON="$c"; break; fi
done
fails=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

echo "== helm lint: default values and every example"
examples=("$chart"/examples/*.yaml)
[ "${#examples[@]}" -ge 3 ] || fail "expected at least three example value files, found ${#examples[@]}"
out="$("$helm" lint --strict "$chart" 2>&1)" || fail "helm lint (default values): $out"
for f in "${examples[@]}"; do
  out="$("$helm" lint --strict "$chart" -f "$f" 2>&1)" || fail "helm lint -f $f: $out"
done

# refused WHAT EXPECTED ARGS...: rendering with ARGS fails, and the error
# contains EXPECTED (the value it names).
refused() {
  local what="$1" expected="$2" out
  shift 2
  if out="$("$helm" template t "$chart" "$@" 2>&1)"; then
    fail "$what: rendering succeeded; expected an error naming $expected"
  elif [[ "$out" != *"$expected"* ]]; then
    fail "$what: the error does not name $expected: $out"
  else
    echo "ok: $what"
  fi
}
echo "== bad values are refused, naming the value"
refused "an unknown unhealthy action" "at '/agent/unhealthyAction': value must be one of" \
  --set agent.unhealthyAction=reboot
refused "an unknown key" "/server" --set server.replicas=2
refused "a quota that is no quantity" "/platform/clusterQueues/0/resourceGroups/0/flavors/0/quotas/nvidia.com~1gpu/nominal" \
  --set-string 'platform.clusterQueues[0].resourceGroups[0].flavors[0].quotas.nvidia\.com/gpu.nominal=eight'
refused "a workspace namespace that is no DNS label" "at '/platform/workspaces/0/namespace'" \
  --set 'platform.workspaces[0].namespace=Team_A,platform.workspaces[0].clusterQueue=default,platform.workspaces[0].localQueue=default'
refused "a workspace naming an unknown ClusterQueue" 'platform.workspaces[team-a]: clusterQueue "gpu" is not one of platform.clusterQueues' \
  --set 'platform.workspaces[0].namespace=team-a,platform.workspaces[0].clusterQueue=gpu,platform.workspaces[0].localQueue=default'
# cq_values FLAVOR RESOURCE...: values whose one ClusterQueue covers the
# RESOURCEs with FLAVOR, giving each of cpu, memory, nvidia.com/gpu a quota.
cq_values() {
  local flavor="$1"
  shift
  local r list=""
  for r in "$@"; do list="$list\"$r\", "; done
  cat <<VALUES
platform:
  clusterQueues:
    - name: default
      resourceGroups:
        - resources: [${list%, }]
          flavors:
            - name: $flavor
              quotas:
                cpu: {nominal: "8"}
                memory: {nominal: 64Gi}
                nvidia.com/gpu: {nominal: "8"}
VALUES
}
cq_values a100 cpu memory nvidia.com/gpu >"$tmp/unknown-flavor.yaml"
refused "a ClusterQueue naming an unknown flavor" 'platform.clusterQueues[default]: flavor "a100" is not one of platform.gpuClasses' \
  -f "$tmp/unknown-flavor.yaml"
cq_values default-gpu cpu memory nvidia.com/gpu example.com/fpga >"$tmp/no-quota.yaml"
refused "a flavor without quota for a covered resource" 'platform.clusterQueues[default]: flavor "default-gpu" has no quota for resource "example.com/fpga"' \
  -f "$tmp/no-quota.yaml"
cq_values default-gpu cpu memory nvidia.com/gpu >"$tmp/good.yaml"
out="$("$helm" template t "$chart" -f "$tmp/good.yaml" 2>&1)" || fail "the same values with a known flavor and every quota are refused: $out"
refused "fair sharing with the bundled Kueue not configured for it" "kueue.managerConfig.controllerManagerConfigYaml has no top-level fairSharing" \
  --set kueue.enabled=true --set platform.fairSharing.enabled=true

echo "== the rendered control plane"
"$helm" template t "$chart" -n taugrid-system >"$tmp/default.yaml" || fail "helm template (default values) failed"
"$PYTHON" "$src/tests/k8s/chart_render_check.py" "$tmp/default.yaml" "$chart/Chart.yaml" "$src/CMakeLists.txt" ||
  fail "the rendered control plane is not as documented"
[ "$fails" -eq 0 ] || { echo "FAIL: $fails checks failed" >&2; exit 1; }
echo "PASS"
