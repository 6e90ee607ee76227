"""Progress and metrics: one JSON line per ``report`` in ``TAU_METRICS_FILE``.

The control plane reads the file every 2 seconds (docs/observability.md,
"Progress"): ``step`` and ``total_steps`` drive the progress, rate and ETA
that ``tau status``, ``tau list -o wide`` and ``tau top`` show; every other
numeric field is a metric; ``time`` (Unix seconds) dates the line.

Outside TauGrid (``TAU_METRICS_FILE`` unset) ``report`` writes nothing:
it checks its arguments the same way and returns the line it would have
written, so a script behaves alike in both places.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import time as _time
from typing import Any, Dict, Optional, Union

Number = Union[int, float]


def to_number(key: str, value: Any) -> Number:
    """``value`` as a JSON number, or ``TypeError`` naming ``key``.

    Takes ints and floats, numpy scalars (``numbers.Real``) and one-element
    tensors or arrays (anything with ``item()`` giving a real number);
    refuses booleans, strings and everything else. NaN and infinities are
    refused with ``ValueError``: they are not JSON, and the control plane
    would skip the whole line.
    """
    original = value
    if not isinstance(value, numbers.Real) and hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, RuntimeError):  # several elements
            pass
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"metric {key!r} must be a number, not {type(original).__name__} ({original!r:.80})")
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"metric {key!r} is {number}, which JSON cannot carry")
    return number


def metrics_file() -> Optional[str]:
    """``TAU_METRICS_FILE``; ``None`` outside TauGrid."""
    value = os.environ.get("TAU_METRICS_FILE")
    return value if value else None


def report(step: Optional[Number] = None, total_steps: Optional[Number] = None, **metrics: Any) -> Dict[str, Number]:
    """Appends one line ``{"step": ..., "total_steps": ..., METRICS..., "time": ...}``
    to ``TAU_METRICS_FILE`` and returns it as a dict.

    ``step``/``total_steps`` are left out when ``None``. Every metric must be
    numeric (``TypeError`` naming the key otherwise; nothing is written).
    ``time`` defaults to now; pass ``time=`` to date the line yourself.
    The line is written with one ``write`` in append mode, so ranks that
    report at once never interleave within a line.
    """
    line: Dict[str, Number] = {}
    if step is not None:
        line["step"] = to_number("step", step)
    if total_steps is not None:
        line["total_steps"] = to_number("total_steps", total_steps)
    stamp = metrics.pop("time", None)
    for key, value in metrics.items():
        line[key] = to_number(key, value)
    line["time"] = to_number("time", stamp) if stamp is not None else _time.time()
    path = metrics_file()
    if path is not None:
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    return line
