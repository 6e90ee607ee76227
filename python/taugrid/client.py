"""``Client``: TauGrid from a notebook or a script.

Submitting goes through the ``tau`` binary (``submit.py`` says why); every
other call is the HTTP API (docs/api.md) spoken directly.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from . import discovery
from .errors import ServerUnavailable
from .job import Job, job_path
from .logs import follow_lines
from .submit import SetInput, SpecInput, submit_with_tau
from .tau_binary import find_tau
from .transport import Endpoint, Transport

PathLike = Union[str, "os.PathLike[str]"]


class Client:
    """A connection to a TauGrid server, found as ``tau`` finds it.

    - ``server`` (or ``TAU_SERVER``) with ``token`` (or ``TAU_TOKEN``):
      that server; nothing is started.
    - Else the local taugridd of ``home`` (or ``TAU_HOME``, default
      ``~/.local/share/taugrid``), read from ``server.json`` and ``token``;
      a daemon that holds the lock but is slow is waited for
      (``TAU_CONNECT_PATIENCE``). When none runs and ``autostart`` is true
      (the default, as every ``tau`` job command does), ``tau server start``
      starts one, saying so on stderr; with ``autostart=False`` that is a
      ``ServerUnavailable``.

    The server is found on first use, not here. ``tau_bin`` (or ``TAU_BIN``,
    else ``tau`` on ``PATH``) is the ``tau`` binary used to submit and to
    start the daemon. Usable as a context manager (``close()`` at the end).
    """

    def __init__(
        self,
        server: Optional[str] = None,
        token: Optional[str] = None,
        *,
        home: Optional[PathLike] = None,
        autostart: bool = True,
        tau_bin: Optional[str] = None,
    ) -> None:
        self._server = server
        self._token = token
        self._home = Path(home) if home is not None else None
        self._autostart = autostart
        self._tau_bin = tau_bin
        self._lock = threading.Lock()
        self._transport: Optional[Transport] = None

    # -- the server -------------------------------------------------------

    def _find(self, autostart: bool) -> Endpoint:
        return discovery.connect(
            server=self._server, token=self._token, home=self._home, autostart=autostart, tau_bin=self._tau_bin
        )

    def _rediscover(self) -> Endpoint:
        return self._find(autostart=False)

    @property
    def transport(self) -> Transport:
        """The HTTP client of the server (found, and started, on first use)."""
        with self._lock:
            if self._transport is None:
                endpoint = self._find(self._autostart)
                local = endpoint.home is not None
                self._transport = Transport(endpoint, self._rediscover if local else None)
            return self._transport

    @property
    def endpoint(self) -> Endpoint:
        """The server's URL and token (and the TAU_HOME it was found in)."""
        return self.transport.endpoint

    @property
    def url(self) -> str:
        return self.endpoint.url

    def reconnect(self) -> None:
        """Points the client at a server that answers now (after the daemon
        restarted), starting none; ``ServerUnavailable`` when none answers."""
        current = self.transport
        endpoint = current.endpoint
        if endpoint.home is None:
            if not discovery.server_answers(endpoint.url):
                raise ServerUnavailable(f"cannot reach taugridd at {endpoint.url}")
            return
        current.set_endpoint(self._rediscover())

    def close(self) -> None:
        """Closes the kept connection (the client stays usable)."""
        with self._lock:
            if self._transport is not None:
                self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        """Any API call (``path`` from ``/api/v1``): its JSON answer, or the
        typed error. Only GETs are ever sent twice."""
        return self.transport.request(method, path, body)

    def info(self) -> Dict[str, Any]:
        """``GET /api/v1/info``: version, pid, capacity, job counts by state."""
        result: Dict[str, Any] = self.request("GET", "/api/v1/info")
        return result

    # -- jobs -------------------------------------------------------------

    def run(
        self,
        spec: SpecInput,
        follow: bool = False,
        set: SetInput = None,
        *,
        env_files: Sequence[PathLike] = (),
        name: Optional[str] = None,
        queue: Optional[str] = None,
        priority: Optional[str] = None,
        cwd: Optional[PathLike] = None,
        out: Optional[IO[str]] = None,
    ) -> Job:
        """Submits a job as ``tau run`` does and returns it.

        ``spec``: a path to a YAML or JSON spec, or a dict (sent as JSON on
        tau's stdin: messages say ``<stdin>:LINE:COL`` and relative paths
        resolve against ``cwd``, default the current folder). ``set``:
        overrides, ``{"compute.cpus": "2"}`` or ``["compute.cpus=2"]``
        (``tau run --set``). ``env_files``, ``name``, ``queue``,
        ``priority``: ``--env-file``, ``--name``, ``--queue``, ``--priority``.

        ``SpecError`` (with every ``FILE:LINE:COL: error: ...``) when the spec
        is invalid; nothing is submitted then. With ``follow`` the job's
        output (every attempt, every rank) is written to ``out`` (default
        ``sys.stdout``) until it ends, as ``tau run -f`` does, and the job is
        returned ended (look at ``state`` and ``exit_code``).
        """
        tau = find_tau(self._tau_bin)
        data = submit_with_tau(
            tau,
            self.endpoint,
            spec,
            overrides=set,
            env_files=[os.fspath(f) for f in env_files],
            name=name,
            queue=queue,
            priority=priority,
            cwd=os.fspath(cwd) if cwd is not None else None,
        )
        job = Job(self, data)
        if follow:
            stream = out if out is not None else sys.stdout
            path = job_path(job.id) + "/logs?follow=true&attempt=all&rank=all"
            for line in follow_lines(self.transport, path, self.reconnect):
                stream.write(line + "\n")
                stream.flush()
            job.refresh()
        return job

    def job(self, id_or_name: str) -> Job:
        """The job with that id, or the newest job of that name; ``NotFound``."""
        return Job(self, self.request("GET", job_path(id_or_name)))

    def jobs(
        self,
        state: Optional[str] = None,
        *,
        workspace: Optional[str] = None,
        name: Optional[str] = None,
        project: Optional[str] = None,
        tags: Optional[Mapping[str, str]] = None,
        limit: Optional[int] = None,
    ) -> List[Job]:
        """Jobs, newest first, finished ones included, filtered as
        ``tau list`` filters (every tag must match). Pages through the list
        API (1,000 a page) until ``limit`` jobs (``None``: all of them)."""
        query = ""
        for key, value in (("state", state), ("workspace", workspace), ("name", name), ("project", project)):
            if value is not None:
                query += f"{key}={quote(value, safe='')}&"
        for key, value in (tags or {}).items():
            query += "tag=" + quote(f"{key}={value}", safe="") + "&"
        found: List[Job] = []
        token: Optional[str] = None
        while True:
            page = 1000 if limit is None else min(1000, limit - len(found))
            if page <= 0:
                break
            path = f"/api/v1/jobs?{query}limit={page}"
            if token is not None:
                path += "&continue=" + quote(token, safe="")
            result = self.request("GET", path)
            found.extend(Job(self, j) for j in result.get("jobs", []))
            nxt = result.get("next")
            if not isinstance(nxt, str) or (limit is not None and len(found) >= limit):
                break
            token = nxt
        return found
