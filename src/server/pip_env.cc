#include "server/pip_env.h"

#include "common/strings.h"

namespace tau::server {
namespace {

// POSIX sh. Arguments: the paths, then the job's own command.
constexpr char kScript[] = R"sh(reqs="$1"; root="$2"; failed="$3"; base="$4"; shift 4
py="${base:-python3}"
# -I: a file of the job's (pip.py, venv.py) must not shadow the modules.
key=$({ "$py" -I -c 'import sys; print(sys.version)'; if [ -n "$base" ]; then echo "layered on $base"; fi
        cat "$reqs"; } | sha256sum | cut -c1-16)
venv="$root/$key"
# With a base Python, the environment also sees the base's packages (a .pth
# file naming its site-packages), so pip installs only what it lacks.
layer() {
  [ -n "$base" ] || return 0
  dirs=$("$base" -I -c 'import sysconfig as s; p = s.get_paths(); print(p["purelib"]); print(p["platlib"])') &&
  "$1/bin/python" -I -c 'import sys, sysconfig
with open(sysconfig.get_paths()["purelib"] + "/tau-base.pth", "w") as f:
    f.write("\n".join(dict.fromkeys(sys.argv[1].split())) + "\n")' "$dirs"
}
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p "$root" || exit 1
  exec 9>"$venv.lock"
  flock 9
  if [ ! -x "$venv/bin/python" ]; then
    echo "tau: building the Python environment for runtime.pip in $venv"
    rm -rf "$venv.tmp"
    if ! { "$py" -I -m venv "$venv.tmp" && layer "$venv.tmp" &&
           "$venv.tmp/bin/python" -I -m pip install --disable-pip-version-check --no-input -r "$reqs"; }; then
      rm -rf "$venv.tmp"
      : > "$failed"
      echo "tau: installing runtime.pip failed; see pip's output above"
      exit 1
    fi
    mv "$venv.tmp" "$venv"
  fi
  exec 9>&-
fi
VIRTUAL_ENV="$venv"; PATH="$venv/bin:$PATH"; export VIRTUAL_ENV PATH
printf '%s\n' "$venv" > "$reqs.venv" 2>/dev/null || true  # for the evidence (pip freeze)
exec "$@"
)sh";

}  // namespace

std::vector<std::string> WrapWithPipSetup(const PipSetup& setup, const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"/bin/sh",          "-c",
                                  kScript,            "tau-pip",
                                  setup.requirements_file, setup.venv_root,
                                  setup.setup_failed_marker, setup.base_python};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace tau::server
