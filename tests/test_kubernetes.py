"""Profile kubernetes, the cluster you already have: only the training's objects and a claim on
its storage, checked against the release it names, and a runbook of kubectl commands."""

from __future__ import annotations

import re
from typing import Any

import pytest

from paddlegen.compiler.build import build
from paddlegen.compiler.kube_schema import supported_versions
from paddlegen.compiler.problems import SpecError
from paddlegen.profiles import PROFILES

from conftest import GOLDEN, ROOT, sh_blocks

SPEC = (GOLDEN / "kubernetes" / "spec.yaml").read_text()


def variant(*edits: tuple[str, str]) -> str:
    text = SPEC
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def kinds(text: str) -> list[str]:
    return [m.obj["kind"] for m in build(text.encode(), "spec.yaml").manifests]


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as refused:
        build(text.encode(), "spec.yaml")
    return [str(problem) for problem in refused.value.problems]


def runbook(text: str) -> str:
    artifacts = build(text.encode(), "spec.yaml").artifacts
    return next(a.text for a in artifacts if a.path == "RUNBOOK.md")


def test_the_tree_is_the_training_alone_on_a_claim_of_the_clusters_class() -> None:
    produced = build(SPEC.encode(), "spec.yaml")
    assert sorted({a.path.split("/")[0] for a in produced.artifacts}) == [
        ".paddlegen-manifest", "RUNBOOK.md", "k8s", "kustomization.yaml", "run.sh"]  # no aws/
    assert not (GOLDEN / "kubernetes" / "out" / "aws").exists()
    objects: dict[str, Any] = {m.obj["kind"]: m.obj for m in produced.manifests}
    # no Namespace: the cluster's namespace is there already, and teardown must not delete it
    assert list(objects) == ["PersistentVolumeClaim", "Service", "NetworkPolicy",
                             "PodDisruptionBudget", "Job"]
    claim = objects["PersistentVolumeClaim"]["spec"]
    assert claim == {"accessModes": ["ReadWriteMany"], "storageClassName": "nfs-rwx",
                     "resources": {"requests": {"storage": "20Gi"}}}  # provisioned: no volumeName
    pod = objects["Job"]["spec"]["template"]["spec"]
    assert {"name": "shared", "persistentVolumeClaim": {"claimName": "paddle-shared"}} in \
        pod["volumes"]
    assert produced.plan.meta.target.kube.version == "1.37"


def test_the_default_release_is_the_newest_kubernetes_validate_ships() -> None:
    # the newest release of the pinned kubernetes-validate wheel, vendored from it
    vendored = [path.name[1:] for path in (ROOT / "schema" / "kubernetes").glob("v1.*")]
    newest = max(vendored, key=lambda v: tuple(map(int, v.split("."))))
    assert newest == "1.37" and newest in supported_versions()
    defaults = (ROOT / "profiles" / PROFILES["kubernetes"].defaults_file).read_text()
    assert f'kubeVersion: "{newest}"' in defaults
    without = variant(('kubeVersion: "1.37"\n', ""))
    assert build(without.encode(), "spec.yaml").plan.meta.target.kube.version == newest


def test_an_existing_claim_is_mounted_and_not_made() -> None:
    text = variant(("  storageClassName: nfs-rwx\n  request: 20Gi\n",
                    "  existingClaim: team-rwx\n"))
    assert "PersistentVolumeClaim" not in kinds(text)
    job = next(m.obj for m in build(text.encode(), "spec.yaml").manifests
               if m.obj["kind"] == "Job")
    assert {"name": "shared", "persistentVolumeClaim": {"claimName": "team-rwx"}} in \
        job["spec"]["template"]["spec"]["volumes"]
    assert "kubectl --namespace=ml-team get pvc team-rwx" in runbook(text)


@pytest.mark.parametrize(("storage", "message"), [
    ("  request: 20Gi\n", r"storage: name the storage: storageClassName .+ or existingClaim"),
    ("  storageClassName: nfs-rwx\n  existingClaim: x\n",
     r"storage.existingClaim: storageClassName is set too; keep one"),
])
def test_storage_names_one_source(storage: str, message: str) -> None:
    found = problems(variant(("  storageClassName: nfs-rwx\n  request: 20Gi\n", storage)))
    assert len(found) == 1 and re.search(rf"^spec.yaml:\d+:\d+: {message}.* \[storage-source\]$",
                                         found[0]), found


def test_every_launcher_and_framework_the_release_serves() -> None:
    kubeflow = variant(("launcher: indexed", "launcher: kubeflow"))
    assert kinds(kubeflow)[-1] == "PaddleJob"
    assert "kubectl apply --server-side -k" in runbook(kubeflow)
    v1 = variant(("  framework: paddle\n", "  framework: paddle-v1\n"),
                 ("  image: registry.example.com/ml-team/paddle-linear:1.0\n"
                  "  script: /workspace/train_linear.py\n"
                  "  args: [--out, /mnt/shared/linear/output]\n", ""),
                 ("  gpusPerNode: 0\n", ""))
    assert kinds(v1)[-2:] == ["Job", "Job"]  # the tutorial's data Job, then the trainers
    assert "`output`: the models, off the shared volume" in runbook(v1)
    old = variant(('kubeVersion: "1.37"', 'kubeVersion: "1.23"'))
    assert any(line.endswith("[launcher]") for line in problems(old))  # no Indexed Jobs


def test_the_runbook_uses_kubectl_and_no_cloud() -> None:
    text = (GOLDEN / "kubernetes" / "out" / "RUNBOOK.md").read_text()
    blocks = "".join(sh_blocks(text))
    shell = re.sub(r"<<'EOF'\n.*?\nEOF\n", "\n", blocks, flags=re.S)  # a pod's YAML
    first_words = {line.split()[0] for line in shell.splitlines()
                   if line.strip() and not line.startswith(" ")}
    # a phase's subshell, its waits, and ended(): the run's end, in kubectl's words
    assert first_words == {"#", "(", "set", "export", ")", "kubectl", "POD=$(kubectl",
                           "POD=${POD%%", "deadline=$((SECONDS", "until", "done", "echo", "if",
                           "elif", "else", "fi", "ended()", "gone()", "}", "tar", "mv",
                           "CLAIM="}
    assert not re.search(r"\b(aws|eksctl|gcloud|az)\b", text)
    assert "kubectl apply --server-side" not in text  # the indexed launcher needs no operator
