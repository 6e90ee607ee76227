"""Finding the server as tau does, without a daemon."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

import taugrid
from taugrid import discovery


@pytest.fixture(autouse=True)
def no_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TAU_SERVER", "TAU_TOKEN", "TAU_HOME", "XDG_DATA_HOME", "TAU_BIN"):
        monkeypatch.delenv(name, raising=False)


def test_default_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert discovery.default_home() == tmp_path / ".local/share/taugrid"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert discovery.default_home() == tmp_path / "xdg" / "taugrid"
    monkeypatch.setenv("TAU_HOME", str(tmp_path / "th"))
    assert discovery.default_home() == tmp_path / "th"


def test_tau_server_and_token_win_and_start_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_SERVER", "http://example.invalid:1234/")
    monkeypatch.setenv("TAU_TOKEN", "s3cret")
    ep = discovery.connect()
    assert (ep.url, ep.token, ep.home) == ("http://example.invalid:1234", "s3cret", None)
    assert discovery.connect(token="other").token == "other"
    assert discovery.connect(server="http://other:1").url == "http://other:1"


def test_no_daemon_and_no_autostart_says_how_to_start_one(tmp_path: Path) -> None:
    with pytest.raises(taugrid.ServerUnavailable, match="tau server start"):
        discovery.connect(home=tmp_path, autostart=False)


def test_no_tau_binary_to_autostart_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(taugrid.ServerUnavailable, match="TAU_BIN"):
        discovery.connect(home=tmp_path)


def test_a_daemon_holding_the_lock_is_waited_for_then_called_busy(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "server.json").write_text(json.dumps({"pid": 1, "url": "http://127.0.0.1:1"}))
    fd = os.open(tmp_path / "taugridd.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        assert not discovery.daemon_holds_lock(tmp_path)  # our own lock is not taken yet
        # Another open file description holding it exclusively plays the daemon.
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert discovery.daemon_holds_lock(tmp_path)
        monkeypatch.setenv("TAU_CONNECT_PATIENCE", "300ms")
        with pytest.raises(taugrid.ServerUnavailable, match="busy or stuck"):
            discovery.connect(home=tmp_path)  # never starts a second one
    finally:
        os.close(fd)
    assert not discovery.daemon_holds_lock(tmp_path)


def test_an_unreachable_server_is_unavailable() -> None:
    client = taugrid.Client(server="http://127.0.0.1:1", token="x")
    with pytest.raises(taugrid.ServerUnavailable, match="cannot reach taugridd"):
        client.jobs()
