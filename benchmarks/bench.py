"""Benchmarks: each target of the performance issue, measured against its baseline in one run.

Run:  .venv/bin/python benchmarks/bench.py [--pairs N] [--specs N] [--trees N]

Cold commands are measured in CPU time (user + system of the child), each paired with its
baseline and run alternately in the same loop, so that a noisy machine slows both alike; a row
shows the median of the per-pair ratios with their minimum and maximum. Warm rows build or
validate distinct generated specs in one process. Nothing here is a test: no number is asserted.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
BIN = Path(sys.executable).parent
PYTHON = [sys.executable]
PADDLEGEN = [sys.executable, "-m", "paddlegen.compiler"]
# Seed 003's objects on kube-aws v0.9.9 (8 objects), checked by kubernetes-validate at a
# release it bundles.
STREAM_GOLDEN = "kube-aws-v0.9.9"
KUBERNETES_VALIDATE = [str(BIN / "kubernetes-validate"), "--strict", "-k", "1.35.0"]
# What every paddlegen process imports before doing any work of its own.
IMPORT_FLOOR = "import typer, pydantic.main, _ruamel_yaml"


@dataclass(frozen=True)
class Row:
    what: str
    now: str
    target: str
    met: bool | None  # None: for information


def environment() -> dict[str, str]:
    # Bytecode as an installed package has it: written once, then read.
    return {key: value for key, value in os.environ.items()
            if key != "PYTHONDONTWRITEBYTECODE"}


def cpu_run(command: Sequence[str], cwd: Path | None = None) -> tuple[float, int, bytes]:
    """CPU milliseconds (user + system), peak RSS in KiB, and stdout of one child process (and
    the children it waited for). A command that fails stops the benchmark: its numbers would
    measure the failure."""
    # stderr to a file, not a pipe: read only on failure, and never blocking the child
    with tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                                 env=environment())
        assert child.stdout is not None
        stdout = child.stdout.read()
        child.stdout.close()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            stderr.seek(0)
            sys.exit(f"benchmark stopped: `{shlex.join(command)}` exited with "
                     f"{child.returncode}\n{stderr.read().decode(errors='replace')}")
    return (usage.ru_utime + usage.ru_stime) * 1000, usage.ru_maxrss, stdout


PEAK_RSS: dict[str, int] = {}


def measured(label: str, command: Sequence[str], cwd: Path | None = None) -> float:
    cpu, rss, _ = cpu_run(command, cwd)
    PEAK_RSS[label] = max(PEAK_RSS.get(label, 0), rss)
    return cpu


def paired(pairs: list[tuple[Callable[[], float], Callable[[], float]]]) -> list[float]:
    """Ratios a/b of each pair, the two run alternately first and second."""
    ratios = []
    for index, (subject, baseline) in enumerate(pairs):
        if index % 2:
            b, a = baseline(), subject()
        else:
            a, b = subject(), baseline()
        ratios.append(a / b)
    return ratios


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (f"{statistics.median(values):.{digits}f}{unit} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def distinct_specs(count: int) -> list[bytes]:
    """Valid specs, each different: the golden specs with another name, port and deadline."""
    goldens = sorted(GOLDEN.glob("*/spec.yaml"))
    specs = []
    for index in range(count):
        text = goldens[index % len(goldens)].read_text()
        name = next(line.split(":", 1)[1].strip() for line in text.splitlines()
                    if line.startswith("  name: "))
        text = text.replace(f"  name: {name}\n", f"  name: {name[:40]}-{index}\n", 1)
        text = text.replace("activeDeadlineSeconds: 86400",
                            f"activeDeadlineSeconds: {86400 + index}")
        text = text.replace("  port: 7164\n", f"  port: {7000 + index % 900}\n")
        specs.append(text.encode())
    return specs


def written(directory: Path, specs: list[bytes], name: str = "spec.yaml") -> list[Path]:
    paths = []
    for index, raw in enumerate(specs):
        path = directory / f"s{index:04d}" / name
        path.parent.mkdir(parents=True)
        path.write_bytes(raw)
        paths.append(path)
    return paths


def cold_build(scratch: Path, pairs: int) -> Row:
    golden = (GOLDEN / STREAM_GOLDEN / "spec.yaml").read_text()
    specs = [golden.replace("  name: paddle-cluster-job\n", f"  name: paddle-job-{i}\n")
             .encode() for i in range(pairs)]
    paths = written(scratch / "cold-build", specs)
    streams = []
    for path in paths:
        stream = path.with_name("stream.yaml")
        stream.write_bytes(cpu_run([*PADDLEGEN, "build", str(path), "-o", "-"])[2])
        streams.append(stream)
    ratios = paired([
        (partial(measured, "build -o -", [*PADDLEGEN, "build", str(path), "-o", "-"]),
         partial(measured, "kubernetes-validate", [*KUBERNETES_VALIDATE, str(stream)]))
        for path, stream in zip(paths, streams, strict=True)])
    return Row("cold `build -o -`, CPU, / kubernetes-validate --strict on its output",
               spread(ratios, "x"), "<= 1.0x", statistics.median(ratios) <= 1.0)


def cold_validate(scratch: Path, pairs: int) -> tuple[Row, Row]:
    paths = written(scratch / "cold-validate", distinct_specs(pairs))
    python = partial(measured, "python -c pass", [*PYTHON, "-c", "pass"])
    ratios = paired([(partial(measured, "validate", [*PADDLEGEN, "validate", str(path)]), python)
                     for path in paths])
    floor = paired([(partial(measured, "imports", [*PYTHON, "-c", IMPORT_FLOOR]), python)
                    for _ in range(pairs)])
    return (Row("cold `validate`, CPU, / python -c pass", spread(ratios, "x"), "<= 4x",
                statistics.median(ratios) <= 4),
            Row("  floor: python importing typer, pydantic, ruamel / python -c pass",
                spread(floor, "x"), "", None))


def warm(work: Callable[[bytes, str], Any], specs: list[bytes], rounds: int) -> list[float]:
    """Specs per second of `work` over distinct specs, one process, per round."""
    work(specs[-1], "warm-up.yaml")
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        for index, raw in enumerate(specs):
            work(raw, f"spec{index}.yaml")
        rates.append(len(specs) / (time.perf_counter() - start))
    return rates


def warm_rows(count: int) -> tuple[Row, Row]:
    from paddlegen.compiler.build import build, validate

    specs = distinct_specs(count + 1)
    builds, validates = [], []
    for _ in range(3):  # interleaved, so that a busy moment hits both
        builds += warm(build, specs[:count], 1)
        validates += warm(validate, specs[:count], 1)
    return (Row("warm build, distinct specs, one process", spread(builds, "/s", 0), ">= 150/s",
                statistics.median(builds) >= 150),
            Row("warm validate, distinct specs, one process", spread(validates, "/s", 0),
                ">= 1,000/s", statistics.median(validates) >= 1000))


def check_trees(scratch: Path, count: int, runs: int) -> Row:
    from paddlegen.compiler.build import build
    from paddlegen.compiler.writer import write_tree

    root = scratch / "check"
    specs = distinct_specs(count)
    for path, raw in zip(written(root, specs), specs, strict=True):
        write_tree(path.parent / "out", build(raw, str(path)).artifacts, force=False)
    cores = sorted(os.sched_getaffinity(0))
    one: list[float] = []
    every: list[float] = []
    for _ in range(runs):
        for sample, pin in ((one, cores[:1]), (every, cores)):
            start = time.perf_counter()
            child = subprocess.run(["taskset", "-c", ",".join(map(str, pin)), *PADDLEGEN,
                                    "check"], cwd=root, env=environment(), check=False,
                                   capture_output=True)
            sample.append(time.perf_counter() - start)
            assert child.returncode == 0, child.stderr
    PEAK_RSS["check"] = max(PEAK_RSS.get("check", 0), cpu_run([*PADDLEGEN, "check"], root)[1])
    return Row(f"`check` of {count} spec+out pairs, wall, {len(cores)} cores (1 core)",
               f"{statistics.median(every):.2f} s ({statistics.median(one):.2f} s)",
               "<= 1.5 s, faster with more cores",
               statistics.median(every) <= 1.5 and statistics.median(every) <
               statistics.median(one))


def explain_size(scratch: Path) -> Row:
    golden = (GOLDEN / STREAM_GOLDEN / "spec.yaml").read_text()
    sizes = {}
    for nodes in (10, 100, 1000):
        path = scratch / f"explain-{nodes}.yaml"
        path.write_text(golden.replace("  nodes: 3\n", f"  nodes: {nodes}\n")
                        .replace("  workerCount: 3\n", f"  workerCount: {nodes}\n"))
        _, rss, stdout = cpu_run([*PADDLEGEN, "explain", str(path)])
        PEAK_RSS["explain"] = max(PEAK_RSS.get("explain", 0), rss)
        sizes[nodes] = len(stdout)
    growth = sizes[1000] / sizes[100]
    return Row("`explain` output at 1,000 nodes (x from 100 nodes)",
               f"{sizes[1000] / 1e6:.2f} MB ({growth:.1f}x)", "linear, < 1 MB",
               sizes[1000] < 1e6 and growth < 11)


def other_commands(scratch: Path) -> None:
    spec = GOLDEN / "kube-aws" / "spec.yaml"
    for label, command in (("build -o DIR", [*PADDLEGEN, "build", str(spec), "-o",
                                             str(scratch / "out")]),
                           ("schema", [*PADDLEGEN, "schema"]), ("rules", [*PADDLEGEN, "rules"]),
                           ("init", [*PADDLEGEN, "init"]), ("--help", [*PADDLEGEN, "--help"])):
        measured(label, command)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=15, help="pairs per cold row")
    parser.add_argument("--specs", type=int, default=300, help="distinct specs per warm round")
    parser.add_argument("--trees", type=int, default=200, help="spec+out pairs for check")
    args = parser.parse_args()
    if shutil.which("taskset") is None:
        sys.exit("benchmarks need taskset (util-linux) to pin `check` to one core")
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        cpu_run([*PADDLEGEN, "validate", str(GOLDEN / "local" / "spec.yaml")])  # bytecode
        rows = [cold_build(scratch, args.pairs), *cold_validate(scratch, args.pairs),
                *warm_rows(args.specs), check_trees(scratch, args.trees, 3),
                explain_size(scratch)]
        other_commands(scratch)
    label, peak = max(PEAK_RSS.items(), key=lambda item: item[1])
    rows.append(Row("peak RSS of any command", f"{peak / 1024:.0f} MB ({label})", "<= 60 MB",
                    peak / 1024 <= 60))
    width = max(len(row.what) for row in rows)
    print(f"{'what':<{width}}  {'now: median (min-max)':<28}  {'target':<34}  met")
    for row in rows:
        met = "" if row.met is None else ("yes" if row.met else "NO")
        print(f"{row.what:<{width}}  {row.now:<28}  {row.target:<34}  {met}".rstrip())


if __name__ == "__main__":
    main()
