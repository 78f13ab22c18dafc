"""The facts of seed 003, asserted directly on the committed golden tree.

A golden file regenerated from a wrong compiler would still match itself; these would not pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from conftest import GOLDEN, ROOT

OUT = GOLDEN / "kube-aws" / "out"  # kube-aws v0.9.1, the seeds' release
OUT_V099 = GOLDEN / "kube-aws-v0.9.9" / "out"
OUTS = [OUT, OUT_V099]


def load(relative: str, out: Path = OUT) -> Any:
    return YAML(typ="safe", pure=True).load(out / relative)


Objects = dict[tuple[str, str], dict[str, Any]]  # by kind and name


def objects_of(out: Path) -> Objects:
    found = {}
    for path in sorted((out / "k8s").glob("*.yaml")):
        obj = load(path.relative_to(out).as_posix(), out)
        found[(obj["kind"], obj["metadata"]["name"])] = obj
    return found


@pytest.fixture(scope="module")
def objects() -> Objects:
    return objects_of(OUT)


@pytest.fixture(scope="module", params=OUTS, ids=["v0.9.1", "v0.9.9"])
def each(request: pytest.FixtureRequest) -> Objects:
    """The objects of the seed's golden tree for each kube-aws release."""
    return objects_of(request.param)


def container(job: dict[str, Any]) -> dict[str, Any]:
    [only] = job["spec"]["template"]["spec"]["containers"]
    return dict(only)


def env(job: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item["value"] for item in container(job)["env"]}


