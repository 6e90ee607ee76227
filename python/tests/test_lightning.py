"""The Lightning adapter on a tiny linear model (CPU, a few steps)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

import taugrid  # noqa: E402
from taugrid.integrations.lightning import AtomicModelCheckpoint, TauGridCallback, checkpoint_callback  # noqa: E402


class Tiny(pl.LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader() -> Any:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 4, generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=4)


def fit(tmp_path: Path, max_steps: int) -> Any:
    trainer = pl.Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=1,
        limit_val_batches=1,
        default_root_dir=str(tmp_path),
        callbacks=[TauGridCallback(interval=0), checkpoint_callback(every_n_train_steps=2)],
    )
    trainer.fit(Tiny(), train_dataloaders=loader(), val_dataloaders=loader(), ckpt_path=taugrid.resume_from())
    return trainer


def read(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(l) for l in path.read_text().splitlines()]


@pytest.mark.filterwarnings("ignore:Checkpoint directory .* exists and is not empty")
def test_lightning_reports_metrics_and_writes_complete_checkpoints(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ckpt, metrics = tmp_path / "ckpt", tmp_path / "metrics.jsonl"
    monkeypatch.setenv("TAU_CHECKPOINT_DIR", str(ckpt))
    monkeypatch.setenv("TAU_METRICS_FILE", str(metrics))

    fit(tmp_path, max_steps=6)
    lines = read(metrics)
    assert all(l["total_steps"] == 6 for l in lines)
    batch_lines = [l for l in lines if "train_loss" in l]
    assert [l["step"] for l in batch_lines][:3] == [1, 2, 3] and lines[-1]["step"] == 6
    assert any("val_loss" in l for l in lines)  # end of a validation (not the sanity check: step 0)
    assert all(l["step"] > 0 for l in lines if "val_loss" in l)
    names = sorted(p.name for p in ckpt.iterdir())
    assert names == ["step-000002.ckpt", "step-000004.ckpt", "step-000006.ckpt"]  # no .tmp left

    # A resumed attempt carries on from TAU_RESUME_FROM.
    metrics.unlink()
    monkeypatch.setenv("TAU_RESUME_FROM", str(ckpt / "step-000004.ckpt"))
    trainer = fit(tmp_path, max_steps=8)
    assert trainer.global_step == 8
    steps = [l["step"] for l in read(metrics) if "train_loss" in l]
    assert steps[0] == 5 and steps[-1] == 8


def test_checkpoint_callback_defaults_and_refuses_another_dirpath(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_CHECKPOINT_DIR", str(tmp_path / "c"))
    cb = checkpoint_callback(save_top_k=2, monitor="val_loss")
    assert isinstance(cb, AtomicModelCheckpoint)
    assert Path(cb.dirpath) == tmp_path / "c" and cb.save_top_k == 2 and cb.filename == "step-{step:06d}"
    with pytest.raises(TypeError, match="TAU_CHECKPOINT_DIR"):
        checkpoint_callback(dirpath=str(tmp_path))


def test_a_failed_save_leaves_no_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_CHECKPOINT_DIR", str(tmp_path / "c"))
    cb = checkpoint_callback()

    class Boom(Exception):
        pass

    class FakeTrainer:
        is_global_zero = True

        def save_checkpoint(self, path: str, weights_only: bool) -> None:
            Path(path).write_bytes(b"half")
            raise Boom()

    with pytest.raises(Boom):
        cb._save_checkpoint(FakeTrainer(), str(tmp_path / "c" / "step-000001.ckpt"))
    assert list((tmp_path / "c").iterdir()) == []  # neither the checkpoint nor its staging
