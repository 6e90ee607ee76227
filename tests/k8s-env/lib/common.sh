# Shared helpers of scripts/k8s-env: paths, messages, and the Go toolchain.
# Sourced, never run. Expects K8S_ENV_SRC (this folder's parent) to be set.

# Root of everything the build keeps between runs: Go's module and build
# caches and one folder of binaries and manifests per cache key.
K8S_ENV_CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/taugrid/k8s"

die() {
  echo "k8s-env: $*" >&2
  exit 1
}

note() {
  echo "k8s-env: $*" >&2
}

# Sets PYTHON to a Python 3 that can import yaml: the one on PATH when it
# can, else Debian's /usr/bin/python3, where ./scripts/install-deps puts
# PyYAML (python3-yaml). A PATH python3 from pyenv or a venv may lack it.
find_python() {
  local c
  for c in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import yaml' 2>/dev/null; then
      PYTHON="$c"
      return 0
    fi
  done
  die "up needs Python 3 with PyYAML (Debian package python3-yaml; ./scripts/install-deps installs it)"
}

# Finds Go 1.26 or newer (every wrapper module declares at most go 1.26.0)
# and sets GO to it. /usr/local/go/bin/go is tried when `go` is not on PATH.
find_go() {
  GO="$(command -v go || true)"
  if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then
    GO=/usr/local/go/bin/go
  fi
  if [ -z "$GO" ]; then
    die "Go 1.26 or newer is needed to build the test cluster's components, and no 'go' was found on PATH or at /usr/local/go/bin/go; install the Go toolchain (Debian 12's golang package is too old)"
  fi
  local v
  v="$("$GO" env GOVERSION)" || die "'$GO env GOVERSION' failed"
  v="${v#go}"
  local major="${v%%.*}" rest="${v#*.}"
  local minor="${rest%%.*}"
  if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 26 ]; }; then
    die "Go 1.26 or newer is needed to build the test cluster's components; $GO is go$v"
  fi
  GO_VERSION="go$v"
}

# The Go environment of every build and module query: pinned toolchain,
# dedicated caches under the cache root, no VCS stamping, no cgo.
go_env() {
  export GOMODCACHE="$K8S_ENV_CACHE_ROOT/gomod"
  export GOCACHE="$K8S_ENV_CACHE_ROOT/gobuild"
  export GOTOOLCHAIN=local
  export GOFLAGS=-buildvcs=false
  export CGO_ENABLED=0
}

# Prints the directory of module MOD@VERSION in the module cache.
module_dir() {
  echo "$GOMODCACHE/$1@$2"
}

# Prints the state letter of process PID (R, S, D, Z, ...) from
# /proc/PID/stat, or nothing when there is no such process.
proc_state() {
  sed -n 's/^.*) \([A-Za-z]\).*$/\1/p' "/proc/$1/stat" 2>/dev/null || true
}
