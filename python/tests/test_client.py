"""The client against a real taugridd (the session's ``daemon`` fixture)."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest

import taugrid
from conftest import SDK_ROOT, Daemon, wait_for_state


def test_the_daemon_was_started_like_tau_starts_it(daemon: Daemon) -> None:
    ep = daemon.client.endpoint
    assert ep.home == daemon.home
    assert ep.token == (daemon.home / "token").read_text().strip()
    assert daemon.client.info()["pid"] == daemon.pid


def test_a_shell_job_succeeds(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("echo hello", name="sdk-ok"))
    assert job.id.startswith("j_") and job.name == "sdk-ok"
    assert job.wait(timeout=30, poll=0.1) == "Succeeded"
    assert job.exit_code == 0 and job.done
    again = daemon.client.job(job.id)
    assert again.state == "Succeeded" and again.id == job.id
    assert daemon.client.job("sdk-ok").id == job.id  # a name: the newest of that name


def test_a_failing_job_fails_with_its_exit_code(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("exit 3", name="sdk-fail"))
    assert job.wait(timeout=30, poll=0.1) == "Failed"
    assert job.exit_code == 3 and job.reason == "ExitCode"


def test_logs(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("echo one; echo two; printf three"))
    job.wait(timeout=30, poll=0.1)
    assert list(job.logs()) == ["one", "two", "three"]
    assert list(job.logs(tail=1)) == ["three"]
    assert list(job.logs(rank="all", attempt="all")) == ["one", "two", "three"]


def test_follow_logs_until_the_job_ends(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("for i in 1 2 3; do echo line $i; sleep 0.2; done"))
    lines = list(job.logs(follow=True))  # ends only once the job has ended
    assert lines == ["line 1", "line 2", "line 3"]
    assert job.refresh().state == "Succeeded"


def test_run_with_follow_streams_the_output(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    job = daemon.client.run(spec_file("echo streamed; exit 4"), follow=True, out=out)
    assert out.getvalue() == "streamed\n"
    assert job.state == "Failed" and job.exit_code == 4


def test_cancel_a_sleeping_job(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("sleep 60", name="sdk-sleep"))
    wait_for_state(job, "Running")
    job.cancel()
    assert job.wait(timeout=20, poll=0.1) == "Cancelled"


def test_wait_times_out(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("sleep 60"))
    with pytest.raises(taugrid.WaitTimeout):
        job.wait(timeout=0.3, poll=0.1)
    job.cancel().wait(timeout=20, poll=0.1)


def test_jobs_filtered_by_state(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    ok = daemon.client.run(spec_file("true", name="sdk-list"))
    bad = daemon.client.run(spec_file("false", name="sdk-list"))
    ok.wait(timeout=30, poll=0.1)
    bad.wait(timeout=30, poll=0.1)
    failed = daemon.client.jobs(state="Failed")
    assert bad.id in [j.id for j in failed] and ok.id not in [j.id for j in failed]
    assert all(j.state == "Failed" for j in failed)
    named = daemon.client.jobs(name="sdk-list")
    assert [j.id for j in named] == [bad.id, ok.id]  # newest first
    assert len(daemon.client.jobs(limit=1)) == 1
    with pytest.raises(taugrid.InvalidRequest, match="not a job state") as e:
        daemon.client.jobs(state="Bogus")
    assert e.value.status == 400 and e.value.details.get("parameter") == "state"


def test_paging_goes_past_one_page(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    # Three pages of one job each, through the continue tokens.
    everything = daemon.client.jobs()
    assert len(everything) >= 3
    pages = []
    result = daemon.client.request("GET", "/api/v1/jobs?limit=1")
    while True:
        pages += [j["id"] for j in result["jobs"]]
        if not isinstance(result["next"], str) or len(pages) == 3:
            break
        result = daemon.client.request("GET", f"/api/v1/jobs?limit=1&continue={result['next']}")
    assert pages == [j.id for j in everything[:3]]


def test_status_and_evidence(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    job = daemon.client.run(spec_file("echo evidence", name="sdk-evidence"))
    job.wait(timeout=30, poll=0.1)
    status = job.status()
    assert status["id"] == job.id and status["state"] == "Succeeded"
    assert [e["type"] for e in status["timeline"]][0] == "Submitted"
    evidence = job.evidence()
    assert evidence["job"]["id"] == job.id if isinstance(evidence.get("job"), dict) else evidence["job"] == job.id
    assert evidence["spec"]["name"] == "sdk-evidence"
    assert "code" in evidence and "submit_command" in evidence


def test_unknown_job_is_not_found(daemon: Daemon) -> None:
    with pytest.raises(taugrid.NotFound) as e:
        daemon.client.job("j_nosuchjob2")
    assert e.value.status == 404 and e.value.code == "NotFound" and e.value.trace_id
    assert str(e.value) == f'no job with id or name "j_nosuchjob2" (trace {e.value.trace_id})'


def test_an_invalid_spec_is_a_spec_error_with_positions(daemon: Daemon, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: Bad_Name\nrun:\n  entrypoint: echo\ncompute:\n  cpus: lots\n")
    before = len(daemon.client.jobs())
    with pytest.raises(taugrid.SpecError) as e:
        daemon.client.run(str(bad))
    assert f"{bad}:2:7: error: name:" in e.value.message
    assert f"{bad}:6:9: error: compute.cpus:" in e.value.message
    assert [(d.line, d.column) for d in e.value.diagnostics] == [(2, 7), (6, 9)]
    with pytest.raises(taugrid.SpecError, match=r"<stdin>:\d+:\d+: error: compute.cpus"):
        daemon.client.run({"schema_version": 1, "name": "x", "run": {"entrypoint": "echo"}, "compute": {"cpus": "zz"}})
    with pytest.raises(taugrid.SpecError, match=r"--set compute.gpu=2: error: unknown field"):
        daemon.client.run(str(bad), set={"compute.gpu": 2})
    assert len(daemon.client.jobs()) == before  # nothing was submitted


def test_a_dict_spec_and_overrides(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("from the snapshot\n")
    spec = {"schema_version": 1, "name": "sdk-dict", "run": {"entrypoint": "cat data.txt"},
            "compute": {"cpus": "100m", "memory": "64Mi"}}
    job = daemon.client.run(spec, set={"name": "sdk-renamed"}, cwd=tmp_path)
    assert job.name == "sdk-renamed"
    job.wait(timeout=30, poll=0.1)
    assert list(job.logs()) == ["from the snapshot"]


def test_a_job_that_can_never_fit_is_rejected(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(taugrid.SubmitRejected, match="never run on this machine") as e:
        daemon.client.run(spec_file("true"), set={"compute.cpus": 4096})
    assert e.value.trace_id


def test_a_wrong_token_is_unauthorized(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    wrong = taugrid.Client(token="wrong")
    with pytest.raises(taugrid.Unauthorized) as e:
        wrong.jobs()
    assert e.value.status == 401 and e.value.code == "Unauthenticated" and e.value.trace_id
    with pytest.raises(taugrid.Unauthorized):
        wrong.run(spec_file("true"))  # tau run is pointed at the client's own token
    remote = taugrid.Client(server=daemon.client.url, token="wrong")
    with pytest.raises(taugrid.Unauthorized):
        remote.job("anything")


JOB_SCRIPT = """
import sys, os
sys.path.insert(0, os.environ["SDK_ROOT"])
import taugrid
start = 0
if taugrid.is_resumed():
    start = int(taugrid.resume_from().read_text())
