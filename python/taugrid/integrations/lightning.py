"""Lightning (``lightning.pytorch``) under TauGrid.

Importing this module imports lightning (``import taugrid`` alone never
does)::

    import lightning.pytorch as pl
    import taugrid
    from taugrid.integrations.lightning import TauGridCallback, checkpoint_callback

    trainer = pl.Trainer(max_steps=10_000, callbacks=[TauGridCallback(), checkpoint_callback(every_n_train_steps=500)])
    trainer.fit(model, datamodule=dm, ckpt_path=taugrid.resume_from())   # None on a fresh start

``checkpoint_callback`` writes ``step-NNNNNN.ckpt`` into ``TAU_CHECKPOINT_DIR``
(TauGrid's ``plain`` layout: ``step*`` and ``*.ckpt`` are checkpoints), each
saved as ``NAME.tmp`` and renamed into place once whole, so TauGrid never
offers a half-written one. It keeps every checkpoint (``save_top_k=-1``):
TauGrid's ``checkpoint.keep`` prunes them, never the one an attempt resumed
from.

``TauGridCallback`` writes progress and metrics to ``TAU_METRICS_FILE``
(``taugrid.report``): ``step`` is ``trainer.global_step``, ``total_steps``
``trainer.estimated_stepping_batches`` (when finite), and every numeric
value of ``trainer.callback_metrics`` (what ``self.log`` logged) is a metric.
Only global rank zero writes.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

try:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import Callback, ModelCheckpoint
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("taugrid.integrations.lightning needs lightning: pip install lightning") from e

from ..checkpoint import remove_path
from ..env import checkpoint_dir
from ..metrics import report, to_number


def numeric_metrics(values: Mapping[str, Any]) -> Dict[str, float]:
    """The numeric values (one-element tensors included) of ``values``; the
    rest is left out, never an error: a metrics line must not stop training."""
    out: Dict[str, float] = {}
    for key, value in values.items():
        if key in ("step", "total_steps", "time"):
            continue
        try:
            out[key] = to_number(key, value)
        except (TypeError, ValueError):
            continue
    return out


class TauGridCallback(Callback):
    """Reports progress and ``trainer.callback_metrics`` to TauGrid.

    A line at the end of a training batch at most every ``interval`` seconds
    (default 2, how often TauGrid reads the file; 0: every batch), at the
    end of each validation (not the sanity check) and at the end of training.
    """

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self._last_line: Optional[float] = None
        self._total: Optional[int] = None

    def _report(self, trainer: "pl.Trainer") -> None:
        if not trainer.is_global_zero:
            return
        report(step=trainer.global_step, total_steps=self._total, **numeric_metrics(trainer.callback_metrics))
        self._last_line = time.monotonic()

    def on_train_start(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule") -> None:
        total = trainer.estimated_stepping_batches
        self._total = int(total) if isinstance(total, (int, float)) and math.isfinite(total) and total > 0 else None

    def on_train_batch_end(
        self, trainer: "pl.Trainer", pl_module: "pl.LightningModule", outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._last_line is None or time.monotonic() - self._last_line >= self.interval:
            self._report(trainer)

    def on_validation_end(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule") -> None:
        if not trainer.sanity_checking:
            self._report(trainer)

    def on_train_end(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule") -> None:
        self._report(trainer)


class AtomicModelCheckpoint(ModelCheckpoint):
    """A ``ModelCheckpoint`` whose every save is complete by TauGrid's rule:
    the strategy writes ``PATH.tmp`` (a file, or a folder for sharded
    strategies), and global rank zero renames it to ``PATH`` once every rank
    has written (Lightning's own local save goes through a temporary file
    that is copied, not renamed, when ``/tmp`` is another filesystem).

    A save that fails removes its staging. It replaces
    ``ModelCheckpoint._save_checkpoint`` (Lightning 2.x; tested with 2.6.6),
    keeping what that method records.
    """

    def _save_checkpoint(self, trainer: "pl.Trainer", filepath: str) -> None:
        staging = filepath + ".tmp"
        try:
            trainer.save_checkpoint(staging, self.save_weights_only)  # ends with a barrier
        except BaseException:
            if trainer.is_global_zero:
                remove_path(Path(staging))
            raise
        if trainer.is_global_zero:
            os.replace(staging, filepath)
            fd = os.open(os.path.dirname(filepath) or ".", os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        trainer.strategy.barrier("taugrid.AtomicModelCheckpoint")
        self._last_global_step_saved = trainer.global_step
        self._last_checkpoint_saved = filepath
        if trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.after_save_checkpoint(self)


def checkpoint_callback(**kwargs: Any) -> AtomicModelCheckpoint:
    """An ``AtomicModelCheckpoint`` writing into ``TAU_CHECKPOINT_DIR``
    (outside TauGrid ``./checkpoints``). Defaults: ``filename="step-{step:06d}"``
    with ``auto_insert_metric_name=False`` (``step-000500.ckpt``) and
    ``save_top_k=-1`` (TauGrid prunes); any ``ModelCheckpoint`` argument
    (``every_n_train_steps``, ``monitor``, ...) is passed on, ``dirpath``
    excepted."""
    if "dirpath" in kwargs:
        raise TypeError("checkpoint_callback() writes into TAU_CHECKPOINT_DIR; use ModelCheckpoint for another dirpath")
    kwargs.setdefault("filename", "step-{step:06d}")
    kwargs.setdefault("auto_insert_metric_name", False)
    kwargs.setdefault("save_top_k", -1)
    return AtomicModelCheckpoint(dirpath=str(checkpoint_dir()), **kwargs)
