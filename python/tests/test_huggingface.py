"""The transformers adapter on a tiny GPT-2 built in code (CPU, no downloads)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import taugrid  # noqa: E402
from taugrid.integrations.huggingface import (  # noqa: E402
    TauGridCallback,
    numeric_metrics,
    resume_checkpoint,
    trainer_output_dir,
)


class TinyDataset(torch.utils.data.Dataset):  # type: ignore[misc]
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> Dict[str, Any]:
        ids = torch.tensor([(i + k) % 32 for k in range(8)])
        return {"input_ids": ids, "labels": ids}


def train(max_steps: int, resume: Any = None) -> Any:
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=32, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    model = transformers.GPT2LMHeadModel(config)
    args = transformers.TrainingArguments(
        output_dir=trainer_output_dir(),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_steps=2,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=TinyDataset(),
                                   callbacks=[TauGridCallback(step_interval=None)])
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def read(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_trainer_reports_progress_and_checkpoints_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ckpt, metrics = tmp_path / "ckpt", tmp_path / "metrics.jsonl"
    monkeypatch.setenv("TAU_CHECKPOINT_DIR", str(ckpt))
    monkeypatch.setenv("TAU_METRICS_FILE", str(metrics))
    assert trainer_output_dir() == str(ckpt)
    assert resume_checkpoint() is None

    train(max_steps=4, resume=taugrid.resume_from())
    lines = read(metrics)
    assert all(l["total_steps"] == 4 and "time" in l for l in lines)
    losses = [l for l in lines if "loss" in l]
    assert [l["step"] for l in losses] == [1, 2, 3, 4]
    assert all(isinstance(l["loss"], float) and "learning_rate" in l for l in losses)
    assert lines[-1]["step"] == 4
    # TauGrid's huggingface layout: checkpoint-N folders with trainer_state.json.
    assert sorted(p.name for p in ckpt.iterdir() if p.name.startswith("checkpoint-")) == ["checkpoint-2", "checkpoint-4"]
    assert (ckpt / "checkpoint-2" / "trainer_state.json").is_file()

    # A resumed attempt: TAU_RESUME_FROM names checkpoint-2, and a Path is taken as is.
    metrics.unlink()
    monkeypatch.setenv("TAU_RESUME_FROM", str(ckpt / "checkpoint-2"))
    assert resume_checkpoint() == str(ckpt / "checkpoint-2")
    trainer = train(max_steps=4, resume=taugrid.resume_from())
    assert trainer.state.global_step == 4
    assert [l["step"] for l in read(metrics) if "loss" in l] == [3, 4]


def test_numeric_metrics_drop_what_is_not_a_number() -> None:
    got = numeric_metrics({"loss": 0.5, "epoch": 1, "note": "x", "nan": float("nan"), "t": torch.tensor(2.0),
                           "step": 3})
    assert got == {"loss": 0.5, "epoch": 1, "t": 2.0}