def init_containers(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The init containers, from the field (1.6+) or the pod.beta annotation (1.4, 1.5)."""
    template = job["spec"]["template"]
    annotation = template["metadata"].get("annotations", {}).get(
        "pod.beta.kubernetes.io/init-containers")
    assert (annotation is None) != ("initContainers" not in template["spec"])
    return list(json.loads(annotation) if annotation else template["spec"]["initContainers"])


def kinds(out: Path) -> list[str]:
    return [load(f"k8s/{p.name}", out)["kind"] for p in sorted((out / "k8s").glob("*.yaml"))]


def test_the_tree_has_the_seed_objects_in_apply_order() -> None:
    # Kubernetes 1.4.6 has no RBAC (kube-aws v0.9.1 runs the API server without an authorizer):
    # the default service account reads the pods
    assert kinds(OUT) == ["PersistentVolume", "PersistentVolumeClaim", "Job", "Job"]
    # Kubernetes 1.8 has networking.k8s.io/v1: the pservers take connections from trainers only
    # (the files in the order `kubectl apply -f k8s/` reads them: by the rank of their kind)
    assert kinds(OUT_V099) == ["ServiceAccount", "Role", "RoleBinding", "PersistentVolume",
                               "PersistentVolumeClaim", "NetworkPolicy", "Job", "Job"]


def test_training_job_runs_three_trainers_with_seed_environment(each: Objects) -> None:
    job = each[("Job", "paddle-cluster-job")]
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


def test_training_ports_are_7164_to_7167_on_host_and_container(each: Objects) -> None:
    ports = container(each[("Job", "paddle-cluster-job")])["ports"]
    assert [(p["name"], p["containerPort"], p["hostPort"]) for p in ports] == [
        ("jobport0", 7164, 7164), ("jobport1", 7165, 7165),
        ("jobport2", 7166, 7166), ("jobport3", 7167, 7167)]


def test_trainers_wait_for_the_last_file_of_the_last_data_part(each: Objects) -> None:
    job = each[("Job", "paddle-cluster-job")]
    [wait] = init_containers(job)
    # get_data.sh renames 2/data/train.00002 to train.txt last (after copying part 0's)
    assert wait["command"] == [
        "/bin/bash", "-c", 'until [ -f "$1/train.txt" ] && [ ! -e "$1/$2" ]; do sleep 10; done',
        "wait-for-data", "/home/jobpath/paddle-cluster-job/2/data", "train.00002"]
    assert wait["volumeMounts"] == container(job)["volumeMounts"]


def test_every_job_has_a_deadline(each: Objects) -> None:
    assert each[("Job", "paddle-cluster-job")]["spec"]["activeDeadlineSeconds"] == 86400
    assert each[("Job", "paddle-data")]["spec"]["activeDeadlineSeconds"] == 3600


def test_on_1_8_a_failed_trainer_fails_the_job() -> None:
    # the seed entry point cannot take a replacement trainer (a new IP is a new rank); 1.4 has
    # no backoffLimit, and there the deadline ends the Job
    assert objects_of(OUT_V099)[("Job", "paddle-cluster-job")]["spec"]["backoffLimit"] == 0
    assert "backoffLimit" not in objects_of(OUT)[("Job", "paddle-cluster-job")]["spec"]


def test_no_yaml_anchors_in_any_output() -> None:
    for path in GOLDEN.glob("*/out/**/*.yaml"):
        assert not re.search(r"[&*]id\d+", path.read_text()), path


def test_claim_is_mounted_at_job_path(each: Objects) -> None:
    job = each[("Job", "paddle-cluster-job")]
    [volume] = job["spec"]["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == "efsvol"
    assert container(job)["volumeMounts"] == [{"name": volume["name"],
                                               "mountPath": "/home/jobpath"}]


def test_data_job_splits_into_one_part_per_trainer(each: Objects) -> None:
    job = each[("Job", "paddle-data")]
    assert env(job) == {"OUT_DIR": "/efs/paddle-cluster-job", "SPLIT_COUNT": "3"}
    assert container(job)["image"] == "paddlepaddle/paddle-tutorial:k8s_data"
    assert container(job)["volumeMounts"][0]["mountPath"] == "/efs"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_claim_binds_exactly_the_efs_volume(each: Objects) -> None:
    [pv] = [o for (kind, _), o in each.items() if kind == "PersistentVolume"]
    pvc = each[("PersistentVolumeClaim", "efsvol")]
    assert pv["metadata"]["name"] == "default-efsvol"  # cluster-wide: one per namespace
    assert pv["spec"]["nfs"] == {"server": "fs-2cbf7385.efs.us-west-2.amazonaws.com", "path": "/"}
    assert pv["spec"]["capacity"] == {"storage": "100Gi"}
    assert pv["spec"]["accessModes"] == pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["resources"]["requests"] == {"storage": "50Gi"}
    # binding made explicit both ways, and no default StorageClass may step in
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["claimRef"] == {"namespace": pvc["metadata"]["namespace"],
                                      "name": pvc["metadata"]["name"]}


def test_no_storage_class_or_mount_options_on_1_4() -> None:
    pv = objects_of(OUT)[("PersistentVolume", "default-efsvol")]
    assert "storageClassName" not in pv["spec"] and "mountOptions" not in pv["spec"]
    pv = objects_of(OUT_V099)[("PersistentVolume", "default-efsvol")]
    pvc = objects_of(OUT_V099)[("PersistentVolumeClaim", "efsvol")]
    assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""
    assert pv["spec"]["mountOptions"] == ["nfsvers=4.1", "rsize=1048576", "wsize=1048576",
                                          "hard", "timeo=600", "retrans=2"]


def test_on_1_4_the_default_account_reads_the_pods(objects: Objects) -> None:
    pod = objects[("Job", "paddle-cluster-job")]["spec"]["template"]["spec"]
    assert "serviceAccountName" not in pod and "automountServiceAccountToken" not in pod


def test_on_1_8_trainers_may_only_read_pods() -> None:
    objects = objects_of(OUT_V099)
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


def test_v0_9_9_cluster_yaml_has_a_node_pool_of_three_and_an_unmanaged_endpoint() -> None:
    assert load("aws/cluster.yaml", OUT_V099) == {
        "clusterName": "paddle-cluster",
        "keyName": "paddle-keypair",
        "region": "us-west-2",
        "availabilityZone": "us-west-2a",
        "kmsKeyArn": "arn:aws:kms:us-west-2:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
        "apiEndpoints": [{"name": "default", "dnsName": "paddle",
                          "loadBalancer": {"recordSetManaged": False}}],
        "worker": {"nodePools": [{"name": "workers", "count": 3}]},
    }


def test_v0_9_9_may_validate_templates_and_create_its_nested_stacks() -> None:
    policy = json.loads((OUT_V099 / "aws/iam-policy.json").read_text())
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert statements["KubeAwsValidateTemplates"]["Action"] == ["cloudformation:ValidateTemplate"]
    assert statements["KubeAwsClusterStack"]["Resource"] == [
        "arn:aws:cloudformation:us-west-2:123456789012:stack/paddle-cluster/*",
        "arn:aws:cloudformation:us-west-2:123456789012:stack/paddle-cluster-*/*"]


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
    assert kms["Resource"] == [  # the cluster's key alone, not key/* of the account
        "arn:aws:kms:us-west-2:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"]
    assert len(stack["Action"]) == 7
    assert all(a.startswith("cloudformation:") for a in stack["Action"])
    assert stack["Resource"] == [
        "arn:aws:cloudformation:us-west-2:123456789012:stack/paddle-cluster/*"]
    sids = [s["Sid"] for s in policy["Statement"]]
    assert len(set(sids)) == len(sids) and all(s.isalnum() for s in sids)
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])


def attached_policies(runbook: str) -> list[str]:
    """The managed policies the runbook attaches to its IAM group."""
    loop = runbook[:runbook.index("attach-group-policy")].rsplit("for arn in", 1)[1]
    return [line.strip(" \\") for line in loop.splitlines()
            if line.strip().startswith("arn:aws:iam::aws:policy/")]


def test_runbook_lists_the_ten_managed_policies() -> None:
    runbook = (OUT / "RUNBOOK.md").read_text()
    arns = attached_policies(runbook)
    assert len(arns) == 10
    # to a group of its own: the user's quota of ten stays free, and teardown detaches them all
    assert runbook.count("attach-group-policy") == runbook.count("detach-group-policy") == 1
    assert "arn:aws:iam::aws:policy/job-function/NetworkAdministrator" in arns
    assert "arn:aws:iam::aws:policy/AWSKeyManagementServicePowerUser" in arns


@pytest.mark.parametrize("out", OUTS, ids=["v0.9.1", "v0.9.9"])
def test_kustomization_lists_every_manifest(out: Path) -> None:
    resources = load("kustomization.yaml", out)["resources"]  # in apply order: the data Job first
    assert sorted(resources) == sorted(p.relative_to(out).as_posix()
                                       for p in (out / "k8s").glob("*"))
    assert resources[-2:] == ["k8s/90-job-paddle-data.yaml", "k8s/90-job-paddle-cluster-job.yaml"]


def test_golden_output_names_no_path_of_this_checkout() -> None:
    for path in OUT.rglob("*"):
        if path.is_file():
            assert str(ROOT) not in path.read_text()
