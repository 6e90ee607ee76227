"""Finding and running the ``tau`` binary.

The SDK runs ``tau`` for what only ``tau`` does exactly as ``tau`` does it:
submitting (``tau run``: local validation with positioned errors, the
deterministic snapshot of ``working_dir`` honouring ``.gitignore``, the
request id, the 412 upload flow, git evidence, env files) and starting the
local daemon (``tau server start``). It is found as ``TAU_BIN`` (the binary,
or a folder holding it), else ``tau`` on ``PATH``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Type

from .errors import Diagnostic, NotFound, ServerUnavailable, TauGridError, Unauthorized


class TauBinaryNotFound(TauGridError):
    """No ``tau`` binary: set ``TAU_BIN`` or put it on ``PATH``."""


def find_tau(explicit: Optional[str] = None) -> str:
    """The path of the ``tau`` binary: ``explicit``, else ``TAU_BIN``, else
    ``tau`` on ``PATH``. A folder stands for the ``tau`` in it."""
    for candidate in (explicit, os.environ.get("TAU_BIN")):
        if candidate:
            path = Path(candidate)
            if path.is_dir():
                path = path / "tau"
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise TauBinaryNotFound(f"{path} is not an executable tau binary (from TAU_BIN or tau_bin=)")
            return str(path)
    found = shutil.which("tau")
    if found is None:
        raise TauBinaryNotFound("no tau binary: put it on PATH or set TAU_BIN to it (it is built into build/bin/)")
    return found


@dataclass(frozen=True)
class Completed:
    """A finished ``tau`` command."""

    args: List[str]
    returncode: int
    stdout: str
    stderr: str


def run_tau(
    tau: str,
    args: Sequence[str],
    *,
    env: Optional[Dict[str, str]] = None,
    stdin: Optional[str] = None,
    cwd: Optional[str] = None,
    timeout: Optional[float] = None,
) -> Completed:
    """Runs ``tau ARGS...`` to its end and returns what it printed.
    ``env`` entries are added to (and override) this process's environment."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    argv = [tau, *args]
    try:
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd,
            timeout=timeout,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    except OSError as e:
        raise TauBinaryNotFound(f"cannot run {tau}: {e}") from e
    return Completed(argv, done.returncode, done.stdout, done.stderr)


_DIAGNOSTIC = re.compile(r"^(?P<where>.*?): (?P<severity>error|warning): (?P<message>.*)$")
_POSITION = re.compile(r"^(?P<file>.*):(?P<line>\d+):(?P<column>\d+)$")
_TRACE = re.compile(r"\s*\(trace (?P<trace>[^)\s]+)\)\s*$")


def parse_diagnostics(stderr: str) -> List[Diagnostic]:
    """The ``WHERE: error|warning: MESSAGE`` lines of ``tau``'s stderr."""
    out: List[Diagnostic] = []
    for line in stderr.splitlines():
        m = _DIAGNOSTIC.match(line)
        if not m or m.group("where") == "tau":
            continue
        where = m.group("where")
        pos = _POSITION.match(where)
        out.append(
            Diagnostic(
                where=where,
                severity=m.group("severity"),
                message=m.group("message"),
                file=pos.group("file") if pos else None,
                line=int(pos.group("line")) if pos else None,
                column=int(pos.group("column")) if pos else None,
            )
        )
    return out


def failure_from_stderr(stderr: str, default: Type[TauGridError] = TauGridError) -> TauGridError:
    """The error a ``tau`` command that exited 1 reported on stderr
    (``tau: MESSAGE (trace T)``), typed by what the message says: tau
    prints the server's message and trace id, not its HTTP status."""
    lines = [l for l in stderr.splitlines() if l.strip() and not l.startswith("tau: warning:")]
    text = "\n".join(lines).strip()
    if text.startswith("tau: "):
        text = text[len("tau: "):]
    trace: Optional[str] = None
    m = _TRACE.search(text)
    if m:
        trace = m.group("trace")
        text = text[: m.start()]
    if "missing or wrong token" in text:
        return Unauthorized(text, status=401, code="Unauthenticated", trace_id=trace)
    if (
        text.startswith("cannot reach taugridd")
        or text.startswith("lost the connection to taugridd")
        or text.startswith("no taugridd is running")
        or (" holds " in text and "has not answered" in text)
    ):
        return ServerUnavailable(text, trace_id=trace)
    if text.startswith("no job with id or name"):
        return NotFound(text, code="NotFound", trace_id=trace)
    return default(text or "tau failed without a message", trace_id=trace)
