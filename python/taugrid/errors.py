"""Typed errors of the SDK.

Every error the SDK raises for TauGrid's sake is a ``TauGridError``. An
error the server answered carries its HTTP ``status``, the API's ``code``
(``"NotFound"``, ``"InvalidArgument"``, ...), its ``message``, ``details``
(the API's ``details`` object, ``{}`` when none) and the request's
``trace_id`` (the ``X-Trace-Id`` header), which finds every line the
daemon logged for that request. ``str(error)`` reads like ``tau``'s own
message: ``no job with id or name "x" (trace 4f2a9c0e1b7d3a55)``.

Errors that did not come from an HTTP answer (no server to reach, a spec
``tau`` refused before sending it) have ``status`` ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Type


class TauGridError(Exception):
    """Base of every TauGrid error."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        trace_id: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.status: Optional[int] = status
        self.code: Optional[str] = code
        self.trace_id: Optional[str] = trace_id
        self.details: Dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        if not self.trace_id:
            return self.message
        # As tau prints it: a message of several lines gets the trace on
        # a line of its own.
        if self.message.endswith("\n"):
            return f"{self.message}(trace {self.trace_id})"
        return f"{self.message} (trace {self.trace_id})"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, status={self.status!r}, "
            f"code={self.code!r}, trace_id={self.trace_id!r})"
        )


class NotFound(TauGridError):
    """404: no such job, checkpoint, output or route."""


class Unauthorized(TauGridError):
    """401: the token is missing or wrong (``TAU_HOME/token``, ``TAU_TOKEN``)."""


class Conflict(TauGridError):
    """409 (``AlreadyExists``, ``Aborted``): e.g. a request id whose job was removed."""


class InvalidRequest(TauGridError):
    """400 and the other 4xx answers to a malformed request (a bad
    ``state=`` filter, resuming a job that has not ended, ...)."""


class ServerUnavailable(TauGridError):
    """No taugridd answers (none runs, it is busy or stuck past
    ``TAU_CONNECT_PATIENCE``, the connection was lost), or it answered 503."""


class SubmitRejected(TauGridError):
    """The server refused a submit sent by ``tau run`` (for instance a job
    that can never fit the machine). ``tau`` prints the server's message and
    trace id but not the HTTP status, so ``status`` is ``None``; the
    ``trace_id`` finds the request in the daemon's log."""


@dataclass(frozen=True)
class Diagnostic:
    """One line ``tau`` printed about a spec: ``FILE:LINE:COL: error: MESSAGE``.

    ``where`` is the text before the severity (``job.yaml:2:7``,
    ``<stdin>:1:81``, ``--set compute.gpu=2``); ``file``, ``line`` and
    ``column`` are parsed from it when it is a position, else ``None``.
    """

    where: str
    severity: str  # "error" or "warning"
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.where}: {self.severity}: {self.message}"


class SpecError(TauGridError):
    """The spec is invalid: ``tau`` refused it (exit 2) and submitted nothing.

    ``message`` is everything ``tau`` printed (every diagnostic, one per
    line, as ``FILE:LINE:COL: error: MESSAGE``); ``diagnostics`` holds them
    parsed.
    """

    def __init__(self, message: str, diagnostics: Optional[List[Diagnostic]] = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.diagnostics: List[Diagnostic] = list(diagnostics or [])


class WaitTimeout(TauGridError, TimeoutError):
    """``Job.wait(timeout=...)`` ran out before the job ended."""


class TauGridWarning(UserWarning):
    """A warning ``tau`` or the server gave about a submitted spec."""


def error_for_status(status: int) -> Type[TauGridError]:
    """The error class for an HTTP status the server answered with."""
    if status == 401:
        return Unauthorized
    if status == 404:
        return NotFound
    if status == 409:
        return Conflict
    if status == 503:
        return ServerUnavailable
    if 400 <= status < 500 and status not in (403, 429):
        return InvalidRequest
    return TauGridError
