"""Rules across fields, warnings, the quantity grammar and the rules reference."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.reference import rules_reference
from paddlegen.compiler.rules import quantity
from paddlegen.compiler.spec import load_spec
from paddlegen.profiles import PROFILES

from conftest import GOLDEN, ROOT, run_cli

KUBE_AWS = (GOLDEN / "kube-aws" / "spec.yaml").read_text()


def problems_of(text: str) -> list[tuple[str, str, str]]:
    with pytest.raises(SpecError) as raised:
        load_spec(text.encode(), "spec.yaml")
    return [(p.path, p.rule, p.message) for p in raised.value.problems]


def with_cluster(extra: str) -> str:
    return KUBE_AWS.replace("  workerCount: 3\n", f"  workerCount: 3\n{extra}")


@pytest.mark.parametrize(("old", "new", "path", "rule", "words"), [
    ("port: 7164", "port: 65534", "training.port", "port-range", "at most 65532"),
    ("gradientServers: 3", "gradientServers: 4", "training.gradientServers",
     "gradient-servers", "at most 3"),
    ("workerCount: 3", "workerCount: 2", "cluster.workerCount", "worker-capacity",
     "raise workerCount to 3"),
    ("availabilityZone: us-west-2a", "availabilityZone: us-east-1a",
     "cluster.availabilityZone", "zone-in-region", "us-west-2a"),
])
def test_each_rule_names_its_field_and_a_fix(old: str, new: str, path: str, rule: str,
                                             words: str) -> None:
    [(found_path, found_rule, message)] = problems_of(KUBE_AWS.replace(old, new))
    assert (found_path, found_rule) == (path, rule)
    assert words in message


@pytest.mark.parametrize(("old", "new", "path", "rule"), [
    ("arn:aws:kms:us-west-2:", "arn:aws:kms:us-east-1:", "cluster.kmsKeyArn", "kms-key-arn"),
    (":123456789012:key/", ":210987654321:key/", "cluster.kmsKeyArn", "kms-key-arn"),
    ("efs.us-west-2.amazonaws", "efs.eu-west-1.amazonaws", "storage.efs.dnsName", "efs-region"),
    ("request: 50Gi", "request: 101Gi", "storage.request", "storage-request"),
    ("s3://paddle-kube-aws-assets/", "s3://paddle..assets/", "cluster.s3Uri", "s3-bucket-name"),
])
def test_aws_values_must_agree(old: str, new: str, path: str, rule: str) -> None:
    assert [(p, r) for p, r, _ in problems_of(KUBE_AWS.replace(old, new))] == [(path, rule)]


@pytest.mark.parametrize(("extra", "path", "words"), [
    ("  instanceCIDR: 10.1.0.0/24\n", "cluster.instanceCIDR", "not inside vpcCIDR"),
    ("  podCIDR: 10.0.128.0/17\n", "cluster.podCIDR", "overlaps vpcCIDR"),
    ("  serviceCIDR: 10.2.0.0/24\n  dnsServiceIP: 10.2.0.10\n", "cluster.serviceCIDR",
     "overlaps podCIDR"),
    ("  dnsServiceIP: 10.4.0.10\n", "cluster.dnsServiceIP", "outside serviceCIDR"),
    ("  dnsServiceIP: 10.3.0.1\n", "cluster.dnsServiceIP", "kubernetes Service"),
    ("  vpcCIDR: 10.0.0.0/33\n", "cluster.vpcCIDR", "not a network"),
    ("  createRecordSet: true\n", "cluster.createRecordSet", "neither is set"),
    ("  createRecordSet: true\n  hostedZone: example.com\n  hostedZoneId: Z123\n",
     "cluster.createRecordSet", "both are set"),
])
def test_kube_aws_network_and_dns_checks(extra: str, path: str, words: str) -> None:
    [(found_path, _, message)] = problems_of(with_cluster(extra))
    assert found_path == path
    assert words in message


def test_kube_aws_settings_reach_cluster_yaml() -> None:
    from paddlegen.compiler.build import build

    spec = with_cluster("  vpcCIDR: 10.8.0.0/16\n  instanceCIDR: 10.8.1.0/24\n"
                        "  createRecordSet: true\n  hostedZoneId: Z2ABCDEF12345\n"
                        "  recordSetTTL: 300\n")
    [cluster] = [a.text for a in build(spec.encode(), "s").artifacts
                 if a.path == "aws/cluster.yaml"]
    assert "vpcCIDR: 10.8.0.0/16\ninstanceCIDR: 10.8.1.0/24\n" in cluster
    assert "createRecordSet: true\nhostedZoneId: Z2ABCDEF12345\nrecordSetTTL: 300\n" in cluster


def test_latest_image_warns_but_passes_unless_strict(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(KUBE_AWS.replace("paddle-tutorial:k8s_train", "paddle-tutorial:latest"))
    lenient = run_cli("build", spec, "-o", tmp_path / "out")
    assert lenient.returncode == 0
    assert f"{spec}:29:10: warning: training.image: " in lenient.stderr
    strict = run_cli("build", spec, "-o", tmp_path / "strict", "--strict")
    assert strict.returncode == 2
    assert not (tmp_path / "strict").exists()
    assert run_cli("validate", spec).returncode == 0
    assert run_cli("validate", "--strict", spec).returncode == 2


@pytest.mark.parametrize(("text", "value"), [
    ("50Gi", 50 * 2**30), ("100G", 100 * 10**9), ("512Mi", 512 * 2**20), ("1.5Gi", 1.5 * 2**30),
    ("100m", Decimal("0.1")), ("1e3", 1000), ("2E", 2 * 10**18), ("+7", 7), (".5Ki", 512),
])
def test_quantity_values(text: str, value: object) -> None:
    assert quantity(text) == Decimal(str(value))


@given(number=st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False),
       suffix=st.sampled_from(["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T",
                               "P", "E", "e3", "E-2"]))
def test_quantity_agrees_with_the_kubernetes_client(number: Decimal, suffix: str) -> None:
    from kubernetes.utils.quantity import parse_quantity

    text = f"{number}{suffix}"
    assert quantity(text) == parse_quantity(text)  # type: ignore[no-untyped-call]


def test_rules_reference_is_current_and_lists_every_rule() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == rules_reference(), (
        "docs/rules.md is stale: paddlegen rules > docs/rules.md")
    for profile in PROFILES.values():
        for rule in profile.rules:
            assert f"| `{rule.name}` |" in rules_reference()
            assert rule.doc, rule.name


KUBE_UP = (GOLDEN / "kube-up" / "spec.yaml").read_text()


@pytest.mark.parametrize(("spec", "version", "words"), [
    (KUBE_AWS, "1.35", "kube-aws v0.9.1 deploys Kubernetes 1.4.6, not 1.35"),
    (KUBE_AWS.replace("  name: paddle-cluster\n", "  name: paddle-cluster\n"
                      "  kubeAwsVersion: v0.9.9\n"), "1.4", "kube-aws v0.9.9 deploys Kubernetes "
                                                            "1.8.4, not 1.4"),
    (KUBE_UP, "1.8", "cluster/kube-up.sh of Kubernetes v1.5.8 deploys Kubernetes 1.5.8"),
])
def test_a_kube_version_other_than_the_target_is_refused(spec: str, version: str,
                                                          words: str) -> None:
    with_version = spec.replace("profile: ", f'kubeVersion: "{version}"\nprofile: ')
    [(path, rule, message)] = problems_of(with_version)
    assert (path, rule) == ("kubeVersion", "kube-version")
    assert words in message


@pytest.mark.parametrize(("spec", "version"), [(KUBE_AWS, "1.4"), (KUBE_UP, "1.5")])
def test_the_derived_kube_version_may_be_written_out(spec: str, version: str) -> None:
    load_spec(spec.replace("profile: ", f'kubeVersion: "{version}"\nprofile: ').encode(), "s")


def test_the_command_line_cannot_move_a_derived_release() -> None:
    with pytest.raises(SpecError) as raised:
        load_spec(KUBE_AWS.encode(), "spec.yaml", kube_version="1.35")
    [problem] = raised.value.problems
    assert (problem.path, problem.rule) == ("kubeVersion", "kube-version")


@pytest.mark.parametrize(("edit", "path", "rule", "words"), [
    (("nodes: 3\n", "nodes: 1\n"), "training.nodes", "split-count", "expr 1 - 1"),
    (("name: paddle-cluster\n", "name: paddle-cluster\n  recordSetTTL: 60\n"),
     "cluster.recordSetTTL", "record-set", "only with createRecordSet"),
])
def test_kube_aws_rules_from_the_tools_own_checks(edit: tuple[str, str], path: str, rule: str,
                                                  words: str) -> None:
    spec = KUBE_AWS.replace(*edit).replace("  gradientServers: 3\n", "")
    [(found_path, found_rule, message)] = problems_of(spec)
    assert (found_path, found_rule) == (path, rule)
    assert words in message


def test_one_part_is_fine_with_a_data_image_of_ones_own() -> None:
    load_spec(KUBE_AWS.replace("nodes: 3", "nodes: 1").replace("workerCount: 3", "workerCount: 1")
              .replace("gradientServers: 3", "gradientServers: 1")
              .replace("image: paddlepaddle/paddle-tutorial:k8s_data", "image: me/data:v1")
              .encode(), "spec.yaml")


def test_v0_9_9_limits_the_cluster_name_by_its_iam_role_name() -> None:
    v099 = KUBE_AWS.replace("  name: paddle-cluster\n", "  name: paddle-training-cluster-east\n"
                            "  kubeAwsVersion: v0.9.9\n")
    [(path, rule, message)] = problems_of(v099)
    assert (path, rule) == ("cluster.name", "iam-role-name")
    # paddle-training-cluster-east-Controlplane-PRK1CVQNY7XZ-us-west-2- has 64 + 1 characters
    assert "at most 27 characters" in message
    load_spec(v099.replace("kubeAwsVersion: v0.9.9", "kubeAwsVersion: v0.9.1").encode(), "s")


def test_v0_9_9_finds_the_hosted_zone_by_id_only() -> None:
    v099 = with_cluster("  kubeAwsVersion: v0.9.9\n  createRecordSet: true\n"
                        "  hostedZone: example.com\n")
    [(path, rule, message)] = problems_of(v099)
    assert (path, rule) == ("cluster.createRecordSet", "record-set")
    assert "hostedZoneId" in message


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public"])
def test_a_system_namespace_is_a_warning(namespace: str) -> None:
    spec = KUBE_AWS.replace("namespace: default", f"namespace: {namespace}")
    [warning] = load_spec(spec.encode(), "spec.yaml").warnings
    assert (warning.path, warning.rule, warning.severity) == (
        "metadata.namespace", "system-namespace", "warning")
    with pytest.raises(SpecError):
        load_spec(spec.encode(), "spec.yaml", strict=True)
