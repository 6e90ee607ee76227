"""Reading a job's output (``GET /api/v1/jobs/ID/logs``), as lines.

Without ``follow`` the stream is the log as it stands. With ``follow`` it is
read with ``positions=true`` (docs/api.md, "Logs"): a series of frames, each
a header line ``BYTES ATTEMPT:OFFSET[,OFFSET...]`` and BYTES bytes of log.
When the connection to taugridd is lost (it was stopped or restarted) the
follower waits for a taugridd to answer again (``TAU_RECONNECT_TIMEOUT``,
default 10m) and asks again ``from=`` the position of the last whole frame:
no line is lost or shown twice, as with ``tau logs -f``.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Iterator, List, Optional
from urllib.parse import quote

from .durations import duration_from_env
from .errors import ServerUnavailable, TauGridError
from .transport import Transport

_MAX_HEADER = 4096
_MAX_FRAME = 64 << 20


class LogFrameReader:
    """Takes the bytes of a ``positions=true`` stream and hands out the log
    bytes of each whole frame; ``position`` is where the stream stands after
    the last whole frame ("" before the first)."""

    def __init__(self) -> None:
        self.position = ""
        self._header = b""
        self._body: List[bytes] = []
        self._remaining = 0
        self._in_body = False
        self._pending = ""

    def feed(self, data: bytes) -> List[bytes]:
        """The log bytes of every frame ``data`` completes; ``TauGridError``
        when the stream is not in frames."""
        out: List[bytes] = []
        view = memoryview(data)
        while view:
            if self._in_body:
                n = min(self._remaining, len(view))
                self._body.append(bytes(view[:n]))
                self._remaining -= n
                view = view[n:]
                if self._remaining == 0:
                    self._in_body = False
                    out.append(b"".join(self._body))
                    self._body = []
                    self.position = self._pending
                continue
            raw = bytes(view)
            nl = raw.find(b"\n")
            self._header += raw if nl < 0 else raw[:nl]
            if len(self._header) > _MAX_HEADER:
                raise TauGridError("the server's log stream is not in the expected frames")
            if nl < 0:
                break
            view = view[nl + 1:]
            size, _, pos = self._header.decode("ascii", errors="replace").partition(" ")
            self._header = b""
            if not size.isdigit() or not pos or int(size) > _MAX_FRAME:
                raise TauGridError("the server's log stream is not in the expected frames")
            self._pending = pos
            self._remaining = int(size)
            self._in_body = self._remaining > 0
            if not self._in_body:
                self.position = pos
        return out


class LineSplitter:
    """Splits bytes into lines (without their ``\\n``), decoding each as
    UTF-8 (bytes that are not are replaced); ``rest`` is the unended line."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> List[str]:
        self._buffer += data
        if b"\n" not in data:
            return []
        *lines, self._buffer = self._buffer.split(b"\n")
        return [l.decode("utf-8", errors="replace") for l in lines]

    def rest(self) -> Optional[str]:
        if not self._buffer:
            return None
        line, self._buffer = self._buffer, b""
        return line.decode("utf-8", errors="replace")


def read_lines(transport: Transport, path: str) -> Iterator[str]:
    """The lines of the log at ``path`` as it stands (no following)."""
    splitter = LineSplitter()
    with transport.stream(path) as chunks:
        for chunk in chunks:
            yield from splitter.feed(chunk)
    rest = splitter.rest()
    if rest is not None:
        yield rest


def follow_lines(transport: Transport, path: str, reconnect: Callable[[], None]) -> Iterator[str]:
    """The lines of the log at ``path`` (which has ``follow=true``) until the
    job has ended and every line was sent, across lost connections:
    ``reconnect`` points ``transport`` at a server that answers again
    (raising ``ServerUnavailable`` when none does)."""
    reader = LogFrameReader()
    splitter = LineSplitter()
    while True:
        url = path + "&positions=true"
        if reader.position:
            url += "&from=" + quote(reader.position, safe=":")
        try:
            with transport.stream(url) as chunks:
                for chunk in chunks:
                    for text in reader.feed(chunk):
                        yield from splitter.feed(text)
            break
        except ServerUnavailable as lost:
            print(f"taugrid: {lost.message}; reconnecting...", file=sys.stderr)
            _wait_for_server(reconnect, lost)
    rest = splitter.rest()
    if rest is not None:
        yield rest


def _wait_for_server(reconnect: Callable[[], None], lost: ServerUnavailable) -> None:
    deadline = time.monotonic() + duration_from_env("TAU_RECONNECT_TIMEOUT", 600.0)
    while True:
        try:
            reconnect()
            return
        except ServerUnavailable as e:
            if time.monotonic() >= deadline:
                raise ServerUnavailable(f"lost taugridd and it did not come back: {e.message}") from lost
            time.sleep(0.25)
