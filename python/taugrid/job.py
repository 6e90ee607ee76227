"""A job on a TauGrid server, as the API's job object (docs/api.md, "The job
object") plus the calls that act on it."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Union
from urllib.parse import quote

from .errors import WaitTimeout
from .logs import follow_lines, read_lines

if TYPE_CHECKING:
    from .client import Client

# States a job does not leave on its own (`tau resume` starts it again).
TERMINAL_STATES = frozenset({"Succeeded", "Failed", "Cancelled"})


def job_path(id_or_name: str) -> str:
    return "/api/v1/jobs/" + quote(id_or_name, safe="-_.~:")


class Job:
    """A snapshot of one job; ``refresh()`` fetches it again.

    The attributes read the last fetched job object; ``data`` is the whole
    object (every field in docs/api.md). Calls go to the job's id, so a job
    found by name stays the same job when another of that name is submitted.
    """

    def __init__(self, client: "Client", data: Dict[str, Any]) -> None:
        self._client = client
        self._data: Dict[str, Any] = data

    # -- the job object ---------------------------------------------------

    @property
    def data(self) -> Dict[str, Any]:
        """The job object as last fetched."""
        return self._data

    @property
    def id(self) -> str:
        return str(self._data["id"])

    @property
    def name(self) -> str:
        return str(self._data.get("name", ""))

    @property
    def state(self) -> str:
        """``Queued``, ``Admitted``, ``Running``, ``Retrying``, ``Succeeded``,
        ``Failed`` or ``Cancelled`` (docs/states.md), as last fetched."""
        return str(self._data.get("state", ""))

    @property
    def reason(self) -> str:
        return str(self._data.get("reason", ""))

    @property
    def message(self) -> str:
        return str(self._data.get("message", ""))

    @property
    def exit_code(self) -> Optional[int]:
        """The last attempt's exit code; ``None`` before it ended or when a
        signal or the platform ended it."""
        code = self._data.get("exit_code")
        return int(code) if isinstance(code, int) else None

    @property
    def attempt(self) -> int:
        return int(self._data.get("attempt", 0))

    @property
    def done(self) -> bool:
        """Whether it has ended (``Succeeded``, ``Failed`` or ``Cancelled``)."""
        return self.state in TERMINAL_STATES

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, name={self.name!r}, state={self.state!r})"

    # -- calls ------------------------------------------------------------

    @property
    def _path(self) -> str:
        return job_path(self.id)

    def refresh(self) -> "Job":
        """Fetches the job object again; returns ``self``."""
        self._data = self._client.request("GET", self._path)
        return self

    def wait(self, timeout: Optional[float] = None, poll: float = 0.5) -> str:
        """Polls every ``poll`` seconds until the job has ended and returns its
        final state; ``WaitTimeout`` after ``timeout`` seconds (``None``:
        no limit). A ``Retrying`` job has not ended: it is waited through."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.refresh()
        while not self.done:
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(f"job {self.id} is still {self.state} after {timeout:g}s")
            pause = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
            time.sleep(pause)
            self.refresh()
        return self.state

    def logs(
        self,
        follow: bool = False,
        rank: Union[int, str] = 0,
        attempt: Union[int, str, None] = None,
        tail: Optional[int] = None,
    ) -> Iterator[str]:
        """The job's output (stdout and stderr together), line by line
        without the ``\\n``.

        ``rank``: a rank number or ``"all"`` (lines prefixed ``[rank R] ``
        when there are several). ``attempt``: a number, ``"last"`` (the
        default) or ``"all"`` (each attempt after the first starts with a
        ``--- attempt N (...) ---`` line). ``tail``: start with the last N
        lines. With ``follow`` the iterator ends only once the job has ended
        and every line was given, across daemon restarts (``tau logs -f``).
        The request is sent when iteration starts.
        """
        path = f"{self._path}/logs?rank={quote(str(rank))}"
        if follow:
            path += "&follow=true"
        if attempt is not None:
            path += f"&attempt={quote(str(attempt))}"
        if tail is not None:
            path += f"&tail={int(tail)}"
        if follow:
            return follow_lines(self._client.transport, path, self._client.reconnect)
        return read_lines(self._client.transport, path)

    def cancel(self) -> "Job":
        """Cancels it: a queued or retrying job ends at once, a running one gets
        SIGTERM, then SIGKILL after ``checkpoint.grace_period``. Returns
        ``self`` updated (``state`` may still be ``Running`` while it stops;
        ``wait()`` for ``Cancelled``)."""
        self._data = self._client.request("POST", self._path + "/cancel", {})
        return self

    def resume(self, from_checkpoint: Optional[str] = None) -> "Job":
        """``tau resume``: a new attempt of an ended job from its newest
        complete checkpoint, or the one named. Returns ``self`` updated."""
        body: Dict[str, Any] = {"from": from_checkpoint} if from_checkpoint else {}
        self._data = self._client.request("POST", self._path + "/resume", body)
        return self

    def events(self) -> List[Dict[str, Any]]:
        """The job's events so far (``{id, job_id, at, type, reason, message}``)."""
        out: List[Dict[str, Any]] = []
        for line in read_lines(self._client.transport, self._path + "/events"):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def status(self) -> Dict[str, Any]:
        """What ``tau status -o json`` prints: the job object, fetched now,
        plus ``timeline``, every event. Also refreshes ``self``."""
        self.refresh()
        out = dict(self._data)
        out["timeline"] = self.events()
        return out

    def evidence(self) -> Dict[str, Any]:
        """The evidence capsule (docs/evidence.md): sealed once the job has
        ended, else as it stands (``"complete": false``)."""
        result: Dict[str, Any] = self._client.request("GET", self._path + "/evidence")
        return result

    def checkpoints(self) -> List[Dict[str, Any]]:
        """The complete checkpoints, newest first (``tau checkpoints``)."""
        result = self._client.request("GET", self._path + "/checkpoints")
        return list(result.get("checkpoints", []))

    def metrics(self) -> List[Dict[str, Any]]:
        """The last 5,000 lines of the job's ``TAU_METRICS_FILE``."""
        result = self._client.request("GET", self._path + "/metrics")
        return list(result.get("points", []))

    def outputs(self) -> List[Dict[str, Any]]:
        """The files it wrote to ``TAU_OUTPUT_DIR``: ``{path, size, sha256}``."""
        result = self._client.request("GET", self._path + "/outputs")
        return list(result.get("files", []))
