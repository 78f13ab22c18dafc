"""The facts of seed 003, asserted directly on the committed golden tree.

A golden file regenerated from a wrong compiler would still match itself; these would not pass.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from ruamel.yaml import YAML

from conftest import GOLDEN, ROOT

OUT = GOLDEN / "kube-aws" / "out"


def load(relative: str) -> Any:
    return YAML(typ="safe", pure=True).load(OUT / relative)


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted((OUT / "k8s").glob("*.yaml")):
        obj = load(path.relative_to(OUT).as_posix())
        found[(obj["kind"], obj["metadata"]["name"])] = obj
    return found


def container(job: dict[str, Any]) -> dict[str, Any]:
    [only] = job["spec"]["template"]["spec"]["containers"]
    return only


def env(job: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item["value"] for item in container(job)["env"]}


def test_the_tree_has_the_seed_objects_in_apply_order() -> None:
    kinds = [load(f"k8s/{p.name}")["kind"] for p in sorted((OUT / "k8s").glob("*.yaml"))]
    assert kinds == ["PersistentVolume", "PersistentVolumeClaim", "ServiceAccount", "Role",
                     "RoleBinding", "Job", "Job"]


def test_training_job_runs_three_trainers_with_seed_environment(objects: dict) -> None:
    job = objects[("Job", "paddle-cluster-job")]
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 3
    assert env(job) == {
        "JOB_NAME": "paddle-cluster-job",
        "JOB_PATH": "/home/jobpath",
        "JOB_NAMESPACE": "default",
        "TRAIN_CONFIG_DIR": "quick_start",
        "CONF_PADDLE_NIC": "eth0",
        "CONF_PADDLE_PORT": "7164",
        "CONF_PADDLE_PORTS_NUM": "2",
        "CONF_PADDLE_PORTS_NUM_SPARSE": "2",
        "CONF_PADDLE_GRADIENT_NUM": "3",
        "TRAINER_COUNT": "3",
    }
    assert container(job)["image"] == "paddlepaddle/paddle-tutorial:k8s_train"
    assert container(job)["command"] == ["/bin/bash", "-c", "/root/start.sh"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_training_ports_are_7164_to_7167_on_host_and_container(objects: dict) -> None:
    ports = container(objects[("Job", "paddle-cluster-job")])["ports"]
    assert [(p["name"], p["containerPort"], p["hostPort"]) for p in ports] == [
        ("jobport0", 7164, 7164), ("jobport1", 7165, 7165),
        ("jobport2", 7166, 7166), ("jobport3", 7167, 7167)]


def test_trainers_wait_for_the_last_data_part(objects: dict) -> None:
    pod = objects[("Job", "paddle-cluster-job")]["spec"]["template"]["spec"]
    [wait] = pod["initContainers"]
    assert "[ -d /home/jobpath/paddle-cluster-job/2/data ]" in wait["command"][-1]
    assert wait["volumeMounts"] == container(objects[("Job", "paddle-cluster-job")])[
        "volumeMounts"]


def test_no_yaml_anchors_in_any_output() -> None:
    for path in GOLDEN.glob("*/out/**/*.yaml"):
        assert not re.search(r"[&*]id\d+", path.read_text()), path


def test_claim_is_mounted_at_job_path(objects: dict) -> None:
    job = objects[("Job", "paddle-cluster-job")]
    [volume] = job["spec"]["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == "efsvol"
    assert container(job)["volumeMounts"] == [{"name": volume["name"],
                                               "mountPath": "/home/jobpath"}]


def test_data_job_splits_into_one_part_per_trainer(objects: dict) -> None:
    job = objects[("Job", "paddle-data")]
    assert env(job) == {"OUT_DIR": "/efs/paddle-cluster-job", "SPLIT_COUNT": "3"}
    assert container(job)["image"] == "paddlepaddle/paddle-tutorial:k8s_data"
    assert container(job)["volumeMounts"][0]["mountPath"] == "/efs"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_claim_binds_exactly_the_efs_volume(objects: dict) -> None:
    [pv] = [o for (kind, _), o in objects.items() if kind == "PersistentVolume"]
    pvc = objects[("PersistentVolumeClaim", "efsvol")]
    assert pv["metadata"]["name"] == "default-efsvol"  # cluster-wide: one per namespace
    assert pv["spec"]["nfs"] == {"server": "fs-2cbf7385.efs.us-west-2.amazonaws.com", "path": "/"}
    assert pv["spec"]["capacity"] == {"storage": "100Gi"}
    assert pv["spec"]["accessModes"] == pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["resources"]["requests"] == {"storage": "50Gi"}
    # binding made explicit both ways, and no default StorageClass may step in
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["claimRef"] == {"namespace": pvc["metadata"]["namespace"],
                                      "name": pvc["metadata"]["name"]}
    assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""


def test_trainers_may_only_read_pods(objects: dict) -> None:
    job = objects[("Job", "paddle-cluster-job")]
    account = job["spec"]["template"]["spec"]["serviceAccountName"]
    assert ("ServiceAccount", account) in objects
    [role] = [o for (kind, _), o in objects.items() if kind == "Role"]
    [binding] = [o for (kind, _), o in objects.items() if kind == "RoleBinding"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"],
                              "verbs": ["get", "list", "watch"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account,
                                    "namespace": "default"}]


def test_cluster_yaml_has_kube_aws_keys_and_three_workers() -> None:
    assert load("aws/cluster.yaml") == {
        "clusterName": "paddle-cluster",
        "externalDNSName": "paddle",
        "keyName": "paddle-keypair",
        "region": "us-west-2",
        "availabilityZone": "us-west-2a",
        "kmsKeyArn": "arn:aws:kms:us-west-2:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
        "workerCount": 3,
    }
    assert 'kmsKeyArn: "arn:aws:kms:' in (OUT / "aws/cluster.yaml").read_text()


def test_iam_policy_is_the_seed_inline_policy_for_this_account_and_stack() -> None:
    policy = json.loads((OUT / "aws/iam-policy.json").read_text())
    assert policy["Version"] == "2012-10-17"
    kms, stack = policy["Statement"]
    assert kms["Action"] == ["kms:Decrypt", "kms:Encrypt"]
    assert kms["Resource"] == ["arn:aws:kms:*:123456789012:key/*"]
    assert len(stack["Action"]) == 7
    assert all(a.startswith("cloudformation:") for a in stack["Action"])
    assert stack["Resource"] == [
        "arn:aws:cloudformation:us-west-2:123456789012:stack/paddle-cluster/*"]
    sids = [s["Sid"] for s in policy["Statement"]]
    assert len(set(sids)) == len(sids) and all(s.isalnum() for s in sids)
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])


def test_runbook_lists_the_ten_managed_policies() -> None:
    runbook = (OUT / "RUNBOOK.md").read_text()
    arns = [line.strip(" \\") for line in runbook.splitlines()
            if line.strip().startswith("arn:aws:iam::aws:policy/")]
    assert len(arns) == 10
    assert "arn:aws:iam::aws:policy/job-function/NetworkAdministrator" in arns
    assert "arn:aws:iam::aws:policy/AWSKeyManagementServicePowerUser" in arns


def test_kustomization_lists_every_manifest() -> None:
    resources = load("kustomization.yaml")["resources"]
    assert resources == sorted(p.relative_to(OUT).as_posix() for p in (OUT / "k8s").glob("*"))


def test_golden_output_names_no_path_of_this_checkout() -> None:
    for path in OUT.rglob("*"):
        if path.is_file():
            assert str(ROOT) not in path.read_text()
