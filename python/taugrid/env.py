"""What a job is told through its environment (docs/checkpoints.md,
docs/execution.md), read without a server.

Inside TauGrid every attempt gets ``TAU_JOB_ID``, ``TAU_JOB_NAME``,
``TAU_WORKSPACE``, ``TAU_ATTEMPT``, ``TAU_WORKER_INDEX``,
``TAU_CHECKPOINT_DIR``, ``TAU_OUTPUT_DIR`` and ``TAU_METRICS_FILE``;
``TAU_RESUME_FROM`` and ``TAU_RETRY_REASON`` only when there is something
to say. Outside TauGrid (no ``TAU_JOB_ID``) the same code runs with local
stand-ins: ``./checkpoints`` and ``./outputs`` under the current folder,
attempt 1, nothing to resume from.

Each function reads the environment when it is called, never at import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

LOCAL_CHECKPOINT_DIR = "checkpoints"
LOCAL_OUTPUT_DIR = "outputs"


def _env(name: str) -> Optional[str]:
    """The variable's value; ``None`` when it is unset or empty."""
    value = os.environ.get(name)
    return value if value else None


def in_taugrid() -> bool:
    """Whether this process runs as (part of) a TauGrid job."""
    return _env("TAU_JOB_ID") is not None


def job_id() -> Optional[str]:
    """``TAU_JOB_ID`` (``j_`` and 10 characters); ``None`` outside TauGrid."""
    return _env("TAU_JOB_ID")


def job_name() -> Optional[str]:
    """``TAU_JOB_NAME``; ``None`` outside TauGrid."""
    return _env("TAU_JOB_NAME")


def _int_env(name: str, default: int) -> int:
    value = _env(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a whole number") from None


def attempt() -> int:
    """``TAU_ATTEMPT``: this attempt's number, from 1 (1 outside TauGrid)."""
    return _int_env("TAU_ATTEMPT", 1)


def worker_index() -> int:
    """``TAU_WORKER_INDEX``: this worker's index in its gang (0 outside TauGrid)."""
    return _int_env("TAU_WORKER_INDEX", 0)


def retry_reason() -> Optional[str]:
    """``TAU_RETRY_REASON``: why this attempt runs (``preempted``,
    ``gpu_fault``, ``exit:3``, ``resume``, ...); ``None`` on a first attempt."""
    return _env("TAU_RETRY_REASON")


def _folder(variable: str, local: str) -> Path:
    value = _env(variable)
    path = Path(value) if value is not None else Path.cwd() / local
    path.mkdir(parents=True, exist_ok=True)
    return path


def checkpoint_dir() -> Path:
    """``TAU_CHECKPOINT_DIR``, created if missing; outside TauGrid
    ``./checkpoints`` (absolute, created).

    Write each checkpoint as a direct child of it and make it complete by a
    rename (``save_checkpoint_atomically``): TauGrid offers the newest
    complete one to the next attempt as ``TAU_RESUME_FROM``.
    """
    return _folder("TAU_CHECKPOINT_DIR", LOCAL_CHECKPOINT_DIR)


def output_dir() -> Path:
    """``TAU_OUTPUT_DIR`` (what ``tau outputs`` / ``tau cp`` give back),
    created if missing; outside TauGrid ``./outputs`` (absolute, created)."""
    return _folder("TAU_OUTPUT_DIR", LOCAL_OUTPUT_DIR)


def resume_from() -> Optional[Path]:
    """``TAU_RESUME_FROM``: the absolute path of the checkpoint to carry on
    from; ``None`` when there is none (a fresh start, or outside TauGrid).

    Pass it on as is: ``trainer.train(resume_from_checkpoint=resume_from())``,
    ``trainer.fit(model, ckpt_path=resume_from())``.
    """
    value = _env("TAU_RESUME_FROM")
    return Path(value) if value is not None else None


def is_resumed() -> bool:
    """Whether this attempt has a checkpoint to carry on from
    (``TAU_RESUME_FROM`` is set). A retried attempt of a job that saved no
    checkpoint yet is not resumed: it starts from the beginning."""
    return resume_from() is not None
