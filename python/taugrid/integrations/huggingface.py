"""transformers' ``Trainer`` under TauGrid.

Importing this module imports transformers (``import taugrid`` alone never
does)::

    from transformers import Trainer, TrainingArguments
    from taugrid.integrations.huggingface import TauGridCallback, trainer_output_dir, resume_checkpoint

    args = TrainingArguments(output_dir=trainer_output_dir(), save_steps=500, logging_steps=10)
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[TauGridCallback()])
    trainer.train(resume_from_checkpoint=resume_checkpoint())   # None on a fresh start

The Trainer then writes ``checkpoint-N`` folders into ``TAU_CHECKPOINT_DIR``,
which TauGrid reads as its ``huggingface`` layout (complete once
``trainer_state.json`` is written), and a retried or resumed attempt gets
the newest as ``TAU_RESUME_FROM``. ``resume_from_checkpoint=taugrid.resume_from()``
works the same (the Trainer takes a ``Path`` too).

``TauGridCallback`` writes progress and metrics to ``TAU_METRICS_FILE``
(``taugrid.report``): ``step`` is ``state.global_step``, ``total_steps``
``state.max_steps``, and every numeric value the Trainer logs (``loss``,
``learning_rate``, ``grad_norm``, ``epoch``, ``eval_*``) is a metric. Only the
world's process zero writes, so a gang writes one line per log, not one per
rank.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Mapping, Optional

try:
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "taugrid.integrations.huggingface needs transformers: pip install transformers"
    ) from e

from ..env import checkpoint_dir, resume_from
from ..metrics import report, to_number


def trainer_output_dir() -> str:
    """``TAU_CHECKPOINT_DIR`` as ``TrainingArguments(output_dir=...)`` wants it
    (outside TauGrid ``./checkpoints``); created if missing."""
    return str(checkpoint_dir())


def resume_checkpoint() -> Optional[str]:
    """``TAU_RESUME_FROM`` as ``trainer.train(resume_from_checkpoint=...)``
    wants it: the checkpoint folder to carry on from, or ``None``."""
    path = resume_from()
    return str(path) if path is not None else None


def numeric_metrics(values: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    """The values of ``values`` that are numbers (tensors of one element
    included); the rest (strings, lists, NaN) is left out, never an error:
    a metrics line must not stop training."""
    out: Dict[str, float] = {}
    for key, value in (values or {}).items():
        if key in ("step", "total_steps", "time"):
            continue
        try:
            out[key] = to_number(key, value)
        except (TypeError, ValueError):
            continue
    return out


class TauGridCallback(TrainerCallback):
    """Reports the Trainer's progress and logged metrics to TauGrid.

    One line at every Trainer log (``logging_steps``) and evaluation, with
    the logged metrics; and, between them, a progress-only line at most every
    ``step_interval`` seconds (default 2, how often TauGrid reads the file;
    ``None``: none), so the rate and ETA stay current with sparse logging.
    """

    def __init__(self, step_interval: Optional[float] = 2.0) -> None:
        self.step_interval = step_interval
        self._last_line = 0.0

    def _report(self, state: TrainerState, metrics: Mapping[str, Any]) -> None:
        if not state.is_world_process_zero:
            return
        total = state.max_steps if state.max_steps and state.max_steps > 0 else None
        report(step=state.global_step, total_steps=total, **numeric_metrics(metrics))
        self._last_line = time.monotonic()

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._report(state, {})

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.step_interval is not None and time.monotonic() - self._last_line >= self.step_interval:
            self._report(state, {})

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> None:
        self._report(state, logs or {})

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> None:
        self._report(state, metrics or {})

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._report(state, {})
