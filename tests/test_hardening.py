"""Hardened, operable Jobs: resources, security contexts, scheduling, network policy and labels,
each only where the target release has it, and refused where the spec asks for more. What every
golden's workloads have is checked on every golden (profile_harness), each against the release
its build targets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.build import build
from paddlegen.compiler.problems import SpecError

from conftest import GOLDEN
from profile_harness import (
    built,
    containers_of,
    golden_names,
    golden_objects,
    golden_pods,
    image_version,
    spec_values,
)

GOLDENS = golden_names()


def objects(golden: str, edit: tuple[str, str] = ("", "")) -> list[dict[str, Any]]:
    raw = (GOLDEN / golden / "spec.yaml").read_text().replace(*edit) if edit[0] else \
        (GOLDEN / golden / "spec.yaml").read_text()
    return [m.obj for m in build(raw.encode(), "spec.yaml").manifests]


def jobs(golden: str, edit: tuple[str, str] = ("", "")) -> list[dict[str, Any]]:
    return [o for o in objects(golden, edit) if o["kind"] == "Job"]


def containers(job: dict[str, Any]) -> list[dict[str, Any]]:
    return containers_of(job["spec"]["template"]["spec"])


@pytest.mark.parametrize("golden", GOLDENS)
def test_every_object_carries_the_recommended_labels(golden: str) -> None:
    found = golden_objects(golden)
    for obj in found:
        labels = obj["metadata"]["labels"]
        assert {"app.kubernetes.io/version", "app.kubernetes.io/part-of"} <= set(labels)
    # the version of the training, applied last (a TrainJob's pods are its runtime's, applied
    # before it): its image's tag
    training = golden_pods(golden)[-1]
    version = found[-1]["metadata"]["labels"]["app.kubernetes.io/version"]
    assert version == image_version(training["spec"]["containers"][0]["image"])


@pytest.mark.parametrize("golden", GOLDENS)
def test_every_container_has_resources_and_drops_capabilities(golden: str) -> None:
    root = not spec_values(golden).get("security", {}).get("runAsNonRoot", False)
    for pod in golden_pods(golden):
        for container in containers_of(pod["spec"]):
            assert set(container["resources"]) == {"requests", "limits"}, container["name"]
            capabilities = container["securityContext"]["capabilities"]
            assert capabilities["drop"] == ["ALL"]
            # images that run as root: tar and cp need these three of root's
            assert capabilities.get("add") == (["CHOWN", "DAC_OVERRIDE", "FOWNER"] if root
                                               else None)


@pytest.mark.parametrize("golden", GOLDENS)
def test_privilege_escalation_seccomp_and_network_policy_as_the_release_has_them(
        golden: str) -> None:
    kube = built(golden).plan.meta.target.kube
    annotation = "seccomp.security.alpha.kubernetes.io/pod"
    for pod in golden_pods(golden):
        for container in pod["spec"]["containers"]:
            assert ("allowPrivilegeEscalation" in container["securityContext"]) is \
                kube.allow_privilege_escalation_field
        annotations = pod.get("metadata", {}).get("annotations", {})
        if kube.seccomp_field:
            assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            assert annotation not in annotations
        else:
            assert annotations[annotation] == kube.seccomp_runtime_default
    assert any(o["kind"] == "NetworkPolicy" for o in golden_objects(golden)) is \
        kube.network_policy_v1


def test_a_non_root_image_drops_every_capability_and_says_so() -> None:
    [job] = jobs("local", ("profile: local\n", "profile: local\nsecurity:\n  runAsNonRoot: true\n"
                           "  runAsUser: 1000\n  readOnlyRootFilesystem: true\n"))
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 1000
    [container] = pod["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_a_digest_is_pulled_if_not_present_and_labels_the_version() -> None:
    digest = "a" * 64
    [job] = jobs("kube-aws-v0.9.9", ("image: paddlepaddle/paddle-tutorial:k8s_train",
                                     f"image: paddlepaddle/paddle-tutorial@sha256:{digest}"))[1:]
    for container in containers(job):
        assert container["imagePullPolicy"] == "IfNotPresent"
    assert job["metadata"]["labels"]["app.kubernetes.io/version"] == "a" * 12
    data = jobs("kube-aws-v0.9.9")[0]
    assert data["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"


def test_the_network_policy_admits_only_the_trainers_to_the_pserver_ports() -> None:
    [policy] = [o for o in objects("kube-aws-v0.9.9") if o["kind"] == "NetworkPolicy"]
    assert policy["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/instance": "paddle-cluster-job"}}
    [rule] = policy["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/instance": "paddle-cluster-job",
        "app.kubernetes.io/component": "trainer"}}}]
    assert [p["port"] for p in rule["ports"]] == [7164, 7165, 7166, 7167]
    [alone] = [o for o in objects("local") if o["kind"] == "NetworkPolicy"]
    assert alone["spec"]["ingress"] == []  # one trainer listens to nobody
    for golden in ("kube-aws", "kube-up"):  # Kubernetes 1.4 and 1.5: no networking.k8s.io/v1
        assert not any(o["kind"] == "NetworkPolicy" for o in objects(golden))


def test_scheduling_reaches_every_pod() -> None:
    for job in jobs("kube-aws-v0.9.9"):
        pod = job["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"beta.kubernetes.io/os": "linux"}
        assert pod["tolerations"] == [{"key": "dedicated", "operator": "Equal",
                                       "value": "paddle", "effect": "NoSchedule"}]
    [local] = jobs("local")
    assert local["spec"]["ttlSecondsAfterFinished"] == 604800


def problems(golden: str, edit: tuple[str, str]) -> list[tuple[str, str, str]]:
    raw = (GOLDEN / golden / "spec.yaml").read_text()
    assert edit[0] in raw
    with pytest.raises(SpecError) as raised:
        build(raw.replace(*edit).encode(), "spec.yaml")
    return [(p.path, p.rule, p.message) for p in raised.value.problems]


@pytest.mark.parametrize(("golden", "edit", "path", "since"), [
    ("kube-aws", ("scheduling:\n", "scheduling:\n  tolerations: [{key: a, operator: Exists}]\n"),
     "scheduling.tolerations", "1.6"),
    ("kube-aws-v0.9.9", ("scheduling:\n", "scheduling:\n  priorityClassName: high\n"),
     "scheduling.priorityClassName", "1.11"),
    ("kube-up", ("  trainerCount: 4\n", "  trainerCount: 4\n  ttlSecondsAfterFinished: 60\n"),
     "training.ttlSecondsAfterFinished", "1.21"),
])
def test_a_field_the_release_lacks_is_refused(golden: str, edit: tuple[str, str], path: str,
                                               since: str) -> None:
    [(found, rule, message)] = problems(golden, edit)
    assert (found, rule) == (path, "release-fields")
    assert f"(Kubernetes {since} has)" in message


def test_requests_over_limits_are_refused() -> None:
    [(path, rule, message)] = problems("local", ('requests: {cpu: "1", memory: 1Gi}',
                                                 'requests: {cpu: "1", memory: 8Gi}'))
    assert (path, rule) == ("training.resources.requests.memory", "resources")
    assert "8Gi is more than the limit 4Gi" in message


@pytest.mark.parametrize("budget", sorted(GOLDEN.glob("*/out/k8s/*-poddisruptionbudget-*.yaml")),
                         ids=lambda path: path.parent.parent.parent.name)
def test_every_budget_keeps_every_trainer_with_min_available(budget: Path) -> None:
    spec = YAML(typ="safe", pure=True).load(budget)["spec"]
    nodes = spec_values(budget.parent.parent.parent.name)["training"]["nodes"]
    assert spec["minAvailable"] == nodes and "maxUnavailable" not in spec
