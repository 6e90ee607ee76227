"""save_checkpoint_atomically: NAME.tmp, renamed to NAME only on success."""

from __future__ import annotations

from pathlib import Path

import pytest

import taugrid


@pytest.fixture
def ckpt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "checkpoints"
    monkeypatch.setenv("TAU_CHECKPOINT_DIR", str(folder))
    return folder


def test_a_file_is_staged_then_renamed(ckpt: Path) -> None:
    with taugrid.save_checkpoint_atomically("step-000010.json") as path:
        assert path == ckpt / "step-000010.json.tmp"
        assert not (ckpt / "step-000010.json").exists()
        path.write_text('{"step": 10}')
    assert (ckpt / "step-000010.json").read_text() == '{"step": 10}'
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-000010.json"]


def test_a_folder_is_staged_then_renamed(ckpt: Path) -> None:
    with taugrid.save_checkpoint_atomically("step-000020") as path:
        path.mkdir()
        (path / "model.bin").write_bytes(b"\0" * 10)
        (path / "sub").mkdir()
        (path / "sub" / "opt.bin").write_bytes(b"x")
    assert (ckpt / "step-000020" / "sub" / "opt.bin").read_bytes() == b"x"
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-000020"]


def test_a_failure_removes_the_staging_and_keeps_the_previous_one(ckpt: Path) -> None:
    with taugrid.save_checkpoint_atomically("ckpt-latest.pt") as path:
        path.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with taugrid.save_checkpoint_atomically("ckpt-latest.pt") as path:
            path.write_text("half")
            raise RuntimeError("boom")
    assert (ckpt / "ckpt-latest.pt").read_text() == "old"
    assert sorted(p.name for p in ckpt.iterdir()) == ["ckpt-latest.pt"]


def test_an_existing_checkpoint_is_replaced(ckpt: Path) -> None:
    for content in ("one", "two"):
        with taugrid.save_checkpoint_atomically("step-latest") as path:
            path.mkdir()
            (path / "v").write_text(content)
        with taugrid.save_checkpoint_atomically("step-latest.pt") as path:
            path.write_text(content)
    assert (ckpt / "step-latest" / "v").read_text() == "two"
    assert (ckpt / "step-latest.pt").read_text() == "two"
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-latest", "step-latest.pt"]


def test_a_killed_attempts_staging_is_cleared_first(ckpt: Path) -> None:
    ckpt.mkdir()
    (ckpt / "step-5.tmp").mkdir()
    (ckpt / "step-5.tmp" / "junk").write_text("junk")
    with taugrid.save_checkpoint_atomically("step-5") as path:
        assert not path.exists()
        path.write_text("whole")
    assert (ckpt / "step-5").read_text() == "whole"


def test_writing_nothing_is_an_error(ckpt: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing was written"):
        with taugrid.save_checkpoint_atomically("step-1"):
            pass


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", ".hidden", "x.tmp", "x.partial", "tmp-checkpoint-3",
                                  "3.orbax-checkpoint-tmp-9"])
def test_names_that_can_never_be_complete_are_refused(ckpt: Path, name: str) -> None:
    with pytest.raises(ValueError):
        with taugrid.save_checkpoint_atomically(name):
            pass
