#!/usr/bin/env python3
"""The container image from scripts/build-image, end to end.

    image_test.py SOURCE_DIR BUILD_DIR ARTIFACT_DIR

Builds the OCI layout from BUILD_DIR twice and checks that both builds give
the same digest, that the layout is what an OCI consumer verifies (every
blob's digest and size, the config's diff_ids), that a bad build folder (a
program missing, a library the loader does not find, binaries of another
version) is refused with nothing written; then unpacks the layers into a root folder
and runs `taugridd --version`, `tau validate` and tau-shim from it with
chroot as the image's user, so a library missing from the image fails the
test (checked too: a library removed from the root makes the programs fail);
then serves: taugridd started in the root (a private /proc mount through
`unshare --mount`) answers /healthz and `tau list` from the root.

The chroot part needs root, the serving part `unshare --mount` (exit 77,
saying which and that the rest passed, without them). Exit 0 passed,
1 failed, 77 skipped.
"""

import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request

EPOCH = 1700000000
NONROOT = "65532:65532"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    return ok


def build_image(source, build, out, env_extra=None):
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, os.path.join(source, "scripts", "build-image"),
                           "--build-dir", build, "--out", out], capture_output=True, text=True, env=env)


def blob(layout, digest):
    algo, hexdigest = digest.split(":", 1)
    with open(os.path.join(layout, "blobs", algo, hexdigest), "rb") as f:
        return f.read()


def verified_blob(layout, descriptor, what):
    data = blob(layout, descriptor["digest"])
    check("sha256:" + hashlib.sha256(data).hexdigest() == descriptor["digest"], f"{what}: digest of its blob")
    check(len(data) == descriptor["size"], f"{what}: size {descriptor['size']} against the blob's {len(data)}")
    return data


