"""Benchmark of the PaddlePaddle 3 wiring: real training across simulated pods (tests/podsim.py).

Run (as root, with the paddle extra):

    .venv/bin/python benchmarks/paddle_bench.py [--pairs N] [--rows all|wiring|restart]

Each row is over N runs of the golden CPU spec at 2 pods, alternated with its baseline so that
a noisy machine slows both alike; medians, with the range:
- (wiring, the indexed launcher) from all pods started to the first training step (the
  earliest rank's, as the example script records it), in seconds;
- (wiring) the wiring's overhead: the wall time of the built pods (namespaces, the manifests'
  env and command, the launcher finding its peers by their stable names) against the same
  `python -m paddle.distributed.launch` run by hand, two processes on this machine's own
  addresses with --host, --rank and --master given directly;
- (restart, the jobset launcher with `restarts: 1`) from the SIGKILL of pod 1's container,
  once its trainer has printed step 7, to the first step of the next attempt (the Job
  controller failing the Job, the other pod stopped, JobSet deleting the Job and making it
  anew, the launchers meeting again, the script resuming from its checkpoint), against a cold
  start of the same JobSet to its first step, paired run by run. Steps are seen as the
  trainers write them (inotify on their logs); a run is stopped once measured.
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from podsim import RESTARTS_KEY, Simulation, claim_dir, run_pods  # noqa: E402

from paddlegen.compiler.build import build  # noqa: E402

SPEC = ROOT / "golden" / "eks-paddle-kubeflow" / "spec.yaml"
EXAMPLE = ROOT / "examples" / "train_linear.py"
NODES = 2
TIMEOUT = 600.0


def built_objects() -> list[dict[str, Any]]:
    from ruamel.yaml import YAML

    text = SPEC.read_text().replace("launcher: kubeflow", "launcher: indexed")
    text = text.replace("nodes: 3", f"nodes: {NODES}")
    return [YAML(typ="safe").load(a.text)
            for a in build(text.encode(), "spec.yaml").artifacts if a.path.startswith("k8s/")]


def jobset_objects() -> list[dict[str, Any]]:
    """The same spec with the jobset launcher, one restart allowed, the script pausing a
    quarter second after each step (so that a kill lands midway)."""
    from ruamel.yaml import YAML

    spec = YAML(typ="safe").load(SPEC.read_text())
    spec["training"].update(launcher="jobset", nodes=NODES, restarts=1, gracePeriodSeconds=40)
    spec["training"]["args"] = [*spec["training"]["args"], "--step-seconds", "0.25"]
    return [YAML(typ="safe").load(a.text)
            for a in build(json.dumps(spec).encode(), "spec.yaml").artifacts
            if a.path.startswith("k8s/")]


def is_step(at_least: int) -> Any:
    def match(line: str) -> bool:
        if not line.startswith('{"event"'):
            return False
        event = json.loads(line)
        return bool(event["event"] == "step" and event["step"] >= at_least)
    return match


def step_seen(run: Simulation, work: Path, *, index: int, attempt: int, at_least: int) -> float:
    """When (time.monotonic) the trainer of that pod wrote a step line past `at_least`."""
    if not run.wait_until(lambda: run.pod(index=index, attempt=attempt) is not None, TIMEOUT):
        raise SystemExit(f"no pod {index} of attempt {attempt}: {run.events()}")
    pod = run.pod(index=index, attempt=attempt)
    assert pod is not None
    log = claim_dir(work, "efsvol") / "linear" / "logs" / pod.name / "workerlog.0"
    if run.wait_for_line(log, is_step(at_least), TIMEOUT) is None:
        raise SystemExit(f"{pod.name} never reached step {at_least}:\n{pod.log[-2000:]}")
    return time.monotonic()


def cold_start(objects: list[dict[str, Any]]) -> float:
    """Seconds from the JobSet's run starting to pod 0's first step."""
    with tempfile.TemporaryDirectory() as work, \
            Simulation(objects, image_fs={"/workspace": EXAMPLE.parent},
                       python=Path(sys.executable), timeout=TIMEOUT,
                       workdir=Path(work)) as run:
        return step_seen(run, Path(work), index=0, attempt=0, at_least=1) - run.control.began


def kill_to_next_step(objects: list[dict[str, Any]]) -> float:
    """Seconds from the SIGKILL of pod 1 (past step 7) to pod 0's first step of attempt 1."""
    with tempfile.TemporaryDirectory() as work, \
            Simulation(objects, image_fs={"/workspace": EXAMPLE.parent},
                       python=Path(sys.executable), timeout=TIMEOUT,
                       workdir=Path(work)) as run:
        step_seen(run, Path(work), index=1, attempt=0, at_least=7)
        victim = run.pod(index=1, attempt=0)
        assert victim is not None and victim.labels[RESTARTS_KEY] == "0"
        killed = time.monotonic()
        run.kill_pod(victim.name)
        return step_seen(run, Path(work), index=0, attempt=1, at_least=1) - killed


