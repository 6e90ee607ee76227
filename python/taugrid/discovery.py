"""Finding the server to talk to, exactly as ``tau`` does
(src/cli/connect.cc, docs/control-plane.md "Starting and finding it").

1. ``server=`` (with ``token=``, else ``TAU_TOKEN``), or ``TAU_SERVER``
   (with ``TAU_TOKEN``): that server; nothing is started.
2. Else the local daemon of ``TAU_HOME`` (default ``$XDG_DATA_HOME/taugrid``,
   else ``~/.local/share/taugrid``): ``TAU_HOME/server.json`` names its
   ``url``, ``TAU_HOME/token`` holds the token. It is used when
   ``GET /healthz`` answers there.
3. When it does not answer but a daemon holds ``TAU_HOME/taugridd.lock``,
   that daemon is busy or still starting: it is waited for
   (``TAU_CONNECT_PATIENCE``, default 30s), never replaced; past that,
   ``ServerUnavailable`` saying it is busy.
4. When no daemon holds the lock: with ``autostart`` (the default, as every
   ``tau`` job command does) ``tau server start`` starts one, fully
   detached, its log in ``TAU_HOME/server.log``, and a note says so on
   stderr; without it, ``ServerUnavailable`` saying to run
   ``tau server start``.
"""

from __future__ import annotations

import errno
import fcntl
import http.client
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional
from urllib.parse import urlsplit

from .durations import duration_from_env
from .errors import ServerUnavailable
from .tau_binary import TauBinaryNotFound, find_tau, run_tau, failure_from_stderr
from .transport import Endpoint


def default_home() -> Path:
    """``$TAU_HOME``, else ``$XDG_DATA_HOME/taugrid``, else
    ``$HOME/.local/share/taugrid`` (``/tmp`` standing in for an unset HOME)."""
    home = os.environ.get("TAU_HOME")
    if home:
        return Path(home)
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "taugrid"
    user = os.environ.get("HOME") or "/tmp"
    return Path(user) / ".local/share/taugrid"


def read_server_json(home: Path) -> Optional[Dict[str, Any]]:
    """``TAU_HOME/server.json`` (``pid``, ``port``, ``listen``, ``url``,
    ``version``) when it exists and names a ``url``."""
    try:
        data = json.loads((home / "server.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return None
    return data


def read_token(home: Path) -> str:
    """The first line of ``TAU_HOME/token`` ("" when unreadable)."""
    try:
        with open(home / "token") as f:
            return f.readline().rstrip("\r\n")
    except OSError:
        return ""


def server_answers(url: str, timeout: float = 2.0) -> bool:
    """Whether ``GET /healthz`` at ``url`` answers 200 within ``timeout``."""
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request("GET", parts.path.rstrip("/") + "/healthz")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def daemon_holds_lock(home: Path) -> bool:
    """Whether a taugridd holds ``TAU_HOME/taugridd.lock`` now (it runs,
    answering or not): a shared lock is refused only while a daemon holds
    its exclusive one."""
    try:
        fd = os.open(home / "taugridd.lock", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # never started here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)  # drops the shared lock when it was taken


def _local(home: Path) -> Optional[Endpoint]:
    info = read_server_json(home)
    if info is not None and server_answers(info["url"]):
        return Endpoint(info["url"], read_token(home), home)
    return None


def wait_for_busy_server(home: Path) -> Endpoint:
    """Waits (``TAU_CONNECT_PATIENCE``, default 30s) for the taugridd that
    holds the lock to answer; ``ServerUnavailable``, naming it busy, when it
    does not (or exited meanwhile)."""
    patience = duration_from_env("TAU_CONNECT_PATIENCE", 30.0)
    deadline = time.monotonic() + patience
    said = False
    while True:
        found = _local(home)
        if found is not None:
            return found
        if not daemon_holds_lock(home):
            raise ServerUnavailable("taugridd exited")
        if time.monotonic() >= deadline:
            info = read_server_json(home)
            pid = f" (pid {info.get('pid')})" if info else ""
            raise ServerUnavailable(
                f"taugridd{pid} holds {home / 'taugridd.lock'} but has not answered for {patience:g}s: it is busy "
                f"or stuck (not starting another); see {home / 'server.log'}"
            )
        if not said:
            print(
                f"taugrid: taugridd is running (it holds {home / 'taugridd.lock'}) but does not answer yet; "
                "waiting for it",
                file=sys.stderr,
            )
            said = True
        time.sleep(0.2)


def start_local_server(home: Path, tau_bin: Optional[str] = None) -> Endpoint:
    """Starts taugridd for ``home`` with ``tau server start`` (fully detached,
    log in ``home/server.log``) and returns it once it answers."""
    try:
        tau = find_tau(tau_bin)
    except TauBinaryNotFound as e:
        raise ServerUnavailable(
            f"no taugridd is running for {home}, and none can be started: {e.message} "
            "(or start one with `tau server start`)"
        ) from e
    done = run_tau(tau, ["server", "start"], env={"TAU_HOME": str(home)}, timeout=60)
    if done.returncode != 0:
        raise failure_from_stderr(done.stderr or done.stdout, default=ServerUnavailable)
    found = _local(home)
    if found is None:
        raise ServerUnavailable(f"taugridd started but does not answer; see {home / 'server.log'}")
    # As tau says it, on stderr: "started taugridd (pid N) at URL; log: ..."
    print(f"taugrid: {done.stdout.strip()}", file=sys.stderr)
    return found


def connect(
    *,
    server: Optional[str] = None,
    token: Optional[str] = None,
    home: Optional[Path] = None,
    autostart: bool = True,
    tau_bin: Optional[str] = None,
) -> Endpoint:
    """The endpoint to talk to, found as the module docstring says. An
    explicit ``token`` replaces the one ``TAU_TOKEN`` or ``TAU_HOME/token``
    would give."""
    remote = server or os.environ.get("TAU_SERVER")
    if remote:
        return Endpoint(remote.rstrip("/"), token if token is not None else os.environ.get("TAU_TOKEN", ""))
    root = home if home is not None else default_home()
    found = _local(root)
    if found is None and daemon_holds_lock(root):
        # Alive, only slow to answer (or still starting): wait for it; a
        # second one could not start anyway.
        try:
            found = wait_for_busy_server(root)
        except ServerUnavailable:
            if daemon_holds_lock(root):
                raise
    if found is None:
        if not autostart:
            raise ServerUnavailable(f"no taugridd is running for {root} (start one with `tau server start`)")
        found = start_local_server(root, tau_bin)
    if token is not None:
        found = Endpoint(found.url, token, found.home)
    return found
