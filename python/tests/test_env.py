"""The in-job environment helpers, inside and outside TauGrid."""

from __future__ import annotations

from pathlib import Path

import pytest

import taugrid


def test_outside_taugrid_uses_local_stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert not taugrid.in_taugrid()
    assert taugrid.checkpoint_dir() == tmp_path / "checkpoints"
    assert (tmp_path / "checkpoints").is_dir()
    assert taugrid.output_dir() == tmp_path / "outputs"
    assert (tmp_path / "outputs").is_dir()
    assert taugrid.resume_from() is None
    assert not taugrid.is_resumed()
    assert taugrid.attempt() == 1
    assert taugrid.worker_index() == 0
    assert taugrid.retry_reason() is None
    assert taugrid.job_id() is None


def test_inside_taugrid_reads_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ckpt = tmp_path / "jobs" / "j_abc" / "checkpoints"  # not there yet: created on first use
    monkeypatch.setenv("TAU_JOB_ID", "j_abcdefgh23")
    monkeypatch.setenv("TAU_JOB_NAME", "train")
    monkeypatch.setenv("TAU_CHECKPOINT_DIR", str(ckpt))
    monkeypatch.setenv("TAU_OUTPUT_DIR", str(tmp_path / "out"))
    monkeypatch.setenv("TAU_ATTEMPT", "3")
    monkeypatch.setenv("TAU_WORKER_INDEX", "1")
    monkeypatch.setenv("TAU_RETRY_REASON", "exit:3")
    monkeypatch.setenv("TAU_RESUME_FROM", str(ckpt / "step-0010.json"))
    assert taugrid.in_taugrid()
    assert taugrid.job_id() == "j_abcdefgh23"
    assert taugrid.job_name() == "train"
    assert taugrid.checkpoint_dir() == ckpt and ckpt.is_dir()
    assert taugrid.output_dir() == tmp_path / "out" and (tmp_path / "out").is_dir()
    assert taugrid.attempt() == 3
    assert taugrid.worker_index() == 1
    assert taugrid.retry_reason() == "exit:3"
    assert taugrid.resume_from() == ckpt / "step-0010.json"
    assert taugrid.is_resumed()


def test_an_empty_resume_from_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_RESUME_FROM", "")
    assert taugrid.resume_from() is None
    assert not taugrid.is_resumed()


def test_a_malformed_attempt_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_ATTEMPT", "two")
    with pytest.raises(ValueError, match="TAU_ATTEMPT"):
        taugrid.attempt()


def test_importing_taugrid_imports_no_framework() -> None:
    import subprocess
    import sys

    code = "import sys, taugrid; print([m for m in ('torch', 'transformers', 'lightning') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(Path(__file__).resolve().parent.parent))
    assert out.stdout.strip() == "[]"
