"""Durations as TauGrid writes them (``30s``, ``1m30s``, ``1.5h``, ``250ms``,
``0``), for the variables the CLI reads (``TAU_CONNECT_PATIENCE``,
``TAU_RECONNECT_TIMEOUT``)."""

from __future__ import annotations

import os
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ``ValueError`` when it is not a duration."""
    s = text.strip()
    if s == "0":
        return 0.0
    if s.startswith("+"):
        s = s[1:]
    if not s:
        raise ValueError(f"{text!r} is not a duration (like 30s, 1m30s, 250ms)")
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise ValueError(f"{text!r} is not a duration (like 30s, 1m30s, 250ms)")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total


def duration_from_env(name: str, default_seconds: float) -> float:
    """The duration in variable ``name``; the default when it is unset,
    empty or not a duration (as tau does)."""
    value = os.environ.get(name)
    if not value:
        return default_seconds
    try:
        return parse_duration(value)
    except ValueError:
        return default_seconds
