"""report(): one JSON line per call in TAU_METRICS_FILE (docs/observability.md)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

import taugrid


@pytest.fixture
def metrics_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("TAU_METRICS_FILE", str(path))
    return path


def lines(path: Path) -> list:
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_appends_one_line_with_step_total_metrics_and_time(metrics_file: Path) -> None:
    before = time.time()
    taugrid.report(step=12, total_steps=100, loss=0.41)
    taugrid.report(step=13, total_steps=100, loss=0.40, lr=1e-4)
    first, second = lines(metrics_file)
    assert first["step"] == 12 and first["total_steps"] == 100 and first["loss"] == 0.41
    assert before <= first["time"] <= time.time()
    assert list(first) == ["step", "total_steps", "loss", "time"]
    assert second["lr"] == 1e-4
    assert metrics_file.read_text().endswith("\n")


def test_step_and_total_are_optional(metrics_file: Path) -> None:
    taugrid.report(accuracy=0.9)
    (line,) = lines(metrics_file)
    assert "step" not in line and "total_steps" not in line and line["accuracy"] == 0.9


def test_time_may_be_given(metrics_file: Path) -> None:
    taugrid.report(step=1, time=1700000000.5)
    assert lines(metrics_file)[0]["time"] == 1700000000.5


def test_non_numeric_metric_is_a_type_error_naming_the_key_and_writes_nothing(metrics_file: Path) -> None:
    with pytest.raises(TypeError, match="'phase'"):
        taugrid.report(step=1, loss=0.5, phase="warmup")
    with pytest.raises(TypeError, match="'done'"):
        taugrid.report(done=True)
    with pytest.raises(TypeError, match="'step'"):
        taugrid.report(step="1")  # type: ignore[arg-type]
    assert not metrics_file.exists()


def test_non_finite_values_are_refused(metrics_file: Path) -> None:
    with pytest.raises(ValueError, match="'loss'"):
        taugrid.report(loss=math.nan)
    assert not metrics_file.exists()


def test_numpy_and_torch_scalars_are_numbers(metrics_file: Path) -> None:
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    taugrid.report(step=np.int64(3), a=np.float32(0.5), b=torch.tensor(2.0), c=torch.tensor([7]))
    line = lines(metrics_file)[0]
    assert line["step"] == 3 and line["a"] == 0.5 and line["b"] == 2.0 and line["c"] == 7
    with pytest.raises(TypeError, match="'v'"):
        taugrid.report(v=torch.tensor([1.0, 2.0]))


def test_outside_taugrid_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = taugrid.report(step=1, total_steps=2, loss=0.1)
    assert line["step"] == 1 and line["loss"] == 0.1 and "time" in line
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError):
        taugrid.report(loss="high")
