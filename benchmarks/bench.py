"""Benchmarks: start-up cost of the commands pre-commit and CI run, and bulk throughput.

Run:  .venv/bin/python benchmarks/bench.py [--runs N] [--bulk N]

The baseline is DESIGN.md's target: a Python process that merely validates the same manifests
against the same strict Kubernetes schemas (jsonschema + referencing, nothing else).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "golden" / "kube-aws" / "spec.yaml"

BASELINE = """
import importlib.util, json, pathlib, sys
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from ruamel.yaml import YAML
package = importlib.util.find_spec("kubernetes_validate").submodule_search_locations[0]
root = pathlib.Path(package) / "kubernetes-json-schema" / "v1.35.0-local-strict"
definitions = json.loads((root / "_definitions.json").read_bytes())
registry = Resource.from_contents(definitions) @ Registry()
group = {"v1": "", "batch/v1": "-batch", "rbac.authorization.k8s.io/v1": "-rbac"}
for doc in YAML(typ="safe", pure=True).load_all(open(sys.argv[1])):
    name = f"{doc['kind'].lower()}{group[doc['apiVersion']]}-v1.json"
    schema = json.loads((root / name).read_bytes())
    assert not list(Draft202012Validator(schema, registry=registry).iter_errors(doc))
"""


def timed(command: list[str], runs: int) -> float:
    """Median wall time of a command, in milliseconds."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--bulk", type=int, default=1000)
    args = parser.parse_args()
    python = sys.executable
    paddlegen = [python, "-m", "paddlegen.compiler"]
    with tempfile.TemporaryDirectory() as scratch:
        stream = Path(scratch) / "stream.yaml"
        stream.write_text(subprocess.run([*paddlegen, "build", str(SPEC), "-o", "-"],
                                         check=True, capture_output=True, text=True).stdout)
        rows = [
            ("python -c pass", timed([python, "-c", "pass"], args.runs)),
            ("baseline: validate the 7 manifests", timed([python, "-c", BASELINE, str(stream)],
                                                         args.runs)),
            ("paddlegen --help", timed([*paddlegen, "--help"], args.runs)),
            ("paddlegen validate spec", timed([*paddlegen, "validate", str(SPEC)], args.runs)),
            ("paddlegen build spec -o -", timed([*paddlegen, "build", str(SPEC), "-o", "-"],
                                                args.runs)),
            ("paddlegen build spec -o DIR", timed([*paddlegen, "build", str(SPEC), "-o",
                                                   str(Path(scratch) / "out")], args.runs)),
        ]
    for label, ms in rows:
        print(f"{label:<40}{ms:8.0f} ms (median of {args.runs})")

    from paddlegen.compiler.build import build
    from paddlegen.compiler.spec import load_spec

    raw = SPEC.read_bytes()
    build(raw, "spec.yaml")  # warm: validators built once per process
    for label, work in (("validate", lambda: load_spec(raw, "spec.yaml")),
                        ("build", lambda: build(raw, "spec.yaml"))):
        start = time.perf_counter()
        for _ in range(args.bulk):
            work()
        per_spec = (time.perf_counter() - start) * 1000 / args.bulk
        print(f"bulk {label} in one process{'':<17}{per_spec:8.2f} ms per spec "
              f"({args.bulk} specs)")


if __name__ == "__main__":
    main()
