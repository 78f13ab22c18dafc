"""The real PaddlePaddle 3 trains across simulated pods, each wired exactly as paddlegen's built
output wires it: the Indexed Job and the PaddleJob, at 2 and 3 pods; a miswired variant fails.
And while the cluster DNS does not have the pods yet (their EndpointSlice lags, seconds in a
real cluster): the built eks and kubernetes wirings still train, where the short stable names
the eks wiring used before fail the master pod, and with it the Job.

Each pod is its own process tree with its own loopback address, hostname and hosts file
(tests/podsim.py plays the Job controller or the training operator, the kubelet and the cluster
DNS), and runs the command the built manifest says, with the shipped example script (examples/).
The gang launchers (jobset, trainjob), their restarts and disruptions: tests/test_restarts.py.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from podsim import (
    PodResult,
    claim_dir,
    cluster_dns_zone,
    leftover_processes,
    run_pods,
    simulate_controllers,
    why_paddle_cannot_run,
)
from ruamel.yaml import YAML

from paddlegen.compiler.build import build

from conftest import GOLDEN, ROOT

pytestmark = [pytest.mark.paddle]
SPEC = GOLDEN / "eks-paddle-kubeflow" / "spec.yaml"  # CPU: what this machine can run
KUBERNETES_SPEC = GOLDEN / "kubernetes" / "spec.yaml"  # CPU too, an Indexed Job
TIMEOUT = 240.0  # seconds for a whole run (3 pods take 8-12 s on an idle 2-core machine)
MISWIRED_TIMEOUT = 60.0
DNS_DELAY = 60.0  # seconds before the cluster DNS has the pods' records


@pytest.fixture(autouse=True, scope="module")
def _requirements() -> None:
    reason = why_paddle_cannot_run()
    if reason:
        pytest.skip(reason)


def built_objects(launcher: str, nodes: int, spec: Path = SPEC) -> list[dict[str, Any]]:
    text = re.sub(r"(?m)^(\s+)launcher: \w+$", rf"\g<1>launcher: {launcher}", spec.read_text())
    text = re.sub(r"(?m)^(\s+)nodes: \d+$", rf"\g<1>nodes: {nodes}", text)
    result = build(text.encode(), "spec.yaml")
    return [YAML(typ="safe").load(a.text) for a in result.artifacts if a.path.startswith("k8s/")]


def train(objects: list[dict[str, Any]], workdir: Path, timeout: float,
          dns_delay: float = 0.0) -> list[PodResult]:
    return run_pods(objects, image_fs={"/workspace": ROOT / "examples"},
                    python=Path(sys.executable), timeout=timeout, workdir=workdir,
                    dns_delay=dns_delay)


def pod_template(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod spec of the Job, or of the PaddleJob's workers."""
    workload = next(o for o in objects if o["kind"] in ("Job", "PaddleJob"))
    if workload["kind"] == "Job":
        return dict(workload["spec"]["template"]["spec"])
    return dict(workload["spec"]["paddleReplicaSpecs"]["Worker"]["template"]["spec"])


def shared_claim(objects: list[dict[str, Any]]) -> str:
    """The claim of the volume every pod shares (efsvol on eks, paddle-shared on kubernetes)."""
    [claim] = [v["persistentVolumeClaim"]["claimName"] for v in pod_template(objects)["volumes"]
               if "persistentVolumeClaim" in v]
    return str(claim)


def summaries(workdir: Path, claim: str = "efsvol") -> list[dict[str, Any]]:
    output = claim_dir(workdir, claim) / "linear" / "output"
    return [json.loads(path.read_text()) for path in sorted(output.glob("rank-*.json"))]


def pod_logs(results: list[PodResult]) -> str:
    return "\n".join(f"--- {r.name} ({r.exit_code})\n{r.log[-3000:]}" for r in results)


