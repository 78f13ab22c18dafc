"""Benchmark of the PaddlePaddle 3 wiring: real training across simulated pods.

Run (as root, with the paddle extra):  .venv/bin/python benchmarks/paddle_bench.py [--pairs N]

Two rows, each over N runs of the golden CPU spec at 2 pods (indexed launcher), alternated with
its baseline so that a noisy machine slows both alike:
- from all pods started to the first training step (the earliest rank's, as the example script
  records it), in seconds;
- the wiring's overhead: the wall time of the built pods (namespaces, the manifests' env and
  command, the launcher finding its peers by their stable names) against the same
  `python -m paddle.distributed.launch` run by hand, two processes on this machine's own
  addresses with --host, --rank and --master given directly. Nothing here is a test.
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

from podsim import run_pods  # noqa: E402

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
    pairs = parser.parse_args().pairs
    objects = built_objects()
    pods, hand = [], []
    for _ in range(pairs):
        pods.append(pods_run(objects))
        hand.append(by_hand())
    ratios = [p[0] / h[0] for p, h in zip(pods, hand, strict=True)]
    rows = [
        ("all pods started -> first training step, 2 pods",
         f"{statistics.median(p[1] for p in pods):.1f} s "
         f"(by hand {statistics.median(h[1] for h in hand):.1f} s)"),
        ("wall time, built pods / the launcher by hand",
         f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); "
         f"{statistics.median(p[0] for p in pods):.1f} s against "
         f"{statistics.median(h[0] for h in hand):.1f} s"),
    ]
    width = max(len(what) for what, _ in rows) + 2
    print(f"{'what':<{width}}median over {pairs} runs each")
    for what, now in rows:
        print(f"{what:<{width}}{now}")


if __name__ == "__main__":
    main()
