"""Fixtures: a clean job environment for every test, and one real taugridd
for the client tests.

The daemon runs in a temporary TAU_HOME with the binaries of ``TAU_BIN_DIR``
(default ``/work/main/build/bin``) first on ``PATH``. The SDK starts it the
way ``tau`` does (``Client()`` with autostart runs ``tau server start``); at
the end the jobs still running in that home are cancelled and that
daemon alone is stopped (``tau server stop`` with the same TAU_HOME).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

import taugrid
from taugrid.discovery import read_server_json

# What TauGrid gives a job, and what points tau at a server: no test sees
# the values of the shell that runs pytest.
JOB_VARIABLES = (
    "TAU_JOB_ID",
    "TAU_JOB_NAME",
    "TAU_WORKSPACE",
    "TAU_ATTEMPT",
    "TAU_WORKER_INDEX",
    "TAU_CHECKPOINT_DIR",
    "TAU_OUTPUT_DIR",
    "TAU_METRICS_FILE",
    "TAU_RESUME_FROM",
    "TAU_RETRY_REASON",
)
CLIENT_VARIABLES = ("TAU_SERVER", "TAU_TOKEN", "TAU_BIN", "TAU_CONNECT_PATIENCE")

SDK_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def clean_job_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@dataclass
class Daemon:
    client: taugrid.Client
    home: Path
    bin_dir: Path
    pid: int


def _bin_dir() -> Path:
    return Path(os.environ.get("TAU_BIN_DIR", "/work/main/build/bin"))


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    bin_dir = _bin_dir()
    for binary in ("tau", "taugridd", "tau-shim"):
        if not (bin_dir / binary).is_file():
            pytest.skip(f"no {binary} in {bin_dir} (set TAU_BIN_DIR)")
    home = tmp_path_factory.mktemp("tauhome")
    saved: Dict[str, Optional[str]] = {k: os.environ.get(k) for k in ("TAU_HOME", "PATH", *CLIENT_VARIABLES)}
    os.environ["TAU_HOME"] = str(home)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    for name in CLIENT_VARIABLES:
        os.environ.pop(name, None)
    started = False
    try:
        assert read_server_json(home) is None  # a fresh home: whatever runs there is ours
        client = taugrid.Client()  # finds none and starts one, as tau does
        client.info()
        started = True
        info = read_server_json(home)
        assert info is not None
        yield Daemon(client, home, bin_dir, int(info["pid"]))
    finally:
        try:
            if started:
                _stop(home, bin_dir)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _stop(home: Path, bin_dir: Path) -> None:
    """Cancels what still runs in ``home`` (so no job outlives the daemon:
    a stopped daemon leaves its jobs running), then stops its daemon."""
    client = taugrid.Client(home=home, autostart=False)
    try:
        live = [j for j in client.jobs() if not j.done]
        for job in live:
            job.cancel()
        for job in live:
            job.wait(timeout=15, poll=0.1)
    finally:
        env = dict(os.environ, TAU_HOME=str(home))
        subprocess.run([str(bin_dir / "tau"), "server", "stop"], env=env, check=False, capture_output=True, timeout=30)


@pytest.fixture
def spec_file(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Writes a job spec into a folder of its own (its working_dir) and
    returns its path."""
    counter = iter(range(1_000_000))

    def write(entrypoint: str, name: str = "sdk-test", extra: str = "") -> Path:
        folder = tmp_path / f"job{next(counter)}"
        folder.mkdir()
        path = folder / "job.yaml"
        path.write_text(
            "schema_version: 1\n"
            f"name: {name}\n"
            "run:\n"
            f"  entrypoint: {json.dumps(entrypoint)}\n"  # a JSON string is a YAML one
            "compute:\n"
            "  cpus: 100m\n"
            "  memory: 64Mi\n" + extra
        )
        return path

    return write


def wait_for_state(job: taugrid.Job, state: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while job.refresh().state != state:
        assert not job.done, f"{job} ended before reaching {state}"
        assert time.monotonic() < deadline, f"{job} did not reach {state}"
        time.sleep(0.05)
