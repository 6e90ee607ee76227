#!/usr/bin/env python3
"""A stand-in for the Ray dashboard's job API, for RayJobs under kwok.

kwok runs no containers, so no Ray head serves the dashboard that KubeRay
polls for a RayJob's status. KubeRay reaches this server instead: it is
started with HTTP_PROXY pointing here, so its plain-HTTP requests to
http://<head-service>...:8265/api/jobs/... arrive as proxy requests, which
this server answers itself whatever the host (it forwards nothing).

  fake_ray_dashboard.py --port PORT [--state-file FILE]

Listens on 127.0.0.1:PORT only. Job API subset (what KubeRay calls):
  GET  /api/jobs/ID         the job; an unknown ID is reported SUCCEEDED,
                            because in KubeRay's K8sJobMode the submitter
                            pod (completed by kwok) never really submits
  GET  /api/jobs/           every job seen
  POST /api/jobs/           submit (HTTPMode): recorded, SUCCEEDED
  GET  /api/jobs/ID/logs    empty logs
  POST /api/jobs/ID/stop    STOPPED
  DELETE /api/jobs/ID       forgets it
  GET  /api/serve/applications/   no applications
Test control (plain requests to 127.0.0.1:PORT):
  PUT  /fake/jobs/ID  {"status": "FAILED", "message": "..."}  sets what
                            GET /api/jobs/ID reports from then on
  GET  /healthz             {"status": "ok"}
With --state-file, the known jobs are written there (JSON) after each change.
"""
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

JOB_STATUSES = ("PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED")

jobs = {}
lock = threading.Lock()
state_file = None


def now_ms():
    return int(time.time() * 1000)


def job_record(job_id, status="SUCCEEDED", entrypoint="", message="finished (fake dashboard)"):
    t = now_ms()
    return {
        "job_id": job_id,
        "submission_id": job_id,
        "status": status,
        "entrypoint": entrypoint,
        "message": message,
        "start_time": t,
        "end_time": t if status in ("STOPPED", "SUCCEEDED", "FAILED") else 0,
        "metadata": {},
    }


def save():
    if state_file:
        with open(state_file + ".tmp", "w", encoding="utf-8") as f:
            json.dump(jobs, f)
        os.replace(state_file + ".tmp", state_file)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        print("%s %s" % (self.address_string(), fmt % args), flush=True)

    def reply(self, code, body):
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def route(self):
        # A proxied request carries an absolute URL; a direct one a path.
        return urlsplit(self.path).path

    def do_GET(self):
        path = self.route()
        if path == "/healthz":
            return self.reply(200, {"status": "ok"})
        if path == "/api/jobs/":
            with lock:
                return self.reply(200, list(jobs.values()))
        if path == "/api/serve/applications/":
            return self.reply(200, {"applications": {}})
        if path.startswith("/api/jobs/"):
            rest = path[len("/api/jobs/"):]
            if rest.endswith("/logs"):
                return self.reply(200, {"logs": ""})
            with lock:
                if rest not in jobs:
                    jobs[rest] = job_record(rest)
                    save()
                return self.reply(200, jobs[rest])
        self.reply(404, {"error": "not served by the fake dashboard: " + path})

    def do_POST(self):
        path = self.route()
        if path == "/api/jobs/":
            req = self.body()
            if not isinstance(req, dict):
                return self.reply(400, {"error": "body is not a JSON object"})
            job_id = req.get("submission_id") or "raysubmit_%d" % now_ms()
            with lock:
                if job_id in jobs:
                    return self.reply(500, {"error": "Job with submission_id %s already exists. "
                                                     "Please use a different submission_id." % job_id})
                jobs[job_id] = job_record(job_id, entrypoint=req.get("entrypoint", ""))
                save()
            return self.reply(200, {"job_id": job_id, "submission_id": job_id})
        if path.startswith("/api/jobs/") and path.endswith("/stop"):
            job_id = path[len("/api/jobs/"):-len("/stop")]
            with lock:
                jobs[job_id] = job_record(job_id, "STOPPED", message="stopped")
                save()
            return self.reply(200, {"stopped": True})
        self.reply(404, {"error": "not served by the fake dashboard: " + path})

    def do_PUT(self):
        path = self.route()
        if path.startswith("/fake/jobs/"):
            job_id = path[len("/fake/jobs/"):]
            req = self.body()
            if not isinstance(req, dict) or req.get("status") not in JOB_STATUSES:
                return self.reply(400, {"error": "body must be {\"status\": one of %s}" % ", ".join(JOB_STATUSES)})
            with lock:
                jobs[job_id] = job_record(job_id, req["status"], message=req.get("message", ""))
                save()
                return self.reply(200, jobs[job_id])
        self.reply(404, {"error": "not served by the fake dashboard: " + path})

    def do_DELETE(self):
        path = self.route()
        if path.startswith("/api/jobs/"):
            with lock:
                jobs.pop(path[len("/api/jobs/"):], None)
                save()
            return self.reply(200, {"deleted": True})
        self.reply(404, {"error": "not served by the fake dashboard: " + path})

    def do_CONNECT(self):
        self.reply(405, {"error": "the fake dashboard proxies no HTTPS"})


def main():
    global state_file
    ap = argparse.ArgumentParser(description="fake Ray dashboard job API for kwok clusters")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--state-file")
    args = ap.parse_args()
    state_file = args.state_file
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
