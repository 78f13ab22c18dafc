"""The eks profile: DESIGN.md's spec builds, eksctl's own schema checks aws/eksctl-cluster.yaml,
the PaddleJob checks against the training operator's CRD, the three launchers, the rules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from ruamel.yaml import YAML

from paddlegen.compiler.build import ManifestError, build, explain
from paddlegen.compiler.kube_schema import violations
from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.writer import write_tree
from paddlegen.profiles import eks
from paddlegen.profiles.aws import eksctl

from conftest import GOLDEN, ROOT, kubectl_or_skip

SPEC = (GOLDEN / "eks" / "spec.yaml").read_text()
# DESIGN.md's eks spec, with exactly these keys: it must build.
DESIGN_SPEC = """\
apiVersion: paddlegen/v1
kind: TrainingJob
metadata: {name: ctr-eks, namespace: ml}
profile: eks
kubeVersion: "1.33"
cluster:
  name: ctr-eks
  region: eu-central-1
  availabilityZones: [eu-central-1a, eu-central-1b]
  accountId: "000123456789"
  workerCount: 4
  workerInstanceType: m5.xlarge
storage:
  efs: {fileSystemId: fs-0123456789abcdef0}
  claimName: ctr-data
  capacity: 200Gi
  request: 100Gi
dataset: {image: paddlepaddle/paddle-tutorial:k8s_data}
training:
  image: paddlepaddle/paddle-tutorial:k8s_train
  launcher: indexed
  nodes: 4
  port: 7164
  portsNum: 2
  portsNumForSparse: 2
  gradientServers: 4
  trainerCount: 2
  nic: eth0
  configDir: quick_start
