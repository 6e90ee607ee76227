#!/usr/bin/env python3
"""Tests of the test cluster's helper programs that need no cluster:
render_manifests.py (which conversion webhooks and admission webhooks it
keeps, and where it points them) and fake_ray_dashboard.py (the job API
KubeRay polls through its proxy). Run: python3 tools_test.py"""
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def crd(name):
    return ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            "metadata:\n  name: %s\nspec:\n  group: example\n" % name)


def conversion_patch(name):
    return ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            "metadata:\n  name: %s\nspec:\n  conversion:\n    strategy: Webhook\n" % name)


def hook(name, path):
    return ("- admissionReviewVersions: [v1]\n  clientConfig:\n    service:\n"
            "      name: webhook-service\n      namespace: system\n      path: %s\n"
            "  failurePolicy: Fail\n  name: %s\n  sideEffects: None\n" % (path, name))


class RenderManifestsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        m = self.m = os.path.join(self.tmp.name, "manifests")
        write(os.path.join(m, "kueue/crd/workloads.yaml"), crd("workloads.kueue.x-k8s.io"))
        write(os.path.join(m, "kueue/crd/resourceflavors.yaml"), crd("resourceflavors.kueue.x-k8s.io"))
        write(os.path.join(m, "kuberay/crd/rayjobs.yaml"), crd("rayjobs.ray.io"))
        # Kueue ships a patch for ResourceFlavor but its kustomization
        # leaves it out; only the listed one may be applied.
        write(os.path.join(m, "kueue/crd-patches/kustomization.yaml"),
              "resources: []\npatches:\n- path: patches/webhook_in_workloads.yaml\n"
              "#- path: patches/webhook_in_resourceflavors.yaml\n")
        write(os.path.join(m, "kueue/crd-patches/patches/webhook_in_workloads.yaml"),
              conversion_patch("workloads.kueue.x-k8s.io"))
        write(os.path.join(m, "kueue/crd-patches/patches/webhook_in_resourceflavors.yaml"),
              conversion_patch("resourceflavors.kueue.x-k8s.io"))
        write(os.path.join(m, "kueue/webhook/manifests.yaml"),
              "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
              "metadata:\n  name: mutating-webhook-configuration\nwebhooks:\n"
              + hook("mjob.kb.io", "/mutate-batch-v1-job")
              + hook("mpod.kb.io", "/mutate--v1-pod")
              + hook("mdeployment.kb.io", "/mutate-apps-v1-deployment")
              + hook("mrayjob.kb.io", "/mutate-ray-io-v1-rayjob")
              + hook("mrayservice.kb.io", "/mutate-ray-io-v1-rayservice")
              + hook("mworkload.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-workload")
              + "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
              "metadata:\n  name: validating-webhook-configuration\nwebhooks:\n"
              + hook("vraycluster.kb.io", "/validate-ray-io-v1-raycluster")
              + hook("vstatefulset.kb.io", "/validate-apps-v1-statefulset")
              + hook("vcohort.kb.io", "/validate-kueue-x-k8s-io-v1beta2-cohort"))
        self.ca = os.path.join(self.tmp.name, "ca.crt")
        write(self.ca, "CA PEM")
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def render(self):
        return subprocess.run([sys.executable, os.path.join(HERE, "render_manifests.py"),
                               self.m, self.out, "4321", self.ca],
                              capture_output=True, text=True)

    def load(self, rel):
        with open(os.path.join(self.out, rel), encoding="utf-8") as f:
            return json.load(f)

    def test_conversion_only_for_crds_the_kustomization_lists(self):
        r = self.render()
        self.assertEqual(r.returncode, 0, r.stderr)
        conv = self.load("crds/workloads.kueue.x-k8s.io.json")["spec"]["conversion"]
        self.assertEqual(conv["strategy"], "Webhook")
        self.assertEqual(conv["webhook"]["clientConfig"],
                         {"url": "https://127.0.0.1:4321/convert",
                          "caBundle": base64.b64encode(b"CA PEM").decode()})
        self.assertNotIn("conversion", self.load("crds/resourceflavors.kueue.x-k8s.io.json")["spec"])
        self.assertNotIn("conversion", self.load("crds/rayjobs.ray.io.json")["spec"])

    def test_webhooks_filtered_to_kueue_kinds_and_enabled_integrations(self):
        r = self.render()
        self.assertEqual(r.returncode, 0, r.stderr)
        mut = self.load("webhooks/kueue-mutating-webhook-configuration.json")
        val = self.load("webhooks/kueue-validating-webhook-configuration.json")
        self.assertEqual([w["name"] for w in mut["webhooks"]],
                         ["mjob.kb.io", "mrayjob.kb.io", "mworkload.kb.io"])
        self.assertEqual([w["name"] for w in val["webhooks"]], ["vraycluster.kb.io", "vcohort.kb.io"])
        self.assertEqual(mut["webhooks"][0]["clientConfig"],
                         {"url": "https://127.0.0.1:4321/mutate-batch-v1-job",
                          "caBundle": base64.b64encode(b"CA PEM").decode()})

    def test_patch_naming_a_missing_crd_is_an_error(self):
        os.remove(os.path.join(self.m, "kueue/crd/workloads.yaml"))
        r = self.render()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("workloads.kueue.x-k8s.io", r.stderr)

    def test_malformed_yaml_names_the_file(self):
        write(os.path.join(self.m, "kuberay/crd/rayjobs.yaml"), "kind: [unclosed\n")
        r = self.render()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("kuberay/crd/rayjobs.yaml", r.stderr)


class FakeDashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        cls.port = s.getsockname()[1]
        s.close()
        cls.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_ray_dashboard.py"),
                                     "--port", str(cls.port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                cls.direct("GET", "/healthz")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the fake dashboard did not start")

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait()

    @classmethod
    def direct(cls, method, path, body=None):
        return cls.request(method, "http://127.0.0.1:%d%s" % (cls.port, path), body, proxy=False)

    @classmethod
    def request(cls, method, url, body=None, proxy=True):
        handlers = [urllib.request.ProxyHandler(
            {"http": "http://127.0.0.1:%d" % cls.port} if proxy else {})]
        opener = urllib.request.build_opener(*handlers)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        with opener.open(req, timeout=5) as resp:
            return json.loads(resp.read() or b"null")

    def test_unknown_job_through_the_proxy_is_succeeded(self):
        info = self.request("GET", "http://rj-head-svc.default.svc.cluster.local:8265/api/jobs/rj-abc")
        self.assertEqual(info["job_id"], "rj-abc")
        self.assertEqual(info["status"], "SUCCEEDED")
        self.assertGreater(info["end_time"], 0)

    def test_submitted_job_is_listed_and_a_second_submit_is_refused(self):
        resp = self.request("POST", "http://h:8265/api/jobs/", {"entrypoint": "python x.py", "submission_id": "s-1"})
        self.assertEqual(resp, {"job_id": "s-1", "submission_id": "s-1"})
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.request("POST", "http://h:8265/api/jobs/", {"entrypoint": "x", "submission_id": "s-1"})
        self.assertEqual(e.exception.code, 500)
        self.assertIn("Please use a different submission_id", e.exception.read().decode())
        listed = {j["job_id"]: j for j in self.request("GET", "http://h:8265/api/jobs/")}
        self.assertEqual(listed["s-1"]["entrypoint"], "python x.py")

    def test_status_set_by_a_test_is_reported(self):
        self.direct("PUT", "/fake/jobs/will-fail", {"status": "FAILED", "message": "boom"})
        info = self.request("GET", "http://h:8265/api/jobs/will-fail")
        self.assertEqual((info["status"], info["message"]), ("FAILED", "boom"))

    def test_bad_status_is_refused(self):
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.direct("PUT", "/fake/jobs/x", {"status": "DONE"})
        self.assertEqual(e.exception.code, 400)


if __name__ == "__main__":
    unittest.main()