def spread(values: list[float], unit: str = " s") -> str:
    return (f"{statistics.median(values):.1f}{unit} "
            f"({min(values):.1f}-{max(values):.1f})")


def first_step(summaries: list[Path], started: float) -> float:
    first: float = min(json.loads(p.read_text())["first_step_unix"] for p in summaries)
    return first - started


def pods_run(objects: list[dict[str, Any]]) -> tuple[float, float]:
    """Wall seconds of the built pods, and seconds from their start to the first step."""
    with tempfile.TemporaryDirectory() as work:
        started = time.time()
        results = run_pods(objects, image_fs={"/workspace": EXAMPLE.parent},
                           python=Path(sys.executable), timeout=TIMEOUT, workdir=Path(work))
        wall = time.time() - started
        if any(r.exit_code != 0 for r in results):
            raise SystemExit("the pods failed:\n" + "\n".join(r.log[-2000:] for r in results))
        output = Path(work) / "claims" / "efsvol" / "linear" / "output"
        return wall, first_step(sorted(output.glob("rank-*.json")), started)


def by_hand() -> tuple[float, float]:
    """The same launcher, wired by hand: two processes on 127.0.1.1 and 127.0.2.1."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "output"
        hosts = [f"127.0.{rank + 1}.1" for rank in range(NODES)]
        started = time.time()
        launchers = [subprocess.Popen(
            [sys.executable, "-m", "paddle.distributed.launch", "--master",
             f"{hosts[0]}:36599", "--host", hosts[rank], "--rank", str(rank),
             "--nnodes", str(NODES), "--nproc_per_node", "1", "--job_id", "bench",
             "--log_dir", f"{work}/log-{rank}", str(EXAMPLE), "--out", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
            for rank in range(NODES)]
        codes = [launcher.wait(timeout=TIMEOUT) for launcher in launchers]
        wall = time.time() - started
        if any(codes):
            raise SystemExit(f"the launchers run by hand failed: {codes}")
        return wall, first_step(sorted(out.glob("rank-*.json")), started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rows", choices=("all", "wiring", "restart"), default="all")
    args = parser.parse_args()
    pairs = args.pairs
    rows = []
    if args.rows in ("all", "wiring"):
        objects = built_objects()
        pods, hand = [], []
        for _ in range(pairs):
            pods.append(pods_run(objects))
            hand.append(by_hand())
        ratios = [p[0] / h[0] for p, h in zip(pods, hand, strict=True)]
        rows += [
            ("all pods started -> first training step, 2 pods",
             f"{statistics.median(p[1] for p in pods):.1f} s "
             f"(by hand {statistics.median(h[1] for h in hand):.1f} s)"),
            ("wall time, built pods / the launcher by hand",
             f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); "
             f"{statistics.median(p[0] for p in pods):.1f} s against "
             f"{statistics.median(h[0] for h in hand):.1f} s"),
        ]
    if args.rows in ("all", "restart"):
        gang = jobset_objects()
        cold, restart = [], []
        for _ in range(pairs):
            cold.append(cold_start(gang))
            restart.append(kill_to_next_step(gang))
        ratios = [r / c for r, c in zip(restart, cold, strict=True)]
        rows += [
            ("jobset: kill -> first step of the next attempt", spread(restart)),
            ("jobset: cold start -> first step", spread(cold)),
            ("jobset: restart / cold start, paired", spread(ratios, "x")),
        ]
    width = max(len(what) for what, _ in rows) + 2
    print(f"{'what':<{width}}median over {pairs} runs each")
    for what, now in rows:
        print(f"{what:<{width}}{now}")


if __name__ == "__main__":
    main()