print("attempt", taugrid.attempt(), "from", start, flush=True)
for step in range(start + 1, start + 4):
    taugrid.report(step=step, total_steps=6, loss=1.0 / step)
    with taugrid.save_checkpoint_atomically(f"step-{step:04d}") as path:
        path.write_text(str(step))
(taugrid.output_dir() / "result.txt").write_text("done")
"""


def test_a_job_using_the_sdk_reports_checkpoints_and_resumes(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(JOB_SCRIPT)
    (tmp_path / "job.yaml").write_text(
        "schema_version: 1\nname: sdk-in-job\nrun:\n  entrypoint: train.py\n"
        f"runtime:\n  env:\n    SDK_ROOT: {json.dumps(str(SDK_ROOT))}\n"
        "compute:\n  cpus: 100m\n  memory: 256Mi\n"
    )
    job = daemon.client.run(tmp_path / "job.yaml")
    assert job.wait(timeout=30, poll=0.1) == "Succeeded", list(job.logs())
    points = job.metrics()
    assert [p["step"] for p in points] == [1, 2, 3] and points[0]["loss"] == 1.0 and "time" in points[0]
    progress = job.refresh().data["progress"]
    assert progress["step"] == 3 and progress["total_steps"] == 6
    assert [c["name"] for c in job.checkpoints()][0] == "step-0003"
    assert [f["path"] for f in job.outputs()] == ["result.txt"]
    job.resume()
    assert job.wait(timeout=30, poll=0.1) == "Succeeded"
    assert list(job.logs()) == ["attempt 2 from 3"]
    assert [p["step"] for p in job.metrics()][-3:] == [4, 5, 6]


def test_the_client_is_safe_to_share_between_threads(daemon: Daemon) -> None:
    errors = []

    def work() -> None:
        try:
            for _ in range(20):
                daemon.client.info()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_following_logs_survives_a_daemon_restart(daemon: Daemon, spec_file) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess

    from taugrid.discovery import read_server_json

    job = daemon.client.run(spec_file("for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.25; done"))
    lines = job.logs(follow=True)
    got = [next(lines)]
    tau = str(daemon.bin_dir / "tau")
    env = dict(os.environ, TAU_HOME=str(daemon.home))
    subprocess.run([tau, "server", "stop"], env=env, check=True, capture_output=True, timeout=30)
    subprocess.run([tau, "server", "start"], env=env, check=True, capture_output=True, timeout=30)
    info = read_server_json(daemon.home)
    assert info is not None
    daemon.pid = int(info["pid"])
    got += list(lines)  # goes on from where it stood: nothing lost, nothing twice
    assert got == [f"tick {i}" for i in range(1, 7)]
    assert job.wait(timeout=30, poll=0.1) == "Succeeded"