"""
YAML_SAFE = YAML(typ="safe", pure=True)


def edited(old: str, new: str, text: str = SPEC) -> bytes:
    assert old in text
    return text.replace(old, new).encode()


def kinds(raw: bytes) -> list[str]:
    return [m.obj["kind"] for m in build(raw, "spec.yaml").manifests]


def problems(raw: bytes) -> list[str]:
    with pytest.raises(SpecError) as raised:
        build(raw, "spec.yaml")
    return [str(p) for p in raised.value.problems]


def test_the_design_spec_builds_for_eks_1_33() -> None:
    result = build(DESIGN_SPEC.encode(), "spec.yaml")
    assert result.plan.meta.target.kube.version == "1.33"
    assert [m.path for m in result.manifests][:3] == [
        "k8s/00-namespace-ml.yaml", "k8s/20-persistentvolume-ml-ctr-data.yaml",
        "k8s/21-persistentvolumeclaim-ctr-data.yaml"]
    [job] = [m.obj for m in result.manifests if m.obj["metadata"]["name"] == "ctr-eks"
             and m.obj["kind"] == "Job"]
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 4
    # 1.33 left standard support on 2026-07-29: it builds, with a warning of what it costs
    assert [w.rule for w in result.warnings] == ["eks-support"]


@pytest.mark.parametrize("version", eks.EKS_VERSIONS)
@pytest.mark.parametrize("launcher", ["seed", "indexed", "kubeflow"])
def test_every_launcher_builds_strictly_valid_objects_for_every_eks_release(
        version: str, launcher: str) -> None:
    """build() checks every object against the release's schema (and the PaddleJob against the
    CRD's), strictly, and the ClusterConfig against eksctl's: a refusal raises."""
    raw = edited('kubeVersion: "1.34"', f'kubeVersion: "{version}"',
                 SPEC.replace("launcher: indexed", f"launcher: {launcher}"))
    result = build(raw, "spec.yaml")
    assert result.plan.meta.target.kube.schema == version
    [config] = [a.text for a in result.artifacts if a.path == eks.CLUSTER_CONFIG]
    assert f"version: '{version}'" in config


def test_the_golden_config_is_valid_for_eksctl_itself() -> None:
    config = YAML_SAFE.load(GOLDEN / "eks" / "out" / "aws" / "eksctl-cluster.yaml")
    schema = YAML_SAFE.load(ROOT / "schema" / "eksctl" / "clusterconfig-v1alpha5.json")
    assert list(Draft7Validator(schema).iter_errors(config)) == []  # jsonschema alone
    assert eksctl.violations(config) == []
    assert config["metadata"] == {"name": "paddle-eks", "region": "us-west-2", "version": "1.34",
                                  "tags": {"app.kubernetes.io/managed-by": "paddlegen",
                                           "app.kubernetes.io/part-of": "paddle-cluster-job"}}
    [nodes] = config["managedNodeGroups"]
    assert nodes["desiredCapacity"] == nodes["minSize"] == nodes["maxSize"] == 3
    [driver] = [addon for addon in config["addons"] if addon["name"] == "aws-efs-csi-driver"]
    [association] = driver["podIdentityAssociations"]
    assert association["serviceAccountName"] == "efs-csi-controller-sa"


@pytest.mark.parametrize(("path", "key"), [
    ((), "managedNodegroups"), (("metadata",), "regoin"), (("vpc", "nat"), "gatway"),
    (("managedNodeGroups", 0), "desiredCapcity")])
def test_eksctl_refuses_a_misspelt_key(path: tuple[Any, ...], key: str) -> None:
    config = YAML_SAFE.load(GOLDEN / "eks" / "out" / "aws" / "eksctl-cluster.yaml")
    node = config
    for part in path:
        node = node[part]
    node[key] = 1
    [(where, message)] = eksctl.violations(config)
    assert where == path and f"'{key}' was unexpected" in message


def test_a_config_eksctl_refuses_fails_the_build_at_its_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = eks.cluster_config
    monkeypatch.setattr(eks, "cluster_config", lambda plan: {
        **original(plan), "availabilityZone": "us-west-2a"})
    with pytest.raises(ManifestError) as raised:
        build(SPEC.encode(), "spec.yaml")
    [problem] = raised.value.problems
    assert problem.position.file == "aws/eksctl-cluster.yaml"
    assert "'availabilityZone' was unexpected" in problem.message


def paddle_job() -> dict[str, Any]:
    raw = edited("  launcher: indexed\n", "  launcher: kubeflow\n")
    [job] = [m.obj for m in build(raw, "spec.yaml").manifests if m.obj["kind"] == "PaddleJob"]
    return job


def test_the_paddle_job_is_valid_against_the_operators_crd() -> None:
    job = paddle_job()
    assert violations(job, "1.34") == []
    worker = job["spec"]["paddleReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3 and worker["restartPolicy"] == "Never"
    [container] = worker["template"]["spec"]["containers"]
    assert container["name"] == "paddle"  # the operator's webhook wants it
    assert container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.labels['training.kubeflow.org/replica-index']"
    # no backoffLimit: ignored under restartPolicy Never, with a warning on every reconcile
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "Running",
                                        "activeDeadlineSeconds": 86400}


@pytest.mark.parametrize(("path", "key"), [
    (("spec", "runPolicy"), "cleanPodPolicyy"), (("spec", "paddleReplicaSpecs", "Worker"),
                                                 "replica"), (("spec",), "runpolicy")])
def test_the_crd_refuses_a_wrong_field(path: tuple[str, ...], key: str) -> None:
    job = paddle_job()
    node = job
    for part in path:
        node = node[part]
    node[key] = 1
    [(where, message)] = violations(job, "1.34")
    assert where == path and f"'{key}' was unexpected" in message


@pytest.mark.parametrize(("launcher", "expected"), [
    ("indexed", ["Namespace", "PersistentVolume", "PersistentVolumeClaim", "ConfigMap",
                 "Service", "NetworkPolicy", "PodDisruptionBudget", "Job", "Job"]),
    ("kubeflow", ["Namespace", "PersistentVolume", "PersistentVolumeClaim", "ConfigMap",
                  "NetworkPolicy", "PodDisruptionBudget", "Job", "PaddleJob"]),
    ("seed", ["Namespace", "PersistentVolume", "PersistentVolumeClaim", "ServiceAccount",
              "Role", "RoleBinding", "NetworkPolicy", "PodDisruptionBudget", "Job", "Job"]),
])
def test_each_launcher_brings_its_objects(launcher: str, expected: list[str]) -> None:
    assert kinds(edited("  launcher: indexed\n", f"  launcher: {launcher}\n")) == expected


def test_only_the_seed_launcher_reads_the_api_and_binds_host_ports() -> None:
    for launcher in ("seed", "indexed"):
        raw = edited("  launcher: indexed\n", f"  launcher: {launcher}\n")
        [job] = [m.obj for m in build(raw, "spec.yaml").manifests
                 if m.obj["metadata"]["name"] == "paddle-cluster-job" and m.obj["kind"] == "Job"]
        pod = job["spec"]["template"]["spec"]
        ports = pod["containers"][0]["ports"]
        assert all(("hostPort" in port) == (launcher == "seed") for port in ports)
        assert ("serviceAccountName" in pod) == (launcher == "seed")
        assert pod.get("automountServiceAccountToken", True) == (launcher == "seed")


def test_without_a_file_system_id_the_claim_waits_for_its_volume() -> None:
    result = build(edited("  efs: {fileSystemId: fs-0123456789abcdef0}\n", "  efs: {}\n"),
                   "spec.yaml")
    assert "PersistentVolume" not in [m.obj["kind"] for m in result.manifests]
    [warning] = result.warnings
    assert warning.rule == "efs-file-system" and warning.severity == "warning"
    template = YAML_SAFE.load(next(a.text for a in result.artifacts
                                   if a.path == "aws/efs.cfn.yaml"))
    assert template["Conditions"]["CreateFileSystem"] == {
        "Fn::Equals": [{"Ref": "FileSystemId"}, ""]}


@pytest.mark.parametrize(("old", "new", "message"), [
    ('kubeVersion: "1.34"', 'kubeVersion: "1.29"', "kubeVersion: 1.29 is not an EKS release"),
    ("[us-west-2a, us-west-2b]", "[us-west-2a, us-east-1b]",
     "cluster.availabilityZones[1]: us-east-1b is not in region us-west-2"),
    ("[us-west-2a, us-west-2b]", "[us-west-2a, us-west-2a]",
     "cluster.availabilityZones[1]: us-west-2a is listed twice"),
    ("[us-west-2a, us-west-2b]", "[us-west-2a]",
     "cluster.availabilityZones: needs at least 2 items, not 1"),
    ("  nodes: 3\n", "  nodes: 3\n  launcher: seed\n", "workerCount"),
])
def test_eks_rules(old: str, new: str, message: str) -> None:
    raw = edited(old, new)
    if "launcher: seed" in new:  # hostPorts: one trainer per node
        raw = edited("  workerCount: 3\n", "  workerCount: 2\n", raw.decode())
        raw = raw.replace(b"  launcher: indexed\n", b"")
    assert any(message in line for line in problems(raw)), problems(raw)


def test_kubeflow_names_fit_the_operator() -> None:
    raw = edited("  launcher: indexed\n", "  launcher: kubeflow\n")
    long_name = raw.replace(b"name: paddle-cluster-job", b"name: " + b"j" * 57)
    assert any("at most 63" in line for line in problems(long_name))
    digit = raw.replace(b"name: paddle-cluster-job", b"name: 1-job")
    assert any("starts with a letter" in line for line in problems(digit))


def test_explain_names_the_launcher_and_each_trainers_stable_name() -> None:
    facts = explain(SPEC.encode(), "spec.yaml").facts
    assert facts["launcher"] == "indexed"
    assert facts["stableNames"] == [f"paddle-cluster-job-{i}.paddle-cluster-job"
                                    for i in range(3)]
    assert facts["pservers"] == ",".join(facts["stableNames"])
    kubeflow = explain(edited("  launcher: indexed\n", "  launcher: kubeflow\n"),
                       "spec.yaml").facts
    assert kubeflow["stableNames"] == [f"paddle-cluster-job-worker-{i}" for i in range(3)]


@pytest.mark.conformance
@pytest.mark.parametrize("launcher", ["seed", "indexed", "kubeflow"])
def test_kubectl_kustomize_renders_every_launcher(launcher: str, tmp_path: Path) -> None:
    kubectl = kubectl_or_skip()
    result = build(edited("  launcher: indexed\n", f"  launcher: {launcher}\n"), "spec.yaml")
    write_tree(tmp_path / "out", result.artifacts, force=False)
    rendered = subprocess.run([kubectl, "kustomize", str(tmp_path / "out")],
                              capture_output=True, text=True, check=True).stdout
    assert sorted(d["kind"] for d in YAML_SAFE.load_all(rendered)) == sorted(
        m.obj["kind"] for m in result.manifests)


def golden_objects(name: str) -> dict[str, dict[str, Any]]:
    out = GOLDEN / name / "out"
    return {obj["kind"]: obj for obj in
            (YAML_SAFE.load(path) for path in sorted((out / "k8s").glob("*.yaml")))}


def test_the_golden_tree_runs_seed_003s_training_on_eks() -> None:
    """The facts, asserted on the committed tree (a regenerated wrong golden would not pass)."""
    out = GOLDEN / "eks" / "out"
    found = golden_objects("eks")
    jobs = [YAML_SAFE.load(path) for path in sorted((out / "k8s").glob("*-job-*.yaml"))]
    [data] = [job for job in jobs if job["metadata"]["name"] == "paddle-data"]
    [trainers] = [job for job in jobs if job["metadata"]["name"] == "paddle-cluster-job"]
    spec = trainers["spec"]
    assert (spec["parallelism"], spec["completions"], spec["completionMode"],
            spec["backoffLimit"]) == (3, 3, "Indexed", 0)
    [container] = spec["template"]["spec"]["containers"]
    assert [(p["containerPort"], "hostPort" in p) for p in container["ports"]] == \
        [(7164, False), (7165, False), (7166, False), (7167, False)]
    assert {e["name"]: e["value"] for e in data["spec"]["template"]["spec"]["containers"][0]
            ["env"]}["SPLIT_COUNT"] == "3"
    script = found["ConfigMap"]["data"]["launch.sh"]
    for flag in ("--port=7164", "--ports_num=2", "--ports_num_for_sparse=2",
                 "--num_gradient_servers=3", "--trainer_count=3", "--nics=eth0"):
        assert flag in script
    assert found["Service"]["metadata"]["name"] == spec["template"]["spec"]["subdomain"]
    volume, claim = found["PersistentVolume"], found["PersistentVolumeClaim"]
    assert volume["spec"]["csi"] == {"driver": "efs.csi.aws.com",
                                     "volumeHandle": "fs-0123456789abcdef0",
                                     "volumeAttributes": {"encryptInTransit": "true"}}
    assert volume["spec"]["claimRef"] == {"namespace": "paddle", "name": "efsvol"}
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    config = YAML_SAFE.load(out / "aws" / "eksctl-cluster.yaml")
    [group] = config["managedNodeGroups"]
    assert (group["desiredCapacity"], group["instanceType"]) == (3, "m5.xlarge")


def test_the_eksctl_user_gets_no_way_to_make_itself_an_administrator() -> None:
    """No IAMFullAccess: IAM only on the roles, instance profiles and policies eksctl names
    eksctl-*, and EKS only on this cluster's resources."""
    runbook = (GOLDEN / "eks" / "out" / "RUNBOOK.md").read_text()
    assert "IAMFullAccess" not in runbook and "AmazonEC2FullAccess" in runbook
    policy = json.loads((GOLDEN / "eks" / "out" / "aws" / "iam-policy.json").read_text())
    for statement in policy["Statement"]:
        actions, resources = statement["Action"], statement["Resource"]
        assert "*" not in "".join(actions)
        if any(action.startswith("iam:") for action in actions):
            assert all(r.startswith("arn:aws:iam::123456789012:") for r in resources)
            assert all(":role/*" not in r or actions == ["iam:GetRole", "iam:GetUser"]
                       for r in resources)
        if statement["Sid"] == "EksThisCluster":
            assert all("/paddle-eks" in r for r in resources)


def test_the_efs_volume_asks_for_encryption_in_transit_by_its_attribute() -> None:
    pv = next(m.obj for m in build(SPEC.encode(), "spec.yaml").manifests
              if m.obj["kind"] == "PersistentVolume")
    assert pv["spec"]["csi"]["volumeAttributes"] == {"encryptInTransit": "true"}
    assert "mountOptions" not in pv["spec"]  # "tls" there is deprecated: a warning per mount
