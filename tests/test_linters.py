"""The linters people run on these files, on every golden tree: checkov (with the committed
allowlist, tests/checkov-allowlist.yaml), yamllint (.yamllint.yaml), parliament on every IAM
policy, and cfn-lint (tests/test_efs_template.py). A linter that is missing fails the run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from conftest import GOLDEN, ROOT
from profile_harness import (
    built,
    containers_of,
    golden_names,
    golden_objects,
    golden_pods,
    workload_pods,
)

pytestmark = pytest.mark.conformance
BIN = Path(sys.executable).parent
ALLOWLIST_FILE = Path(__file__).resolve().parent / "checkov-allowlist.yaml"
ALLOWLIST: dict[str, Any] = YAML(typ="safe", pure=True).load(ALLOWLIST_FILE)
NAMES = golden_names()


def pods(golden: str) -> list[dict[str, Any]]:
    """The specs of the pods the golden's workloads make."""
    return [pod["spec"] for pod in golden_pods(golden)]


def containers(golden: str) -> list[dict[str, Any]]:
    return [c for pod in pods(golden) for c in containers_of(pod)]


def runs_as(golden: str, field: str) -> list[Any]:
    """The field of each container's security context, else its pod's (None: neither sets it)."""
    return [c.get("securityContext", {}).get(field, pod.get("securityContext", {}).get(field))
            for pod in pods(golden) for c in pod["containers"]]


# The custom resources that carry pod templates, which checkov does not read.
CUSTOM_WORKLOADS = ("PaddleJob", "JobSet", "TrainingRuntime")


def worker_containers(golden: str) -> list[dict[str, Any]]:
    """The containers of the custom resources' pods: PaddleJobs' workers, JobSets' and
    TrainingRuntimes' trainers (checked as Pods: with_worker_pods)."""
    return [c for obj in golden_objects(golden) if obj["kind"] in CUSTOM_WORKLOADS
            for pod in workload_pods(obj) for c in pod["spec"]["containers"]]


# Where each finding of the allowlist comes: the facts of a golden's objects that bring it.
WHERE: dict[str, Callable[[str], bool]] = {
    "CKV_K8S_21": lambda g: built(g).plan.meta.namespace == "default",
    "CKV_K8S_22": lambda g: any(c.get("securityContext", {}).get("readOnlyRootFilesystem")
                                is not True for c in containers(g)),
    "CKV_K8S_23": lambda g: any(value is not True for value in runs_as(g, "runAsNonRoot")),
    "CKV_K8S_40": lambda g: any((value or 0) < 10000 for value in runs_as(g, "runAsUser")),
    "CKV_K8S_25": lambda g: any(c.get("securityContext", {}).get("capabilities", {}).get("add")
                                for c in containers(g)),
    "CKV_K8S_43": lambda g: any("@sha256:" not in c["image"] for c in containers(g)),
    "CKV_K8S_26": lambda g: any("hostPort" in port for c in containers(g)
                                for port in c.get("ports", [])),
    "CKV_K8S_38": lambda g: any(pod.get("automountServiceAccountToken") is not False
                                for pod in pods(g)),
    "CKV_K8S_20": lambda g: any(c.get("securityContext", {}).get("allowPrivilegeEscalation")
                                is not False for c in containers(g)),
    "CKV2_K8S_6": lambda g: not any(obj["kind"] == "NetworkPolicy" for obj in golden_objects(g)),
    "CKV_K8S_15": lambda g: any(c.get("imagePullPolicy") != "Always" for c in containers(g)),
    "CKV_K8S_8": lambda g: any("livenessProbe" not in c for c in worker_containers(g)),
    "CKV_K8S_9": lambda g: any("readinessProbe" not in c for c in worker_containers(g)),
}


def allowed(golden: str) -> set[str]:
    """The allowlist's findings that the golden's tree brings."""
    return {check for check in ALLOWLIST if WHERE[check](golden)}


def checkov(path: Path, framework: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [BIN / "checkov", "--framework", framework, "--skip-download", "--quiet", "--compact",
         "--output", "json", "-d", path], capture_output=True, text=True, check=False)
    report = json.loads(result.stdout)
    reports = report if isinstance(report, list) else [report]
    # a directory of nothing checkov reads gets a summary without results
    return [check for r in reports for check in r.get("results", {}).get("failed_checks", [])]


def with_worker_pods(k8s: Path, scratch: Path) -> Path:
    """k8s/ and, for each custom resource with pod templates (which checkov does not read: a
    PaddleJob, a JobSet, a TrainingRuntime), each template as a Pod, so that checkov checks what
    the training operator, JobSet or Trainer will run."""
    shutil.copytree(k8s, scratch / "k8s")
    for path in sorted(k8s.glob("*.yaml")):
        obj = YAML(typ="safe", pure=True).load(path)
        if obj["kind"] not in CUSTOM_WORKLOADS:
            continue
        for index, template in enumerate(workload_pods(obj)):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {**template["metadata"],
                                "name": f"{obj['metadata']['name']}-worker-{index}",
                                "namespace": obj["metadata"]["namespace"]},
                   "spec": template["spec"]}
            (scratch / "k8s" / f"worker-pod-{index}-of-{path.name}").write_text(json.dumps(pod))
    return scratch / "k8s"


@pytest.mark.parametrize("golden", NAMES)
def test_checkov_finds_only_what_the_allowlist_explains(golden: str, tmp_path: Path) -> None:
    out = GOLDEN / golden / "out"
    failed = checkov(with_worker_pods(out / "k8s", tmp_path), "kubernetes")
    if (out / "aws").is_dir():
        failed += checkov(out / "aws", "cloudformation")
    for check in failed:  # the findings, for whoever reads the log
        print(f"{golden}: {check['check_id']} {check['resource']} {check['check_name']}")
    assert {check["check_id"] for check in failed} == allowed(golden)


def test_every_allowlist_entry_has_a_reason_and_a_place() -> None:
    assert set(ALLOWLIST) == set(WHERE)
    for check, entry in ALLOWLIST.items():
        assert set(entry) == {"reason"}, check
        assert len(entry["reason"]) > 40, check
        assert any(WHERE[check](golden) for golden in NAMES), check  # else it is fixed: drop it


def test_yamllint_is_clean() -> None:
    files = [*GOLDEN.rglob("*.yaml"), *(ROOT / "profiles").rglob("*.yaml")]
    result = subprocess.run([BIN / "yamllint", "--strict", "-c", ROOT / ".yamllint.yaml",
                             *files], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("policy", sorted(GOLDEN.glob("*/out/aws/iam-policy.json")),
                         ids=lambda p: p.parent.parent.parent.name)
def test_parliament_finds_nothing_in_the_iam_policy(policy: Path) -> None:
    from parliament import analyze_policy_string

    findings = analyze_policy_string(policy.read_text()).findings
    # parliament's database of actions predates billing:GetBillingViewData, which the schema of
    # AWS::Budgets::Budget lists among its handlers' permissions (cfn-lint's copy of it)
    newer = ("UNKNOWN_ACTION", "Unknown action billing:GetBillingViewData")
    known = [(f.issue, f.detail) for f in findings if (f.issue, f.detail) != newer]
    assert known == []
