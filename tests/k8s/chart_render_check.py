#!/usr/bin/env python3
"""Checks the default render of charts/taugrid against what docs/install.md
promises: one taugridd replica, strategy Recreate, `--backend kubernetes`
without --kubeconfig under the chart's service account, the state on a PVC
that uninstall keeps, and the image tag defaulting to the chart's
appVersion, which equals CMake's project version.

    chart_render_check.py RENDERED.yaml Chart.yaml CMakeLists.txt
Prints each failed check and exits 1 when any failed."""
import re
import sys

import yaml

rendered_path, chart_path, cmake_path = sys.argv[1:4]
docs = [d for d in yaml.safe_load_all(open(rendered_path)) if d]
chart = yaml.safe_load(open(chart_path))
m = re.search(r"^project\(taugrid VERSION ([0-9.]+)", open(cmake_path).read(), re.M)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    print(("ok: " if ok else "FAIL: ") + what)


def one(kind, component):
    found = [d for d in docs if d["kind"] == kind
             and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component]
    check(len(found) == 1, "one %s of component %s (found %d)" % (kind, component, len(found)))
    return found[0] if found else {}


check(m is not None and chart["appVersion"] == m.group(1),
      "Chart.yaml appVersion %r is CMake's project version %r" % (chart.get("appVersion"), m and m.group(1)))
dep = one("Deployment", "server")
spec = dep.get("spec", {})
check(spec.get("replicas") == 1, "the server runs one replica")
check(spec.get("strategy", {}).get("type") == "Recreate", "the server's strategy is Recreate")
pod = spec.get("template", {}).get("spec", {})
containers = pod.get("containers", [{}])
c = containers[0]
args = c.get("args", [])
check(c.get("command") == ["taugridd"], "the container runs taugridd")
check("--backend" in args and args[args.index("--backend") + 1] == "kubernetes",
      "taugridd runs with --backend kubernetes")
check(not any(a.startswith("--kubeconfig") for a in args), "taugridd gets no --kubeconfig")
check("--listen" in args and args[args.index("--listen") + 1].startswith("0.0.0.0:"),
      "taugridd listens on every interface of its pod, so the Service reaches it")
probe = c.get("readinessProbe", {}).get("httpGet", {})
check(probe.get("path") == "/healthz", "taugridd has a /healthz readiness probe")
check(c.get("image") == "taugrid:" + chart["appVersion"],
      "the default image is taugrid:<appVersion> (got %r)" % c.get("image"))
sa = one("ServiceAccount", "server")
check(pod.get("serviceAccountName") == sa.get("metadata", {}).get("name"),
      "the server runs as the chart's ServiceAccount")
pvc = one("PersistentVolumeClaim", "server")
claims = [v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes", []) if "persistentVolumeClaim" in v]
check(claims == [pvc.get("metadata", {}).get("name")], "the server's state is on the chart's PVC")
check(pvc.get("metadata", {}).get("annotations", {}).get("helm.sh/resource-policy") == "keep",
      "the PVC is kept when the release is uninstalled")
mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
check("--home" in args and args[args.index("--home") + 1] == mounts.get("state"),
      "TAU_HOME (--home) is the PVC's mount")
ds = one("DaemonSet", "agent")
check(ds.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("command")
      == ["taugrid-agent"], "the node agent DaemonSet runs taugrid-agent")
sys.exit(1 if failures else 0)
