"""TauGrid's Python SDK.

In a job (environment variables only, no server needed)::

    import taugrid
    ckpt = taugrid.resume_from()            # Path or None
    with taugrid.save_checkpoint_atomically("step-000050.pt") as path:
        torch.save(state, path)             # complete once renamed into place
    taugrid.report(step=50, total_steps=1000, loss=0.41)

From a notebook or script::

    client = taugrid.Client()               # finds (or starts) the server like `tau`
    job = client.run("job.yaml")            # exactly `tau run job.yaml`
    job.wait()                              # "Succeeded"
    for line in job.logs(): print(line)

Framework adapters: ``taugrid.integrations.huggingface`` and
``taugrid.integrations.lightning`` (each imports its framework only when
imported itself).
"""

from __future__ import annotations

from .checkpoint import save_checkpoint_atomically
from .client import Client
from .env import (
    attempt,
    checkpoint_dir,
    in_taugrid,
    is_resumed,
    job_id,
    job_name,
    output_dir,
    resume_from,
    retry_reason,
    worker_index,
)
from .errors import (
    Conflict,
    Diagnostic,
    InvalidRequest,
    NotFound,
    ServerUnavailable,
    SpecError,
    SubmitRejected,
    TauGridError,
    TauGridWarning,
    Unauthorized,
    WaitTimeout,
)
from .job import TERMINAL_STATES, Job
from .metrics import report
from .tau_binary import TauBinaryNotFound

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Conflict",
    "Diagnostic",
    "InvalidRequest",
    "Job",
    "NotFound",
    "ServerUnavailable",
    "SpecError",
    "SubmitRejected",
    "TERMINAL_STATES",
    "TauBinaryNotFound",
    "TauGridError",
    "TauGridWarning",
    "Unauthorized",
    "WaitTimeout",
    "attempt",
    "checkpoint_dir",
    "in_taugrid",
    "is_resumed",
    "job_id",
    "job_name",
    "output_dir",
    "report",
    "resume_from",
    "retry_reason",
    "save_checkpoint_atomically",
    "worker_index",
]
