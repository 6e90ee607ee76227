#!/usr/bin/env python3
"""Reads `tau render` output back with a second YAML implementation.

The emitter quotes every string a YAML 1.1 reader would take for another
type (booleans such as `yes`, octal `0777`, sexagesimal `1:30`, timestamps
such as `2024-01-01`). PyYAML resolves YAML 1.1, as go-yaml and kubectl's
older readers do: the objects it reads from `tau render` must equal the
JSON rendering of the same spec, string for string.

Usage: readback_test.py TAU_BINARY WORK_DIR. Exits 77 (skipped) without
PyYAML, saying so.
"""

import json
import os
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIPPED: PyYAML is not installed for", sys.executable, "(apt install python3-yaml)")
    sys.exit(77)

# Strings a YAML 1.1 or 1.2 reader resolves to something else when plain.
TRICKY = [
    "2024-01-01", "2024-1-1 10:00:00", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 Z",
    "yes", "No", "on", "OFF", "y", "n", "~", "null", "true", "False",
    "0777", "0o17", "0x1F", "0b101", "1_000", "1:30", "1:30:00.5", "190:20:30",
    ".5", "1e3", "6.8523015e+5", "-.inf", ".NaN", "+12", "-0",
    "<<", "=", "- x", "a: b", "#c", "x #y", "@x", "%x", "!x", "&x", "*x", "'q'", '"q"',
    "+.Inf", "-.Inf", "+.INF", "-.INF", "+.inf",
]
# Characters YAML 1.1 readers take for line breaks inside any scalar, and
# the byte-order mark (args and env only: tags are printable characters).
BREAKS = ["x\u2028y", "x\u2029y", "x\u0085y", "a\ufeffb", "two\u2028lines\n"]


def main():
    tau, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    env_lines = "".join(f"    V{i}: {json.dumps(s)}\n" for i, s in enumerate(TRICKY + BREAKS))
    tag_lines = "".join(f"    t{i}: {json.dumps(s)}\n" for i, s in enumerate(TRICKY))
    spec = (
        "schema_version: 1\n"
        "name: 2024-01-01\n"  # a valid job name that YAML 1.1 reads as a date
        "run:\n"
        "  entrypoint: 'echo'\n"
        "  launcher: command\n"
        f"  args: {json.dumps(TRICKY + BREAKS)}\n"
        f"runtime:\n  env:\n{env_lines}"
        f"experiment:\n  project: '1:30'\n  tags:\n{tag_lines}"
    )
    path = os.path.join(work, "tricky.yaml")
    with open(path, "w") as f:
        f.write(spec)
    failures = []
    for extra in ([], ["--object-name", "0777"]):
        as_yaml = subprocess.run([tau, "render", *extra, path], capture_output=True, text=True)
        as_json = subprocess.run([tau, "render", "-o", "json", *extra, path], capture_output=True, text=True)
        if as_yaml.returncode != 0 or as_json.returncode != 0:
            print("tau render failed:", as_yaml.stderr, as_json.stderr)
            return 1
        expected = json.loads(as_json.stdout)["items"]
        got = list(yaml.safe_load_all(as_yaml.stdout))
        if got != expected:
            failures.append(diff(expected, got, "objects"))
    if failures:
        print("PyYAML reads `tau render` output differently from its JSON:")
        for f in failures:
            print(" ", f)
        return 1
    print("PyYAML reads back", len(TRICKY), "tricky strings as written")
    return 0


def diff(a, b, path):
    """The first place where a and b differ, as text."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                return f"{path}.{k}: missing"
            if a[k] != b[k]:
                return diff(a[k], b[k], f"{path}.{k}")
        return f"{path}: keys differ"
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return diff(x, y, f"{path}[{i}]")
    return f"{path}: {a!r} became {b!r} ({type(b).__name__})"


if __name__ == "__main__":
    sys.exit(main())
