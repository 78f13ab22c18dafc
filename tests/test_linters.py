"""The linters people run on these files, on every golden tree: checkov (with the committed
allowlist, tests/checkov-allowlist.yaml), yamllint (.yamllint.yaml), parliament on every IAM
policy, and cfn-lint (tests/test_efs_template.py). A linter that is missing fails the run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from conftest import GOLDEN, GOLDEN_SPECS, ROOT

pytestmark = pytest.mark.conformance
BIN = Path(sys.executable).parent
ALLOWLIST_FILE = Path(__file__).resolve().parent / "checkov-allowlist.yaml"
ALLOWLIST: dict[str, Any] = YAML(typ="safe", pure=True).load(ALLOWLIST_FILE)
NAMES = [spec.parent.name for spec in GOLDEN_SPECS]


def allowed(golden: str) -> set[str]:
    return {check for check, entry in ALLOWLIST.items() if golden in entry["goldens"]}


def checkov(path: Path, framework: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [BIN / "checkov", "--framework", framework, "--skip-download", "--quiet", "--compact",
         "--output", "json", "-d", path], capture_output=True, text=True, check=False)
    report = json.loads(result.stdout)
    reports = report if isinstance(report, list) else [report]
    # a directory of nothing checkov reads gets a summary without results
    return [check for r in reports for check in r.get("results", {}).get("failed_checks", [])]


def with_worker_pods(k8s: Path, scratch: Path) -> Path:
    """k8s/ and, for each PaddleJob (a CRD checkov does not read), its worker template as a Pod,
    so that checkov checks what the training operator will run."""
    shutil.copytree(k8s, scratch / "k8s")
    for path in k8s.glob("*-paddlejob-*.yaml"):
        job = YAML(typ="safe", pure=True).load(path)
        template = job["spec"]["paddleReplicaSpecs"]["Worker"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {**template["metadata"], "name": f"{job['metadata']['name']}-worker",
                            "namespace": job["metadata"]["namespace"]},
               "spec": template["spec"]}
        (scratch / "k8s" / f"worker-pod-of-{path.name}").write_text(json.dumps(pod))
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


def test_every_allowlist_entry_has_a_reason_and_real_goldens() -> None:
    for check, entry in ALLOWLIST.items():
        assert set(entry) == {"reason", "goldens"}, check
        assert len(entry["reason"]) > 40, check
        assert set(entry["goldens"]) <= set(NAMES), check


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
    assert [(f.issue, f.detail) for f in findings] == []
