"""Pure pieces: durations, tau's diagnostics and failures, --set arguments,
log frames."""

from __future__ import annotations

import pytest

import taugrid
from taugrid.durations import parse_duration
from taugrid.logs import LineSplitter, LogFrameReader
from taugrid.submit import override_args
from taugrid.tau_binary import failure_from_stderr, parse_diagnostics


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("0", 0), ("250ms", 0.25), ("1m30s", 90), ("1.5h", 5400),
                                          ("2d", 172800), ("+10m", 600)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "-5s", "5x", "s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_diagnostics_are_parsed_with_positions() -> None:
    stderr = (
        'bad.yaml:2:7: error: name: "Bad_Name" has an uppercase letter\n'
        "<stdin>:1:81: warning: something\n"
        '--set compute.gpu=2: error: unknown field "gpu" in compute\n'
        "tau: warning: not a diagnostic\n"
    )
    a, b, c = parse_diagnostics(stderr)
    assert (a.file, a.line, a.column, a.severity) == ("bad.yaml", 2, 7, "error")
    assert str(a) == 'bad.yaml:2:7: error: name: "Bad_Name" has an uppercase letter'
    assert (b.file, b.line, b.column, b.severity) == ("<stdin>", 1, 81, "warning")
    assert c.where == "--set compute.gpu=2" and c.file is None and c.line is None


def test_tau_failures_are_typed_by_their_message() -> None:
    e = failure_from_stderr("tau: missing or wrong token: send Authorization (trace 0123abcd)\n")
    assert isinstance(e, taugrid.Unauthorized) and e.status == 401 and e.trace_id == "0123abcd"
    e = failure_from_stderr("tau: cannot reach taugridd at http://127.0.0.1:1: refused\n")
    assert isinstance(e, taugrid.ServerUnavailable) and e.trace_id is None
    e = failure_from_stderr('tau: no job with id or name "x" (trace 99)\n')
    assert isinstance(e, taugrid.NotFound)
    e = failure_from_stderr("tau: the job can never run on this machine (trace 42)\n", default=taugrid.SubmitRejected)
    assert isinstance(e, taugrid.SubmitRejected) and e.message == "the job can never run on this machine"
    assert str(e) == "the job can never run on this machine (trace 42)"


def test_set_overrides() -> None:
    assert override_args({"compute.gpus": 2, "run.args": ["--lr", "0.1"], "name": "x", "a.b": True}) == [
        "--set", "compute.gpus=2", "--set", 'run.args=["--lr", "0.1"]', "--set", "name=x", "--set", "a.b=true"]
    assert override_args(["name=y"]) == ["--set", "name=y"]
    assert override_args(None) == []
    with pytest.raises(TypeError):
        override_args("name=y")


def test_log_frames_split_anywhere_give_the_same_text_and_positions() -> None:
    stream = b"6 1:6\nhello\n0 1:6\n10 1:16\nworld\npart"
    for cut in range(len(stream) + 1):
        reader, text = LogFrameReader(), b""
        for piece in (stream[:cut], stream[cut:]):
            text += b"".join(reader.feed(piece))
        assert text == b"hello\nworld\npart"
        assert reader.position == "1:16"
    reader = LogFrameReader()
    reader.feed(b"6 1:6\nhel")  # a frame not yet whole does not move the position
    assert reader.position == ""
    with pytest.raises(taugrid.TauGridError):
        LogFrameReader().feed(b"nonsense here\n")


def test_line_splitter_keeps_the_unended_line() -> None:
    s = LineSplitter()
    assert s.feed(b"a\nb") == ["a"]
    assert s.feed("é\nc".encode()) == ["bé"]
    assert s.rest() == "c" and s.rest() is None