def assert_trained_together(results: list[PodResult], workdir: Path, claim: str) -> None:
    """Every pod exited 0, each rank trained on its own data, and all ended with the same
    parameters; nothing of the pods is left."""
    nodes = len(results)
    assert [r.exit_code for r in results] == [0] * nodes, pod_logs(results)
    ranks = summaries(workdir, claim)
    assert sorted(r["rank"] for r in ranks) == list(range(nodes)), pod_logs(results)
    assert all(r["world_size"] == nodes for r in ranks)
    assert all(r["last_loss"] < r["first_loss"] for r in ranks)
    assert len({r["first_loss"] for r in ranks}) == nodes  # each rank trains on its own data
    assert len({r["params_sha256"] for r in ranks}) == 1  # the gradients were all-reduced
    # every launcher's logs went to its own directory on the shared volume
    logs_dir = claim_dir(workdir, claim) / "linear" / "logs"
    assert len([d for d in logs_dir.iterdir() if (d / "workerlog.0").exists()]) == nodes
    assert not leftover_processes(results)


@pytest.mark.parametrize("nodes", [2, 3])
@pytest.mark.parametrize("launcher", ["indexed", "kubeflow"])
def test_the_built_pods_train_together(tmp_path: Path, launcher: str, nodes: int) -> None:
    objects = built_objects(launcher, nodes)
    results = train(objects, tmp_path, TIMEOUT)
    assert_trained_together(results, tmp_path, shared_claim(objects))


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
    assert not leftover_processes(results)


def master_host(objects: list[dict[str, Any]]) -> str:
    """The host part of the launcher's --master, as the built command names it."""
    command = pod_template(objects)["containers"][0]["command"]
    return str(command[command.index("--master") + 1]).rsplit(":", 1)[0]


def short_named(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The eks wiring as it was before the master pod's race was fixed: every stable name
    `<job>-<i>.<job>` without the `.<ns>.svc.<domain>` that the built objects add, in the
    command and the env."""
    objects = copy.deepcopy(objects)
    job = next(o for o in objects if o["kind"] == "Job")
    short = f"{job['metadata']['name']}-0.{job['spec']['template']['spec']['subdomain']}"
    fully_qualified = master_host(objects)
    assert fully_qualified.startswith(f"{short}."), fully_qualified  # else nothing to shorten
    suffix = fully_qualified.removeprefix(short)
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["command"] = [str(word).replace(suffix, "") for word in container["command"]]
    for var in container["env"]:
        if "value" in var:
            var["value"] = str(var["value"]).replace(suffix, "")
    return objects


def dns_answers(workdir: Path, name: str) -> set[str]:
    """The cluster DNS's answers to A queries for a name, from its log."""
    log = (workdir / "cluster-dns" / "log").read_text().splitlines()
    return {rcode for _, qtype, asked, rcode in (line.split() for line in log)
            if (qtype, asked) == ("A", name)}


def test_short_names_fail_the_master_pod_while_the_cluster_dns_lacks_them(tmp_path: Path) -> None:
    objects = short_named(built_objects("indexed", 2))
    # the run ends by the time the names resolve: a pod that exited (not killed) exited before
    results = train(objects, tmp_path, timeout=DNS_DELAY, dns_delay=DNS_DELAY)
    master, other = results
    assert master.exit_code not in (None, 0), pod_logs(results)
    # Node.is_server_ready's connect_ex on the master's name, outside HTTPMaster's try
    assert "socket.gaierror" in master.log, pod_logs(results)
    # the Job failed (backoffLimit 0): the other pod was deleted, its launcher stopped by SIGTERM
    assert other.deleted and other.exit_code not in (None, 0), pod_logs(results)
    assert summaries(tmp_path) == []
    assert not leftover_processes(results)


@pytest.mark.parametrize("spec", [SPEC, KUBERNETES_SPEC], ids=["eks", "kubernetes"])
def test_the_built_pods_train_though_the_cluster_dns_lags(tmp_path: Path, spec: Path) -> None:
    objects = built_objects("indexed", 2, spec)
    results = train(objects, tmp_path, TIMEOUT + DNS_DELAY, dns_delay=DNS_DELAY)
    assert_trained_together(results, tmp_path, shared_claim(objects))
    # the pods asked for the master's name while the cluster DNS did not have it, and after
    zone = cluster_dns_zone(simulate_controllers(objects))
    [master] = [name for name in zone if f"{name}.".startswith(f"{master_host(objects)}.")]
    assert dns_answers(tmp_path, master) == {"NXDOMAIN", "NOERROR"}
