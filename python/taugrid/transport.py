"""JSON over HTTP to taugridd's ``/api/v1``, with the CLI's rules for
sending a request again (docs/api.md, "Submit a job"; src/cli/api_client.cc).

- Every request sends ``Authorization: Bearer TOKEN``.
- An answer of 400 or more becomes the typed error for its status
  (``errors.error_for_status``) with the API's code, message, details and
  the ``X-Trace-Id`` header.
- GETs go over one kept-alive connection and are sent once more over a
  fresh one when the kept connection turns out to be closed; a POST or
  DELETE is sent over a fresh connection and never twice: losing the
  connection after sending it is a ``ServerUnavailable`` saying it may
  have been carried out.
- When no server answers at the endpoint's address and the endpoint was
  found in a local TAU_HOME, it is looked up again once (the daemon may
  have restarted elsewhere) before giving up.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Tuple
from urllib.parse import urlsplit

from .errors import ServerUnavailable, TauGridError, error_for_status

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 300.0
# A followed log may be quiet for hours; only a closed connection ends it.
STREAM_READ_TIMEOUT_S = 24 * 3600.0

_LOST = (http.client.RemoteDisconnected, http.client.IncompleteRead, ConnectionError, BrokenPipeError)


@dataclass(frozen=True)
class Endpoint:
    """Where a server is and how to authenticate to it."""

    url: str  # "http://127.0.0.1:PORT"
    token: str
    home: Optional[Path] = None  # the TAU_HOME it was found in; None for TAU_SERVER or server=


def _error_from_answer(status: int, body: bytes, trace: Optional[str]) -> TauGridError:
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text) if text else None
    except ValueError:
        data = None
    cls = error_for_status(status)
    if isinstance(data, dict) and "message" in data:
        details = data.get("details")
        return cls(
            str(data.get("message", "")),
            status=status,
            code=str(data["code"]) if "code" in data else None,
            trace_id=trace,
            details=details if isinstance(details, dict) else None,
        )
    snippet = text if len(text) <= 200 else text[:200] + "..."
    return cls(f"the server answered HTTP {status}: {snippet}", status=status, trace_id=trace)


class Transport:
    """One server's HTTP client. Thread-safe: the kept connection is used by
    one request at a time; streams get connections of their own."""

    def __init__(self, endpoint: Endpoint, rediscover: Optional[Callable[[], Endpoint]] = None) -> None:
        self._endpoint = endpoint
        self._rediscover = rediscover
        self._lock = threading.Lock()
        self._kept: Optional[http.client.HTTPConnection] = None

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    def set_endpoint(self, endpoint: Endpoint) -> None:
        """Talks to ``endpoint`` from now on (a restarted daemon)."""
        with self._lock:
            self._drop_kept()
            self._endpoint = endpoint

    def close(self) -> None:
        with self._lock:
            if self._kept is not None:
                self._kept.close()
                self._kept = None

    # -- connections ------------------------------------------------------

    def _connect_once(self, read_timeout: float) -> http.client.HTTPConnection:
        parts = urlsplit(self._endpoint.url)
        host = parts.hostname or "127.0.0.1"
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(host, parts.port, timeout=CONNECT_TIMEOUT_S)
        try:
            conn.connect()
        except OSError as e:
            conn.close()
            raise ServerUnavailable(f"cannot reach taugridd at {self._endpoint.url}: {e}") from e
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout)
        return conn

    def _connect(self, read_timeout: float) -> http.client.HTTPConnection:
        try:
            return self._connect_once(read_timeout)
        except ServerUnavailable:
            if self._rediscover is None:
                raise
            # A local daemon may have restarted on another port, or be
            # starting: look it up again once (never starting one).
            self._endpoint = self._rediscover()
            return self._connect_once(read_timeout)

    def _path(self, path: str) -> str:
        prefix = urlsplit(self._endpoint.url).path.rstrip("/")
        return prefix + path

    def _headers(self, has_body: bool) -> Dict[str, str]:
        h = {"Authorization": f"Bearer {self._endpoint.token}", "Accept": "application/json"}
        if has_body:
            h["Content-Type"] = "application/json"
        return h

    # -- requests ---------------------------------------------------------

    def _exchange(
        self, conn: http.client.HTTPConnection, method: str, path: str, body: Optional[bytes]
    ) -> Tuple[int, bytes, Optional[str]]:
        conn.request(method, self._path(path), body=body, headers=self._headers(body is not None))
        res = conn.getresponse()
        data = res.read()
        return res.status, data, res.getheader("X-Trace-Id")

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        """Sends one request and returns its JSON answer (``{}`` for an empty
        one); raises the typed error for an answer of 400 or more."""
        payload = json.dumps(body).encode("utf-8") if body is not None else None
        if method == "GET":
            status, data, trace = self._send_resendable(method, path, payload)
        else:
            status, data, trace = self._send_once(method, path, payload)
        if status >= 400:
            raise _error_from_answer(status, data, trace)
        if not data:
            return {}
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError:
            raise TauGridError("the server's answer is not JSON", status=status, trace_id=trace) from None

    def _send_resendable(self, method: str, path: str, payload: Optional[bytes]) -> Tuple[int, bytes, Optional[str]]:
        with self._lock:
            for tries in range(2):
                reused = self._kept is not None
                if self._kept is None:
                    self._kept = self._connect(READ_TIMEOUT_S)
                try:
                    answer = self._exchange(self._kept, method, path, payload)
                    if self._kept.sock is None:  # the server closed it (Connection: close)
                        self._kept = None
                    return answer
                except socket.timeout as e:
                    self._drop_kept()
                    raise ServerUnavailable(
                        f"taugridd at {self._endpoint.url} did not answer {method} {path} within {READ_TIMEOUT_S:.0f}s"
                    ) from e
                except _LOST as e:
                    self._drop_kept()
                    if not reused or tries == 1:
                        raise ServerUnavailable(f"lost the connection to taugridd at {self._endpoint.url}: {e}") from e
            raise AssertionError("unreachable")

    def _drop_kept(self) -> None:
        if self._kept is not None:
            self._kept.close()
            self._kept = None

    def _send_once(self, method: str, path: str, payload: Optional[bytes]) -> Tuple[int, bytes, Optional[str]]:
        conn = self._connect(READ_TIMEOUT_S)
        try:
            return self._exchange(conn, method, path, payload)
        except (socket.timeout, *_LOST) as e:
            raise ServerUnavailable(
                f"lost the connection to taugridd at {self._endpoint.url} during {method} {path} ({e}); it may have "
                "been carried out, so it was not sent again: check (tau list, tau status) before repeating it"
            ) from e
        finally:
            conn.close()

    @contextmanager
    def stream(self, path: str, read_timeout: float = STREAM_READ_TIMEOUT_S) -> Iterator[Iterator[bytes]]:
        """GETs ``path`` over a connection of its own and yields an iterator
        of the body's chunks as they arrive. A lost connection while reading
        raises ``ServerUnavailable``; the connection is closed when the
        ``with`` block ends, whether the body was read to its end or not."""
        conn = self._connect(read_timeout)
        try:
            try:
                conn.request("GET", self._path(path), headers=self._headers(False))
                res = conn.getresponse()
            except (socket.timeout, *_LOST) as e:
                raise ServerUnavailable(f"lost the connection to taugridd at {self._endpoint.url}: {e}") from e
            trace = res.getheader("X-Trace-Id")
            if res.status >= 400:
                raise _error_from_answer(res.status, res.read(), trace)

            def chunks() -> Iterator[bytes]:
                while True:
                    try:
                        data = res.read1(65536)
                    except (socket.timeout, *_LOST, ValueError) as e:
                        raise ServerUnavailable(
                            f"lost the connection to taugridd at {self._endpoint.url}: {e!r}"
                        ) from e
                    if not data:
                        return
                    yield data

            yield chunks()
        finally:
            conn.close()