def read_layout(layout):
    """(manifest descriptor in the index, manifest, config, [uncompressed layer tars])."""
    with open(os.path.join(layout, "oci-layout")) as f:
        check(json.load(f) == {"imageLayoutVersion": "1.0.0"}, "oci-layout says version 1.0.0")
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    check(index.get("schemaVersion") == 2, "index.json schemaVersion 2")
    check(len(index["manifests"]) == 1, "index.json holds one manifest")
    desc = index["manifests"][0]
    manifest = json.loads(verified_blob(layout, desc, "manifest"))
    check(manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json", "manifest media type")
    config = json.loads(verified_blob(layout, manifest["config"], "config"))
    layers = []
    for i, layer in enumerate(manifest["layers"]):
        check(layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip", f"layer {i}: media type")
        layers.append(gzip.decompress(verified_blob(layout, layer, f"layer {i}")))
    check(config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(t).hexdigest() for t in layers],
          "config diff_ids are the digests of the uncompressed layers")
    return desc, manifest, config, layers


def project_version(source):
    with open(os.path.join(source, "CMakeLists.txt")) as f:
        return re.search(r"^\s*project\(\s*\S+\s+VERSION\s+(\S+?)[\s)]", f.read(), re.M).group(1)


def unpack(layers, root):
    for t in layers:
        with tarfile.open(fileobj=io.BytesIO(t)) as tar:
            kwargs = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
            tar.extractall(root, numeric_owner=True, **kwargs)


def in_root(root, argv):
    """Runs ARGV inside ROOT as the image's user with the image's PATH only."""
    return subprocess.run(["env", "-i", "PATH=/usr/local/bin", "HOME=/home/nonroot", "TAU_HOME=/var/lib/taugrid",
                           shutil.which("chroot"), f"--userspec={NONROOT}", root] + argv,
                          capture_output=True, text=True)


def serve_in_root(root, version, log_path):
    """Starts taugridd inside ROOT as the image's user (with a private /proc
    mount, as a container runtime gives it), checks that it answers /healthz
    and that tau inside ROOT reaches it, and stops it. None when it ran, or
    the reason it cannot run here."""
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount is not permitted here ({probe.stderr.strip()})"
    os.makedirs(os.path.join(root, "proc"), exist_ok=True)
    script = ('mount -t proc proc "$1/proc" && exec env -i PATH=/usr/local/bin HOME=/home/nonroot '
              'TAU_HOME=/var/lib/taugrid "$2" --userspec=' + NONROOT + ' "$1" /usr/local/bin/taugridd')
    server_json = os.path.join(root, "var", "lib", "taugrid", "server.json")
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(["unshare", "--mount", "--fork", "--kill-child=SIGTERM", "sh", "-c", script,
                                   "sh", root, shutil.which("chroot")], stdout=log, stderr=subprocess.STDOUT)
    try:
        info = None
        deadline = time.monotonic() + 60  # a limit on waiting, not a timing assertion
        while info is None and daemon.poll() is None and time.monotonic() < deadline:
            try:
                with open(server_json) as f:
                    info = json.load(f)
            except (OSError, ValueError):
                time.sleep(0.1)
        if not check(info is not None, f"taugridd in the image wrote server.json (see {log_path})"):
            return None
        with urllib.request.urlopen(info["url"] + "/healthz", timeout=10) as resp:
            health = json.load(resp)
        check(health == {"status": "ok", "version": version}, f"taugridd in the image answers /healthz: {health}")
        r = in_root(root, ["tau", "list"])
        check(r.returncode == 0, f"tau list in the image against it: exit {r.returncode}, "
                                 f"{(r.stdout + r.stderr).strip()!r}")
        os.kill(info["pid"], signal.SIGTERM)
        check(daemon.wait(timeout=60) == 0, f"taugridd in the image stops on SIGTERM (see {log_path})")
    finally:
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(timeout=30)
    return None


def check_bad_builds_refused(source, artifacts, version):
    """A program whose library the loader does not find, and a build whose
    tau reports another version than the source tree: refused, naming the
    problem, nothing written. Needs a C compiler to make such a program."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("note: no C compiler: the unresolved-library refusal is not checked", file=sys.stderr)
        return
    work = os.path.join(artifacts, "unresolved")
    bin_dir = os.path.join(work, "build", "bin")
    os.makedirs(bin_dir)
    with open(os.path.join(work, "gone.c"), "w") as f:
        f.write("int gone(void) { return 0; }\n")
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write("int gone(void);\nint main(void) { return gone(); }\n")
    lib = os.path.join(work, "libtaugone.so")
    r = subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libtaugone.so", "-o", lib, os.path.join(work, "gone.c")],
                       capture_output=True, text=True)
    r2 = subprocess.run([cc, "-o", os.path.join(bin_dir, "taugridd"), os.path.join(work, "main.c"), lib],
                        capture_output=True, text=True)
    if not check(r.returncode == 0 and r2.returncode == 0, f"compiling the test program: {r.stderr}{r2.stderr}"):
        return
    os.remove(lib)
    for name, text in (("tau", f"#!/bin/sh\necho 'tau {version} (test)'\n"), ("tau-shim", "#!/bin/sh\n"),
                       ("taugrid-agent", "#!/bin/sh\n")):
        with open(os.path.join(bin_dir, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(bin_dir, name), 0o755)
    out = os.path.join(work, "layout")
    r = build_image(source, os.path.join(work, "build"), out)
    check(r.returncode == 1 and "taugridd: needs libtaugone.so, which the dynamic loader does not find" in r.stderr,
          f"a program with a library the loader does not find is refused naming both: exit {r.returncode}, "
          f"{r.stderr.strip()!r}")
    check(not os.path.exists(out), "the refused build writes no layout")

    # A build folder older than the source tree: its tau reports another version.
    with open(os.path.join(bin_dir, "tau"), "w") as f:
        f.write("#!/bin/sh\necho 'tau 0.0.0-stale (test)'\n")
    r = build_image(source, os.path.join(work, "build"), out)
    check(r.returncode == 1 and f"tau is version 0.0.0-stale, the source tree says {version}" in r.stderr,
          f"a stale build folder is refused naming both versions: exit {r.returncode}, {r.stderr.strip()!r}")
    check(not os.path.exists(out), "the refused stale build writes no layout")


def main(source, build, artifacts):
    version = project_version(source)
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(artifacts)

    # A build folder without the programs: refused, naming the file, nothing written.
    empty = os.path.join(artifacts, "empty-build")
    os.makedirs(os.path.join(empty, "bin"))
    refused_out = os.path.join(artifacts, "refused")
    r = build_image(source, empty, refused_out)
    check(r.returncode == 1, f"build-image without programs exits 1 (got {r.returncode})")
    check(os.path.join(empty, "bin", "taugridd") + ": missing" in r.stderr,
          f"the refusal names the missing program: {r.stderr.strip()!r}")
    check(not os.path.exists(refused_out), "a refused build writes no layout")
    check([n for n in os.listdir(artifacts) if n.startswith(".build-image-")] == [], "no staging folder left")

    check_bad_builds_refused(source, artifacts, version)

    # Two builds: the same digest, byte for byte the same index.
    layouts = [os.path.join(artifacts, "layout-a"), os.path.join(artifacts, "layout-b")]
    for layout in layouts:
        r = build_image(source, build, layout)
        if not check(r.returncode == 0, f"build-image exits 0: {r.stderr.strip()}"):
            return 1
        print(r.stdout.strip())
    indexes = []
    for layout in layouts:
        with open(os.path.join(layout, "index.json"), "rb") as f:
            indexes.append(f.read())
    check(indexes[0] == indexes[1], "two builds give the same index.json (the same manifest digest)")
    # Written again over an earlier layout: replaced, the same digest.
    r = build_image(source, build, layouts[0])
    check(r.returncode == 0, f"build-image over an earlier layout exits 0: {r.stderr.strip()}")
    with open(os.path.join(layouts[0], "index.json"), "rb") as f:
        check(f.read() == indexes[0], "a rebuild over the old layout gives the same index.json")

    desc, manifest, config, layers = read_layout(layouts[0])
    check(desc["annotations"]["org.opencontainers.image.ref.name"] == version,
          f"the tag is the CMake project version {version}")
    check(config["config"]["User"] == NONROOT, "the image runs as nonroot")
    check(config["created"] == "2023-11-14T22:13:20Z", f"created is SOURCE_DATE_EPOCH: {config['created']}")
    names = set()
    for i, t in enumerate(layers):
        with tarfile.open(fileobj=io.BytesIO(t)) as tar:
            members = tar.getmembers()
        paths = [m.name for m in members]
        check(paths == sorted(paths), f"layer {i}: entries sorted")
        check(all(m.mtime == EPOCH for m in members), f"layer {i}: every mtime is SOURCE_DATE_EPOCH")
        names.update(paths)
    for path in ("usr/local/bin/taugridd", "usr/local/bin/tau", "usr/local/bin/tau-shim",
                 "usr/local/bin/taugrid-agent", "etc/passwd",
                 "etc/ssl/certs/ca-certificates.crt", "tmp"):
        check(path in names, f"the image holds /{path}")

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("SKIPPED: running the programs from the unpacked image needs root (chroot); "
              "the layout checks passed", file=sys.stderr)
        return 77
    if shutil.which("chroot") is None:
        print("SKIPPED: chroot (coreutils) is not installed; the layout checks passed", file=sys.stderr)
        return 77

    root = os.path.join(artifacts, "root")
    unpack(layers, root)
    shutil.copytree(os.path.join(source, "examples"), os.path.join(root, "tmp", "examples"))
    with open(os.path.join(root, "tmp", "bad.yaml"), "w") as f:
        f.write("schema_version: 1\nname: bad\nrun:\n  entrypoint: train.py\ncompute:\n  gpus: -1\n")

    r = in_root(root, ["taugridd", "--version"])
    check(r.returncode == 0 and r.stdout.startswith(f"taugridd {version} "),
          f"taugridd --version in the image: exit {r.returncode}, {(r.stdout + r.stderr).strip()!r}")
    r = in_root(root, ["tau", "validate", "/tmp/examples/quickstart.yaml", "/tmp/examples/gpu-job.yaml"])
    check(r.returncode == 0, f"tau validate in the image: exit {r.returncode}, {(r.stdout + r.stderr).strip()!r}")
    r = in_root(root, ["tau", "validate", "/tmp/bad.yaml"])
    check(r.returncode == 2 and "/tmp/bad.yaml:6:" in r.stderr + r.stdout,
          f"tau validate of a bad spec in the image: exit 2 naming the line: {r.returncode}, "
          f"{(r.stdout + r.stderr).strip()!r}")
    r = in_root(root, ["taugrid-agent", "--version"])
    check(r.returncode == 0 and r.stdout.strip() == f"taugrid-agent {version}",
          f"taugrid-agent --version in the image: exit {r.returncode}, {(r.stdout + r.stderr).strip()!r}")
    r = in_root(root, ["tau-shim"])
    check(r.returncode == 2 and "usage: tau-shim" in r.stderr,
          f"tau-shim runs in the image: exit {r.returncode}, {r.stderr.strip()!r}")

    not_served = serve_in_root(root, version, os.path.join(artifacts, "taugridd.log"))

    # The check has teeth: without one of its libraries, taugridd does not start.
    libs = glob.glob(os.path.join(root, "usr", "lib*", "*", "libyaml-0.so.2"))
    if check(len(libs) == 1, f"the image holds libyaml-0.so.2 (which taugridd and tau load): {libs}"):
        os.remove(libs[0])
        r = in_root(root, ["taugridd", "--version"])
        check(r.returncode != 0 and "libyaml-0.so.2" in r.stderr,
              f"taugridd without libyaml fails naming it: exit {r.returncode}, {r.stderr.strip()!r}")

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    if not_served:
        print(f"SKIPPED: taugridd serving from the image: {not_served}; every other check passed", file=sys.stderr)
        return 77
    print("image test passed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: image_test.py SOURCE_DIR BUILD_DIR ARTIFACT_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*[os.path.abspath(a) for a in sys.argv[1:]]))
