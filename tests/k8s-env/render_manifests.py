#!/usr/bin/env python3
"""Renders the manifests a test cluster installs, from the copies the build
took out of the module cache.

  render_manifests.py MANIFESTS OUT WEBHOOK_PORT CA_FILE

writes into OUT (JSON, one object per file, ready for server-side apply):
  crds/*.json     Kueue's CRDs, with the conversion webhook of the CRDs that
                  Kueue's own kustomization enables pointed at
                  https://127.0.0.1:WEBHOOK_PORT/convert; KubeRay's CRDs.
  webhooks/*.json Kueue's mutating and validating webhook configurations,
                  filtered to the webhooks of Kueue's own kinds and the
                  enabled integrations (batch/job, ray.io/rayjob,
                  ray.io/raycluster), each pointed at
                  https://127.0.0.1:WEBHOOK_PORT/<path>.
Every clientConfig carries CA_FILE as its caBundle. Exits non-zero naming
the file and the problem when an input is missing or not as expected.
"""
import base64
import glob
import json
import os
import sys

import yaml

# libyaml's loader when present: the CRDs are several MB of YAML.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Webhook paths served for the integrations the cluster enables, besides
# Kueue's own kinds (every path with "kueue-x-k8s-io").
INTEGRATION_PATHS = (
    "-batch-v1-job",
    "-ray-io-v1-rayjob",
    "-ray-io-v1-raycluster",
)


def fail(msg):
    print("render_manifests: " + msg, file=sys.stderr)
    sys.exit(1)


def load_all(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [d for d in yaml.load_all(f, Loader=LOADER) if d]
    except (OSError, yaml.YAMLError) as e:
        fail("%s: %s" % (path, e))


def write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def served(path):
    return "kueue-x-k8s-io" in path or path.endswith(INTEGRATION_PATHS)


def client_config(base, path, ca):
    return {"url": base + path, "caBundle": ca}


def main(argv):
    if len(argv) != 5:
        fail("usage: render_manifests.py MANIFESTS OUT WEBHOOK_PORT CA_FILE")
    manifests, out, port, ca_file = argv[1:]
    base = "https://127.0.0.1:%d" % int(port)
    try:
        with open(ca_file, "rb") as f:
            ca = base64.b64encode(f.read()).decode()
    except OSError as e:
        fail("%s: %s" % (ca_file, e))
    os.makedirs(os.path.join(out, "crds"), exist_ok=True)
    os.makedirs(os.path.join(out, "webhooks"), exist_ok=True)

    # CRDs whose conversion webhook Kueue's kustomization enables: the
    # webhook_in_*.yaml patches it lists (others are there commented out).
    patches = os.path.join(manifests, "kueue/crd-patches")
    kustomization = os.path.join(patches, "kustomization.yaml")
    converted = set()
    for entry in (load_all(kustomization) or [{}])[0].get("patches") or []:
        path = entry.get("path", "") if isinstance(entry, dict) else ""
        if os.path.basename(path).startswith("webhook_in_"):
            for doc in load_all(os.path.join(patches, path)):
                converted.add(doc["metadata"]["name"])
    if not converted:
        fail("%s: lists no webhook_in_*.yaml conversion patch" % kustomization)

    crd_files = sorted(glob.glob(os.path.join(manifests, "kueue/crd/*.yaml")))
    crd_files += sorted(glob.glob(os.path.join(manifests, "kuberay/crd/*.yaml")))
    if not crd_files:
        fail("%s: no CRDs under kueue/crd or kuberay/crd" % manifests)
    for path in crd_files:
        for crd in load_all(path):
            if crd.get("kind") != "CustomResourceDefinition":
                fail("%s: expected a CustomResourceDefinition, found %s" % (path, crd.get("kind")))
            name = crd["metadata"]["name"]
            if name in converted:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": client_config(base, "/convert", ca),
                        "conversionReviewVersions": ["v1"],
                    },
                }
                converted.discard(name)
            write(os.path.join(out, "crds", name + ".json"), crd)
    if converted:
        fail("conversion patches name CRDs that are not installed: " + ", ".join(sorted(converted)))

    hooks = os.path.join(manifests, "kueue/webhook/manifests.yaml")
    kept = 0
    for cfg in load_all(hooks):
        kind = cfg.get("kind")
        if kind not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            fail("%s: unexpected kind %s" % (hooks, kind))
        webhooks = []
        for hook in cfg.get("webhooks", []):
            path = hook.get("clientConfig", {}).get("service", {}).get("path")
            if not path:
                fail("%s: webhook %s has no service path" % (hooks, hook.get("name")))
            if served(path):
                hook["clientConfig"] = client_config(base, path, ca)
                webhooks.append(hook)
        cfg["webhooks"] = webhooks
        cfg["metadata"] = {"name": "kueue-" + cfg["metadata"]["name"]}
        kept += len(webhooks)
        write(os.path.join(out, "webhooks", cfg["metadata"]["name"] + ".json"), cfg)
    if kept == 0:
        fail("%s: no webhook of Kueue's kinds or the enabled integrations" % hooks)


if __name__ == "__main__":
    main(sys.argv)
