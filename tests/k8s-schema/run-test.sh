#!/usr/bin/env bash
# Renders every example and valid spec with `tau render` and decodes the
# objects strictly into the upstream Kubernetes and KubeRay Go types
# (main.go). Exits 77 (ctest: skipped) with the reason when Go or its
# modules are not available.
#   run-test.sh SOURCE_DIR TAU_BINARY WORK_DIR
set -euo pipefail
src="$1" tau="$2" work="$3"
mkdir -p "$work"

if ! command -v go >/dev/null; then
  echo "SKIPPED: Go is not installed; the strict Kubernetes schema check needs Go >= 1.24"
  exit 77
fi
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${go_minor:-0}" -lt 24 ]; then
  echo "SKIPPED: $(go env GOVERSION) is too old; the strict Kubernetes schema check needs Go >= 1.24"
  exit 77
fi
cd "$src/tests/k8s-schema"
if ! go mod download >"$work/download.log" 2>&1; then
  echo "SKIPPED: the Go modules (k8s.io/api, KubeRay) could not be downloaded:"
  tail -3 "$work/download.log"
  exit 77
fi
go build -mod=readonly -o "$work/validate-objects" .

files=()
for spec in "$src"/examples/*.yaml "$src"/tests/specs/valid/*.yaml; do
  out="$work/$(basename "$(dirname "$spec")")-$(basename "$spec")"
  "$tau" render "$spec" >"$out"
  files+=("$out")
done
"$work/validate-objects" "${files[@]}"
