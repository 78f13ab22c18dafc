"""Every block of every golden runbook, run as a person pastes it: each in a fresh
`bash -euo pipefail` (so nothing survives from an earlier block but what AWS and $ASSETS keep),
with stand-ins for aws, kubectl, kube-aws, ssh, dig and curl that log what they are asked
(profile_harness.run_blocks; tests/test_profiles_harness.py runs every golden's). Here: what each
profile's runbook does in which order, on the stand-ins' log of each of its goldens."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import GOLDEN, GOLDEN_SPECS, sh_blocks
from profile_harness import golden_names, goldens_of, install_stubs, spec_values

RunbookLog = Callable[[str], list[list[str]]]

def index(log: list[list[str]], *words: str) -> int:
    """Where the first call whose argv holds all of `words` is in the log."""
    return next(i for i, call in enumerate(log) if all(word in call for word in words))


def position(log: list[list[str]], tool: str, fragment: str) -> int:
    return next(i for i, call in enumerate(log)
                if call[0] == tool and fragment in " ".join(call[1:]))


@pytest.mark.conformance
@pytest.mark.parametrize("golden", goldens_of("kube-aws"))
def test_the_kube_aws_runbook_runs_start_to_finish(golden: str, runbook_log: RunbookLog) -> None:
    log = runbook_log(golden)
    cluster = "paddle-cluster"
    # the DNS name comes out of the tab-padded `kube-aws status` without whitespace
    [dig] = [call for call in log if call[0] == "dig"]
    assert dig[1:] == ["+short",
                       "paddle-cl-ElbAPISe-EEOI3EZPR86C-531251350.us-west-2.elb.amazonaws.com"]
    # the models are copied off before the file system's stack is deleted, the cluster's stack
    # is gone before the bucket prefix is removed, and the IAM group goes last
    models = position(log, "kubectl", "tar czf -")
    efs_deleted = position(log, "aws", f"cloudformation delete-stack --stack-name {cluster}-efs")
    destroy = position(log, "kube-aws", "destroy")
    stack_gone = position(log, "aws", f"wait stack-delete-complete --stack-name {cluster}")
    cluster_gone = next(i for i, call in enumerate(log) if call[-1] == cluster
                        and "stack-delete-complete" in call)
    prefix = position(log, "aws", "s3 rm s3://paddle-kube-aws-assets/paddle-cluster")
    assert models < efs_deleted < stack_gone < destroy < cluster_gone < prefix
    assert position(log, "aws", "iam delete-group ") == len(log) - 1
    # the file system came before the cluster (its name goes into the spec), and got the
    # cluster's network after it
    first_deploy = position(log, "aws", f"cloudformation deploy --stack-name {cluster}-efs")
    assert first_deploy < position(log, "kube-aws", "up") < position(log, "aws", "VpcId=vpc-")


@pytest.mark.conformance
@pytest.mark.parametrize("golden", goldens_of("kube-up"))
def test_the_kube_up_runbook_runs_start_to_finish(golden: str, runbook_log: RunbookLog) -> None:
    log = runbook_log(golden)
    up = position(log, "kube-up.sh", "")
    deploy = position(log, "aws", "cloudformation deploy --stack-name k8s-efs")
    mounts = [i for i, call in enumerate(log) if call[0] == "ssh" and "mount -t nfs4" in call[-1]]
    assert up < deploy < mounts[0] and len(mounts) == 2  # on both nodes
    assert all("fs-" in log[i][-1] for i in mounts)  # the DNS name from the stack's outputs
    models = position(log, "kubectl", "tar czf -")
    assert models < position(log, "aws", "delete-stack --stack-name k8s-efs") \
        < position(log, "kube-down.sh", "")


@pytest.mark.conformance
@pytest.mark.parametrize("golden", goldens_of("eks"))
def test_the_eks_runbook_runs_start_to_finish(golden: str, runbook_log: RunbookLog) -> None:
    values = spec_values(golden)
    stack = f"{values['cluster']['name']}-efs"
    made_here = "fileSystemId" not in values["storage"]["efs"]  # the stack makes it
    log = runbook_log(golden)
    cluster_made = position(log, "eksctl", "create cluster -f")
    efs_deployed = position(log, "aws", f"cloudformation deploy --stack-name {stack}")
    assert cluster_made < efs_deployed  # its network comes from eksctl's stack
    if values["training"].get("framework", "paddle") == "paddle":
        # the image is built, checked and pushed before any node is paid for
        built_at, pushed = position(log, "docker", "build -t"), position(log, "docker", "push")
        checks = [i for i, call in enumerate(log) if call[:3] == ["docker", "run", "--rm"]]
        assert checks and built_at < min(checks) and max(checks) < pushed < cluster_made
        cuda_on_node = [i for i, call in enumerate(log) if call[0] == "kubectl" and "wait" in call
                        and "pod/linear-cuda-check" in call]
        gpus = values["training"].get("gpusPerNode", 0)
        assert len(cuda_on_node) == (1 if gpus else 0)
        assert all(cluster_made < i < efs_deployed for i in cuda_on_node)
    # the spec's file system, or none: then the stack makes one
    given = "FileSystemId=" + ("" if made_here else "fs-0123456789abcdef0")
    assert log[efs_deployed][-1] == given
    operator = [i for i, call in enumerate(log) if call[0] == "kubectl" and "-k" in call]
    assert bool(operator) == golden.endswith("kubeflow")
    models = position(log, "kubectl", "tar czf -")
    stack_deleted = position(log, "aws", f"cloudformation delete-stack --stack-name {stack}")
    stack_gone = position(log, "aws", f"wait stack-delete-complete --stack-name {stack}")
    cluster_deleted = position(log, "eksctl", "delete cluster -f")
    assert models < stack_deleted < stack_gone < cluster_deleted
    # the file system goes only if the stack made it, after its mount targets
    deleted = [i for i, call in enumerate(log) if call[1:3] == ["efs", "delete-file-system"]]
    assert deleted == ([deleted[0]] if made_here else [])
    assert all(stack_gone < i < cluster_deleted for i in deleted)
    assert position(log, "aws", "iam delete-group ") == len(log) - 1


@pytest.mark.conformance
@pytest.mark.parametrize("golden", goldens_of("local"))
def test_the_local_runbook_runs_and_calls_no_aws(golden: str, runbook_log: RunbookLog) -> None:
    log = runbook_log(golden)
    assert log and not any(call[0] in ("aws", "kube-aws", "ssh") for call in log)


def test_every_runbook_block_begins_with_the_same_line() -> None:
    for spec in GOLDEN_SPECS:
        found = sh_blocks((spec.parent / "out" / "RUNBOOK.md").read_text())
        first_lines = {block.splitlines()[0] for block in found}
        assert len(first_lines) == 1, spec.parent.name
        assert first_lines.pop().startswith('OUT="$PWD"')


def test_no_block_depends_on_a_variable_set_by_an_earlier_block() -> None:
    for spec in GOLDEN_SPECS:
        set_so_far: set[str] = set()
        for block in sh_blocks((spec.parent / "out" / "RUNBOOK.md").read_text()):
            assigned = set(re.findall(r"(?:^|[\s;(])([A-Z_]+)=", block))
            used = set(re.findall(r"\$\{?([A-Z_]+)", block)) - assigned - set(os.environ)
            assert used & set_so_far == set(), (spec.parent.name, block)
            set_so_far |= assigned


def test_a_namespace_of_its_own_is_created_first() -> None:
    from paddlegen.compiler.build import build

    raw = (GOLDEN / "kube-aws" / "spec.yaml").read_bytes().replace(b"namespace: default",
                                                                   b"namespace: paddle")
    manifests = build(raw, "spec.yaml").manifests
    first = manifests[0]
    assert (first.path, first.obj["kind"], first.obj["metadata"]["name"]) == (
        "k8s/01-namespace-paddle.yaml", "Namespace", "paddle")
    assert first.obj["metadata"]["labels"]["app.kubernetes.io/instance"] == "paddle-cluster-job"
    assert all(m.obj["metadata"].get("namespace") in (None, "paddle") for m in manifests)


@pytest.mark.parametrize("version", ["v0.9.1", "v0.9.9"])
def test_a_record_set_kube_aws_manages_needs_no_dns_step(version: str) -> None:
    from paddlegen.compiler.build import build

    raw = (GOLDEN / "kube-aws" / "spec.yaml").read_text().replace(
        "  workerCount: 3\n", f"  workerCount: 3\n  kubeAwsVersion: {version}\n"
        "  createRecordSet: true\n  hostedZoneId: Z2ABCDEF12345\n").encode()
    [runbook] = [a.text for a in build(raw, "spec.yaml").artifacts if a.path == "RUNBOOK.md"]
    assert "dig " not in runbook and "kube-aws status" not in runbook
    assert "kube-aws creates the record of `paddle` in the hosted zone" in runbook
    assert ("--hosted-zone-id=Z2ABCDEF12345" in runbook) == (version == "v0.9.9")


@pytest.mark.conformance
@pytest.mark.parametrize("golden", [name for name in golden_names() if "STATE=$(" in (
    GOLDEN / name / "out" / "RUNBOOK.md").read_text()])
def test_a_failed_job_ends_its_wait_non_zero_and_nothing_after_it_runs(
        golden: str, tmp_path: Path) -> None:
    """The data Job (or the run) failed: the block says so and stops, within the Job's own
    deadline (the stand-in answers Failed at once), and the trainers are never created."""
    runbook = (GOLDEN / golden / "out" / "RUNBOOK.md").read_text()
    [block] = [b for b in sh_blocks(runbook) if "STATE=$(" in b][:1]
    spec = GOLDEN / golden / "spec.yaml"
    tree = tmp_path / "tree"
    shutil.copytree(spec.parent / "out", tree / "out")
    stubs = install_stubs(tmp_path / "stubs", ("kubectl",))
    result = subprocess.run(
        ["bash", "-c", block], cwd=tree / "out", capture_output=True, text=True, timeout=60,
        env={"HOME": str(tmp_path), "PATH": f"{stubs}:/usr/bin:/bin", "LC_ALL": "C.UTF-8",
             "STUB_LOG": str(tmp_path / "log"), "STUB_JOB_STATE": "Failed"}, check=False)
    assert result.returncode != 0 and " failed; see: kubectl " in result.stderr
    created = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()
               if '"create"' in line]
    waited_for = re.search(r"get (?:job|paddlejob) (\S+) ", block)
    assert waited_for
    assert not any("logs" in call for call in created)
    assert len(created) == block[:block.index("until STATE=")].count("kubectl create -f")


GPU_KUBERNETES = (GOLDEN / "kubernetes" / "spec.yaml").read_text().replace(
    "gpusPerNode: 0", "gpusPerNode: 2")


def kubernetes_runbook(spec: str) -> str:
    from paddlegen.compiler.build import build

    return next(a.text for a in build(spec.encode(), "spec.yaml").artifacts
                if a.path == "RUNBOOK.md")


def test_a_gpu_run_on_a_cluster_that_exists_lists_what_its_gpus_need() -> None:
    tolerating = GPU_KUBERNETES + ("scheduling:\n  tolerations:\n"
                                   "    - {key: nvidia.com/gpu, operator: Exists, "
                                   "effect: NoSchedule}\n")
    runbook = kubernetes_runbook(tolerating)
    before = runbook[runbook.index("## Before you start"):runbook.index("## 1. ")]
    assert "4 nodes with 2 NVIDIA GPUs each that advertise `nvidia.com/gpu`" in before
    assert "NVIDIA's device plugin" in before and "GPU operator" in before
    assert "the spec tolerates `nvidia.com/gpu:NoSchedule`" in before
    assert "the spec tolerates none" in kubernetes_runbook(GPU_KUBERNETES)
    [check] = sh_blocks(runbook)[:1]
    assert ("kubectl get nodes -o custom-columns='NAME:.metadata.name,"
            "GPUS:.status.allocatable.nvidia\\.com/gpu,TAINTS:.spec.taints[*].key'") in check
    cpu = (GOLDEN / "kubernetes" / "out" / "RUNBOOK.md").read_text()
    assert "nvidia.com/gpu" not in cpu


@pytest.mark.parametrize("golden", ["eks-paddle", "eks-paddle-kubeflow", "kubernetes"])
def test_the_runbook_says_what_a_deleted_pod_does_to_the_run(golden: str) -> None:
    text = " ".join((GOLDEN / golden / "out" / "RUNBOOK.md").read_text().split())
    if golden.endswith("kubeflow"):
        assert "is not a failure to the training operator: it makes the pod again" in text
        assert "times out after 600 seconds (PADDLE_PG_TIMEOUT)" in text
        assert "use `launcher: indexed`" in text
    else:
        assert "and so does a deleted or evicted one" in text
        assert "PADDLE_PG_TIMEOUT" not in text
