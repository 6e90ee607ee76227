# `scripts/k8s-env build`: compiles the test cluster's components from the
# pinned wrapper modules beside this folder (one per group, go.mod and go.sum
# committed) into a cache keyed by everything that decides the output.
# Sourced, never run.
#
# Contract: on success, K8S_ENV_HOME names a folder holding bin/ (etcd,
# etcdctl, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# kueue, ray-operator, kwok, helm), manifests/ (Kueue CRDs, their conversion
# patches and webhook configuration, KubeRay CRDs, kwok stages), versions and the file
# `complete`. A folder without `complete` is never used. Concurrent builds
# serialise on a lock; the second finds the first one's result.

# The cache key: the toolchain, this file (it holds every flag) and every
# wrapper module's go.mod and go.sum.
cache_key() {
  {
    echo "$GO_VERSION"
    cat "$K8S_ENV_SRC/lib/build.sh"
    local g
    for g in kubernetes etcd kueue kuberay kwok helm; do
      echo "== $g"
      cat "$K8S_ENV_SRC/$g/go.mod" "$K8S_ENV_SRC/$g/go.sum"
    done
  } | sha256sum | cut -c1-16
}

# Version and release date of MOD as pinned by wrapper module GROUP.
mod_version() {
  (cd "$K8S_ENV_SRC/$1" && "$GO" list -m -f '{{.Version}}' "$2") ||
    die "could not resolve $2 as pinned by $K8S_ENV_SRC/$1/go.mod (is the Go module proxy reachable?)"
}
mod_date() {
  (cd "$K8S_ENV_SRC/$1" && "$GO" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "$2") ||
    die "could not resolve $2 as pinned by $K8S_ENV_SRC/$1/go.mod (is the Go module proxy reachable?)"
}

# Runs one `go build` for GROUP at the lowest priority, logging to LOG.
# Arguments after GROUP are go build's.
go_build() {
  local group="$1"
  shift
  (cd "$K8S_ENV_SRC/$group" &&
     nice -n 19 "$GO" build -trimpath "$@") >>"$BUILD_LOG" 2>&1 ||
    {
      tail -n 30 "$BUILD_LOG" >&2
      die "building $group failed (full log: $BUILD_LOG)"
    }
}

# Kubernetes: the version must be stamped, or the binaries report
# v0.0.0-master, which Kueue and kwok reject.
build_kubernetes() {
  local v d major minor pkg flags=()
  v="$(mod_version kubernetes k8s.io/kubernetes)"
  d="$(mod_date kubernetes k8s.io/kubernetes)"
  major="${v#v}"; major="${major%%.*}"
  minor="${v#v*.}"; minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=("-X $pkg.gitVersion=$v" "-X $pkg.gitMajor=$major" "-X $pkg.gitMinor=$minor"
            "-X $pkg.gitTreeState=clean" "-X $pkg.buildDate=$d")
  done
  go_build kubernetes -ldflags "-s -w ${flags[*]}" -o "$1/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  echo "kubernetes $v" >>"$2"
}

build_etcd() {
  local v
  v="$(mod_version etcd go.etcd.io/etcd/server/v3)"
  local flags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$v"
  go_build etcd -ldflags "$flags" -o "$1/etcd" go.etcd.io/etcd/server/v3
  go_build etcd -ldflags "$flags" -o "$1/etcdctl" go.etcd.io/etcd/etcdctl/v3
  echo "etcd $v" >>"$2"
}

build_kueue() {
  local v d
  v="$(mod_version kueue sigs.k8s.io/kueue)"
  d="$(mod_date kueue sigs.k8s.io/kueue)"
  go_build kueue -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v -X sigs.k8s.io/kueue/pkg/version.GitCommit=$v -X sigs.k8s.io/kueue/pkg/version.BuildDate=$d" \
    -o "$1/kueue" sigs.k8s.io/kueue/cmd/kueue
  echo "kueue $v" >>"$2"
}

build_kuberay() {
  local v d
  v="$(mod_version kuberay github.com/ray-project/kuberay/ray-operator)"
  d="$(mod_date kuberay github.com/ray-project/kuberay/ray-operator)"
  go_build kuberay -ldflags "-s -w -X main._buildTime_=$d -X main._commitId_=$v" \
    -o "$1/ray-operator" github.com/ray-project/kuberay/ray-operator
  echo "kuberay $v" >>"$2"
}

