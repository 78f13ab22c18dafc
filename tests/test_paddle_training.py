"""The real PaddlePaddle 3 trains across simulated pods, each wired exactly as paddlegen's built
output wires it: the Indexed Job and the PaddleJob, at 2 and 3 pods; a miswired variant fails.

Each pod is its own process tree with its own loopback address, hostname and hosts file
(tests/podsim.py plays the Job controller or the training operator, the kubelet and DNS), and
runs the command the built manifest says, with the shipped example script (examples/).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from podsim import PodResult, claim_dir, processes_in, run_pods, why_pods_cannot_run
from ruamel.yaml import YAML

from paddlegen.compiler.build import build

from conftest import GOLDEN, ROOT

pytestmark = [pytest.mark.paddle]
SPEC = GOLDEN / "eks-paddle-kubeflow" / "spec.yaml"  # CPU: what this machine can run
TIMEOUT = 240.0  # seconds for a whole run (3 pods take 8-12 s on an idle 2-core machine)
MISWIRED_TIMEOUT = 60.0


def requirements() -> str | None:
    try:
        import paddle  # noqa: F401
    except ImportError:
        return "paddlepaddle is not installed (pip install -e '.[test,paddle]')"
    return why_pods_cannot_run()


@pytest.fixture(autouse=True, scope="module")
def _requirements() -> None:
    """Asked when a test of this module runs, not as it is collected: importing paddle takes
    seconds, which the other parts (that deselect these tests) need not pay."""
    reason = requirements()
    if reason:
        pytest.skip(reason)


def built_objects(launcher: str, nodes: int) -> list[dict[str, Any]]:
    text = SPEC.read_text().replace("launcher: kubeflow", f"launcher: {launcher}")
    text = text.replace("nodes: 3", f"nodes: {nodes}")
    result = build(text.encode(), "spec.yaml")
    return [YAML(typ="safe").load(a.text) for a in result.artifacts if a.path.startswith("k8s/")]


def train(objects: list[dict[str, Any]], workdir: Path, timeout: float) -> list[PodResult]:
    return run_pods(objects, image_fs={"/workspace": ROOT / "examples"},
                    python=Path(sys.executable), timeout=timeout, workdir=workdir)


def summaries(workdir: Path) -> list[dict[str, Any]]:
    output = claim_dir(workdir, "efsvol") / "linear" / "output"
    return [json.loads(path.read_text()) for path in sorted(output.glob("rank-*.json"))]


@pytest.mark.parametrize("nodes", [2, 3])
@pytest.mark.parametrize("launcher", ["indexed", "kubeflow"])
def test_the_built_pods_train_together(tmp_path: Path, launcher: str, nodes: int) -> None:
    results = train(built_objects(launcher, nodes), tmp_path, TIMEOUT)
    logs = "\n".join(f"--- {r.name} ({r.exit_code})\n{r.log[-3000:]}" for r in results)
    assert [r.exit_code for r in results] == [0] * nodes, logs
    ranks = summaries(tmp_path)
    assert sorted(r["rank"] for r in ranks) == list(range(nodes)), logs
    assert all(r["world_size"] == nodes for r in ranks)
    assert all(r["last_loss"] < r["first_loss"] for r in ranks)
    assert len({r["first_loss"] for r in ranks}) == nodes  # each rank trains on its own data
    assert len({r["params_sha256"] for r in ranks}) == 1  # the gradients were all-reduced
    # every launcher's logs went to its own directory on the shared volume
    logs_dir = claim_dir(tmp_path, "efsvol") / "linear" / "logs"
    assert len([d for d in logs_dir.iterdir() if (d / "workerlog.0").exists()]) == nodes
    assert not processes_in([r.pid_namespace for r in results])


def miswired(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trap: every pod's own address is its pod IP, while the master is index 0's stable
    name, so no launcher sees itself in the master and none starts the rendezvous."""
    objects = copy.deepcopy(objects)
    job = next(o for o in objects if o["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "POD_IP"] + [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    return objects


def test_a_miswired_job_fails_within_its_bound(tmp_path: Path) -> None:
    results = train(miswired(built_objects("indexed", 2)), tmp_path, MISWIRED_TIMEOUT)
    assert not any(r.exit_code == 0 for r in results)  # killed at the bound, or failed
    assert all("master not ready" in r.log for r in results)
    assert summaries(tmp_path) == []
    assert not processes_in([r.pid_namespace for r in results])
