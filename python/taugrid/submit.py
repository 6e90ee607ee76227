"""Submitting a spec through ``tau run``, so that a submit from Python is the
submit ``tau run`` makes: the same local validation (positioned errors),
the same snapshot of ``run.working_dir`` (``.gitignore`` and
``run.exclude`` honoured, at most 100 MiB), ``runtime.env_from_file`` and
``--env-file`` secrets, git evidence, a fresh request id, and the upload
only on a 412.

``tau run`` is pointed at the client's own server and token
(``TAU_SERVER``/``TAU_TOKEN`` in its environment), so it submits where the
client talks. Its outcome becomes:

- exit 0: the job object it printed (``-o json``); its warnings (stderr
  ``tau: warning: ...`` and ``FILE:LINE:COL: warning: ...``) are issued
  as ``TauGridWarning``;
- exit 2: ``SpecError`` with every diagnostic (nothing was submitted);
- exit 1: the error it printed, typed by its message (``Unauthorized``,
  ``ServerUnavailable``, ``NotFound``), else ``SubmitRejected``.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .errors import SpecError, SubmitRejected, TauGridError, TauGridWarning
from .tau_binary import failure_from_stderr, parse_diagnostics, run_tau
from .transport import Endpoint

SpecInput = Union[str, "os.PathLike[str]", Mapping[str, Any]]
SetInput = Union[Mapping[str, Any], Sequence[str], None]

EXIT_FAILURE = 1
EXIT_USAGE = 2


def override_args(overrides: SetInput) -> List[str]:
    """``--set PATH=VALUE`` arguments. A mapping's string values are passed
    as written (they are YAML, like on the command line); other values as
    JSON, which is YAML (``{"compute.gpus": 2, "run.args": ["--lr", "0.1"]}``).
    A sequence holds ``"PATH=VALUE"`` strings."""
    if overrides is None:
        return []
    items: List[str] = []
    if isinstance(overrides, Mapping):
        for path, value in overrides.items():
            text = value if isinstance(value, str) else json.dumps(value)
            items.append(f"{path}={text}")
    else:
        if isinstance(overrides, str):
            raise TypeError("set= takes a mapping or a list of 'PATH=VALUE' strings, not one string")
        items = [str(o) for o in overrides]
    args: List[str] = []
    for item in items:
        args += ["--set", item]
    return args


def submit_with_tau(
    tau: str,
    endpoint: Endpoint,
    spec: SpecInput,
    *,
    overrides: SetInput = None,
    env_files: Sequence[str] = (),
    name: Optional[str] = None,
    queue: Optional[str] = None,
    priority: Optional[str] = None,
    cwd: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs ``tau run SPEC -o json ...`` and returns the job object.

    ``spec`` is a path to a YAML (or JSON) spec, or a mapping, which is sent
    as JSON on tau's standard input (``tau run -``): its messages then say
    ``<stdin>:LINE:COL``, and relative paths in it (``run.working_dir``)
    resolve against ``cwd`` (default: the current folder).
    """
    stdin: Optional[str] = None
    if isinstance(spec, Mapping):
        stdin = json.dumps(dict(spec), indent=2, ensure_ascii=False) + "\n"
        target = "-"
    else:
        target = os.fspath(spec)
    args = ["run", target, "-o", "json", *override_args(overrides)]
    for f in env_files:
        args += ["--env-file", os.fspath(f)]
    if name:
        args += ["--name", name]
    if queue:
        args += ["--queue", queue]
    if priority:
        args += ["--priority", priority]
    env = {"TAU_SERVER": endpoint.url, "TAU_TOKEN": endpoint.token}
    done = run_tau(tau, args, env=env, stdin=stdin, cwd=cwd)
    if done.returncode == EXIT_USAGE:
        message = done.stderr.strip() or done.stdout.strip() or "tau refused the spec"
        diagnostics = parse_diagnostics(done.stderr)
        raise SpecError(message, [d for d in diagnostics if d.severity == "error"] or diagnostics)
    if done.returncode != 0:
        raise failure_from_stderr(done.stderr, default=SubmitRejected)
    try:
        job = json.loads(done.stdout)
    except ValueError:
        raise TauGridError(f"tau run printed no job: {done.stdout[:200]!r} {done.stderr[:200]!r}") from None
    _warn(done.stderr)
    if not isinstance(job, dict) or "id" not in job:
        raise TauGridError(f"tau run printed no job object: {done.stdout[:200]!r}")
    return job


def _warn(stderr: str) -> None:
    for d in parse_diagnostics(stderr):
        if d.severity == "warning":
            warnings.warn(str(d), TauGridWarning, stacklevel=4)
    for line in stderr.splitlines():
        if line.startswith("tau: warning: "):
            warnings.warn(line[len("tau: warning: "):], TauGridWarning, stacklevel=4)
