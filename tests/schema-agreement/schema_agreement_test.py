#!/usr/bin/env python3
"""`tau schema` and `tau validate` agree on every spec of the test corpus.

Each spec in tests/specs/valid, tests/specs/invalid and examples/ is checked
twice: by `tau validate`, and by the JSON Schema `tau schema` prints (with
the `jsonschema` package) after reading the YAML as YAML 1.2's core schema
reads it, as the spec reader does. The test lists every spec on which they
disagree, and fails unless each is one of the rules JSON Schema cannot
state (rules between fields, and the few that are about YAML rather than
about values), listed below with the reason.

Usage: schema_agreement_test.py TAU_BINARY SOURCE_DIR. Exits 77 (skipped)
when PyYAML or jsonschema is missing, saying which.
"""

import glob
import json
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIPPED: PyYAML is not installed for", sys.executable, "(apt install python3-yaml)")
    sys.exit(77)
try:
    import jsonschema
except ImportError:
    print("SKIPPED: jsonschema is not installed for", sys.executable, "(apt install python3-jsonschema)")
    sys.exit(77)

# Specs on which the two may disagree, and why JSON Schema cannot say it.
MAY_DISAGREE = {
    "38-retry-backoff-order.yaml": "between fields: retry.max_backoff >= retry.backoff",
    "40-torchrun-needs-python-file.yaml": "between fields: launcher torchrun needs a .py entrypoint",
    "41-rayjob-with-torchrun.yaml": "between fields: a rayjob cannot use launcher torchrun",
    "42-workers-need-a-gang-launcher.yaml": "between fields: workers > 1 needs a gang launcher",
    "43-processes-per-worker-without-torchrun.yaml": "between fields: processes_per_worker needs torchrun",
    "55-python-launcher-with-command.yaml": "between fields: launcher python needs a .py entrypoint",
    "56-gang-name-starts-with-digit.yaml": "between fields: a gang's name starts with a letter",
    "44-rayjob-name-too-long.yaml": "between fields: a rayjob's name is at most 47 characters",
    "67-gang-hostnames-too-long.yaml": "between fields: NAME-INDEX hostnames of a gang fit in 63 characters",
    "65-float-tag-on-integer.yaml": "about YAML: a !!float tag is gone once the value is JSON (1.0 is an integer there)",
}

MAX_NODES = 20000  # the spec reader's limit; beyond it a document is refused


class CoreLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader with YAML 1.2 core-schema resolution (no `yes`,
    no octal `017`, no timestamps) and duplicate keys refused."""


CoreLoader.yaml_implicit_resolvers = {}
for tag, pattern, first in [
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", list("~nN") + [""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+.0123456789")),
]:
    CoreLoader.add_implicit_resolver(tag, re.compile(pattern), first)


def construct_int(loader, node):
    text = loader.construct_scalar(node)
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body.startswith("0o"):
        return sign * int(body[2:], 8)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    return sign * int(body, 10)


def construct_float(loader, node):
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


def construct_mapping(loader, node):
    loader.flatten_mapping(node)
    out = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


CoreLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
CoreLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
CoreLoader.add_constructor("tag:yaml.org,2002:map", construct_mapping)


def count_nodes(node, budget):
    """Nodes of a composed document with aliases expanded, up to `budget`."""
    stack, seen = [node], 0
    while stack and seen <= budget:
        n = stack.pop()
        seen += 1
        if isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
        elif isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                stack.extend((k, v))
    return seen


def schema_verdict(validator, path):
    """(accepted, why) by the JSON Schema."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        nodes = list(yaml.compose_all(text, Loader=CoreLoader))
        if len(nodes) != 1:
            return False, f"{len(nodes)} documents"
        if count_nodes(nodes[0], MAX_NODES) > MAX_NODES:
            return False, "more than %d nodes" % MAX_NODES
        data = yaml.load(text, Loader=CoreLoader)
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError, TypeError, ValueError) as e:
        return False, "not YAML: " + str(e).splitlines()[0]
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        return False, "/".join(map(str, e.absolute_path)) + ": " + e.message[:120]
    return True, ""


def main():
    tau, src = sys.argv[1], sys.argv[2]
    schema = json.loads(subprocess.run([tau, "schema"], capture_output=True, text=True, check=True).stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    specs = sorted(glob.glob(os.path.join(src, "tests/specs/valid/*.yaml")))
    specs += sorted(glob.glob(os.path.join(src, "tests/specs/invalid/*.yaml")))
    specs += sorted(glob.glob(os.path.join(src, "examples/*.yaml")))
    unexplained, explained, agreed = [], [], 0
    for spec in specs:
        name = os.path.basename(spec)
        r = subprocess.run([tau, "validate", "-q", spec], capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
        validate_ok = r.returncode == 0
        schema_ok, why = schema_verdict(validator, spec)
        if validate_ok == schema_ok:
            agreed += 1
            continue
        rel = os.path.relpath(spec, src)
        first_error = next((l for l in r.stderr.splitlines() if ": error: " in l), r.stderr.strip()[:160])
        line = (f"{rel}: validate {'accepts' if validate_ok else 'refuses'} ({first_error}), "
                f"the schema {'accepts' if schema_ok else 'refuses'}{' (' + why + ')' if why else ''}")
        (explained if name in MAY_DISAGREE else unexplained).append((line, MAY_DISAGREE.get(name)))
    print(f"{agreed} of {len(specs)} specs: tau validate and tau schema agree")
    for line, reason in explained:
        print(f"  disagree, as expected ({reason}): {line}")
    for line, _ in unexplained:
        print(f"  DISAGREE: {line}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