build_kwok() {
  local v kv
  v="$(mod_version kwok sigs.k8s.io/kwok)"
  kv="$(mod_version kubernetes k8s.io/kubernetes)"
  go_build kwok -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${v#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${kv#v}" \
    -o "$1/kwok" sigs.k8s.io/kwok/cmd/kwok
  echo "kwok $v" >>"$2"
}

# Helm stamps its own version and the Kubernetes version its client
# libraries speak (major+1 as helm's Makefile does: "1" + 0 from v0.x).
build_helm() {
  local v cv kmajor kminor
  v="$(mod_version helm helm.sh/helm/v3)"
  cv="$(mod_version helm k8s.io/client-go)"
  cv="${cv#v}"
  kmajor=$(( ${cv%%.*} + 1 ))
  kminor="${cv#*.}"; kminor="${kminor%%.*}"
  local p=helm.sh/helm/v3
  go_build helm -ldflags "-s -w -X $p/internal/version.version=$v -X $p/internal/version.gitTreeState=clean -X $p/pkg/lint/rules.k8sVersionMajor=$kmajor -X $p/pkg/lint/rules.k8sVersionMinor=$kminor -X $p/pkg/chartutil.k8sVersionMajor=$kmajor -X $p/pkg/chartutil.k8sVersionMinor=$kminor" \
    -o "$1/helm" helm.sh/helm/v3/cmd/helm
  echo "helm $v" >>"$2"
}

# Copies the manifests the cluster installs out of the module cache.
copy_manifests() {
  local out="$1" kueue kuberay kwok
  kueue="$(module_dir sigs.k8s.io/kueue "$(mod_version kueue sigs.k8s.io/kueue)")"
  kuberay="$(module_dir github.com/ray-project/kuberay/ray-operator "$(mod_version kuberay github.com/ray-project/kuberay/ray-operator)")"
  kwok="$(module_dir sigs.k8s.io/kwok "$(mod_version kwok sigs.k8s.io/kwok)")"
  mkdir -p "$out/kueue/crd" "$out/kueue/webhook" "$out/kuberay/crd" "$out/kwok"
  cp "$kueue"/config/components/crd/bases/*.yaml "$out/kueue/crd/"
  mkdir -p "$out/kueue/crd-patches/patches"
  cp "$kueue/config/components/crd/kustomization.yaml" "$out/kueue/crd-patches/"
  cp "$kueue"/config/components/crd/patches/webhook_in_*.yaml "$out/kueue/crd-patches/patches/"
  cp "$kueue/config/components/webhook/manifests.yaml" "$out/kueue/webhook/"
  cp -r "$kueue/charts/kueue" "$out/kueue/chart"
  cp "$kuberay"/config/crd/bases/*.yaml "$out/kuberay/crd/"
  cp -r "$kwok/kustomize/stage" "$out/kwok/stage"
  chmod -R u+w "$out"
}

# Sets K8S_ENV_HOME, building first when the cache has no complete folder
# for the current key. Prints whether it was a cache hit and how long it took.
k8s_env_build() {
  local start key dest tmp
  start="$(date +%s)"
  find_go
  go_env
  key="$(cache_key)"
  dest="$K8S_ENV_CACHE_ROOT/$key"
  K8S_ENV_HOME="$dest"
  if [ -f "$dest/complete" ]; then
    note "cache hit: $dest ($(( $(date +%s) - start )) s)"
    return 0
  fi
  mkdir -p "$K8S_ENV_CACHE_ROOT"
  exec 9>"$K8S_ENV_CACHE_ROOT/build.lock"
  if ! flock -n 9; then
    note "another build holds $K8S_ENV_CACHE_ROOT/build.lock; waiting for it"
    flock 9
  fi
  if [ -f "$dest/complete" ]; then
    exec 9>&-
    note "cache hit after waiting: $dest ($(( $(date +%s) - start )) s)"
    return 0
  fi
  note "building the test cluster's components with $GO_VERSION into $dest (about 16 min on 2 cores from empty caches; log: $dest.partial/build.log)"
  tmp="$dest.partial"
  rm -rf "$tmp"
  mkdir -p "$tmp/bin"
  BUILD_LOG="$tmp/build.log"
  : >"$tmp/versions"
  local g t
  for g in etcd kubernetes kueue kuberay kwok helm; do
    t="$(date +%s)"
    echo "== $g" >>"$BUILD_LOG"
    "build_$g" "$tmp/bin" "$tmp/versions"
    note "built $g in $(( $(date +%s) - t )) s"
  done
  copy_manifests "$tmp/manifests"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$tmp/complete"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  exec 9>&-
  note "built in $(( $(date +%s) - start )) s: $dest"
}
