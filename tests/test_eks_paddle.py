"""Framework paddle on eks (PaddlePaddle 3, collective): DESIGN.md's spec builds, the facts of the
wiring hold on the golden trees, each framework refuses the other's fields, and the instance
type's capacity is checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.build import build, explain
from paddlegen.compiler.problems import SpecError

from conftest import GOLDEN

# DESIGN.md's paddle spec, with exactly these keys: it must build.
DESIGN_SPEC = """\
apiVersion: paddlegen/v1
kind: TrainingJob
metadata: {name: ctr-p3, namespace: ml}
profile: eks
cluster:
  name: ctr-p3
  region: us-west-2
  availabilityZones: [us-west-2a, us-west-2b]
  accountId: "000123456789"
  workerCount: 2
  workerInstanceType: g5.xlarge
storage:
  efs: {fileSystemId: fs-0123456789abcdef0}
  claimName: ctr-data
  capacity: 200Gi
  request: 100Gi
training:
  framework: paddle
  image: registry.example.org/acme/ctr-train:1.4
  script: /workspace/train.py
  args: ["--epochs", "3"]
  nodes: 2
  gpusPerNode: 1
  launcher: indexed
"""
YAML_SAFE = YAML(typ="safe", pure=True)
INDEXED, KUBEFLOW = GOLDEN / "eks-paddle", GOLDEN / "eks-paddle-kubeflow"


def objects(golden: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {
        path.name.split("-", 2)[1]: YAML_SAFE.load(path.read_text())
        for path in sorted((golden / "out" / "k8s").glob("*.yaml"))}
    return found


def container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    only: dict[str, Any]
    [only] = pod_spec["containers"]
    return only


def env_of(item: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in item["env"]}


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as raised:
        build(text.encode(), "spec.yaml")
    return [str(p) for p in raised.value.problems]


def test_the_design_spec_builds_and_each_pod_runs_the_launcher_with_the_script() -> None:
    result = build(DESIGN_SPEC.encode(), "spec.yaml")
    job = next(m.obj for m in result.manifests if m.obj["kind"] == "Job")
    command = container(job["spec"]["template"]["spec"])["command"]
    assert command[:3] == ["python", "-m", "paddle.distributed.launch"]
    assert command[-3:] == ["/workspace/train.py", "--epochs", "3"]
    assert not any(m.obj["metadata"]["name"] == "paddle-data" for m in result.manifests)


def test_the_indexed_golden_wires_index_0_as_the_master() -> None:
    found = objects(INDEXED)
    job, service = found["job"], found["service"]
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    nodes = 2
    assert (spec["completions"], spec["parallelism"]) == (nodes, nodes)
    assert spec["completionMode"] == "Indexed" and spec["backoffLimit"] == 0
    assert pod["subdomain"] == service["metadata"]["name"] == "linear"
    assert service["spec"]["clusterIP"] == "None"
    c = container(pod)
    command, env = c["command"], env_of(c)
    # fully qualified: the kubelet writes pod 0's own into its /etc/hosts, so pod 0 resolves
    # itself before the cluster DNS has it (a short name would end its launcher on gaierror)
    master = "linear-0.linear.paddle.svc.cluster.local:36543"
    assert command[command.index("--master") + 1] == master
    assert command[command.index("--nnodes") + 1] == str(nodes)
    assert command[command.index("--nproc_per_node") + 1] == "1"
    assert command[command.index("--log_dir") + 1].startswith("/mnt/shared/linear/logs/$(")
    # declared before the entries that use it: the Job controller appends its own after them
    assert next(iter(env)) == "JOB_COMPLETION_INDEX"
    # pod 0: the master's host
    assert env["POD_IP"] == "linear-$(JOB_COMPLETION_INDEX).linear.paddle.svc.cluster.local"
    assert env["PADDLE_RANK"] == "$(JOB_COMPLETION_INDEX)"
    assert c["ports"] == [{"name": "master", "containerPort": 36543}]


def test_gpus_get_limits_and_every_trainer_shared_memory_and_a_writable_tmp() -> None:
    pod = objects(INDEXED)["job"]["spec"]["template"]["spec"]
    c = container(pod)
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    # a quarter of the memory limit (tests/test_eks_capacity.py checks the rule)
    assert volumes[mounts["/dev/shm"]]["emptyDir"] == {"medium": "Memory", "sizeLimit": "3584Mi"}
    assert volumes[mounts["/tmp"]]["emptyDir"] == {}
    assert volumes[mounts["/mnt/shared"]]["persistentVolumeClaim"] == {"claimName": "efsvol"}
    cpu_pod = objects(KUBEFLOW)["paddlejob"]["spec"]["paddleReplicaSpecs"]["Worker"]["template"]
    cpu = container(cpu_pod["spec"])
    assert "nvidia.com/gpu" not in cpu["resources"].get("limits", {})
    cpu_volumes = {v["name"]: v for v in cpu_pod["spec"]["volumes"]}
    cpu_mounts = {m["mountPath"]: m["name"] for m in cpu["volumeMounts"]}
    assert cpu_volumes[cpu_mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"


def test_the_paddlejob_leaves_the_wiring_to_the_operator() -> None:
    worker = objects(KUBEFLOW)["paddlejob"]["spec"]["paddleReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3 and worker["restartPolicy"] == "Never"
    c = container(worker["template"]["spec"])
    assert c["name"] == "paddle"  # the operator takes no other
    assert c["ports"] == [{"name": "master", "containerPort": 36543}]
    assert not {"--master", "--nnodes", "--job_id"} & set(c["command"])
    env = env_of(c)
    assert not {"PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB_ID"} & set(env)
    assert env["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}


@pytest.mark.parametrize("golden", [INDEXED, KUBEFLOW])
def test_every_port_is_open_between_the_jobs_pods_and_no_trainer_is_evicted(
        golden: Path) -> None:
    found = objects(golden)
    [rule] = found["networkpolicy"]["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP"}]  # the launcher's and gloo's ports are random
    assert rule["from"] == [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/instance": "linear", "app.kubernetes.io/component": "trainer"}}}]
    budget = found["poddisruptionbudget"]["spec"]
    assert budget["minAvailable"] == (2 if golden == INDEXED else 3)
    assert "maxUnavailable" not in budget  # needs a scale subresource Jobs lack


def test_explain_prints_each_pods_command_and_environment() -> None:
    facts = explain((INDEXED / "spec.yaml").read_bytes(), "spec.yaml").facts
    first, second = facts["processes"]
    assert first["env"]["POD_IP"] == "linear-0.linear.paddle.svc.cluster.local"
    assert second["env"]["PADDLE_RANK"] == "1"
    assert "--log_dir" in first["trainer"]["argv"]
    assert "/mnt/shared/linear/logs/linear-1-<suffix>" in second["trainer"]["argv"]
    kubeflow = explain((KUBEFLOW / "spec.yaml").read_bytes(), "spec.yaml").facts["processes"]
    assert kubeflow[0]["env"]["PADDLE_MASTER"] == "<the pod's IP>:36543"
    assert kubeflow[2]["env"]["PADDLE_MASTER"] == "linear-worker-0:36543"


@pytest.mark.parametrize("golden", [INDEXED, KUBEFLOW])
def test_every_trainer_knows_where_to_save_and_the_launcher_leaves_the_master_port_alone(
        golden: Path) -> None:
    found = objects(golden)
    pod = (found["job"]["spec"]["template"] if golden == INDEXED else
           found["paddlejob"]["spec"]["paddleReplicaSpecs"]["Worker"]["template"])
    env = env_of(container(pod["spec"]))
    assert env["PADDLEGEN_OUTPUT_DIR"] == "/mnt/shared/linear/output"
    assert env["PADDLEGEN_CHECKPOINT_DIR"] == "/mnt/shared/linear/checkpoints"
    # paddle/distributed/launch/context/node.py takes its free ports from PORT_RANGE,
    # 35100:64000 by default, which holds the master port 36543
    low, high = map(int, env["PORT_RANGE"].split(":"))
    assert not low <= 36543 <= high and (low, high) == (36544, 64000)


@pytest.mark.parametrize(("port", "expected"), [
    (36543, "36544:64000"), (60000, "35100:59999"), (35100, "35101:64000"),
    (64000, "35100:63999"), (8080, "35100:64000"), (64001, "35100:64000")])
def test_the_launchers_port_range_leaves_out_the_master_port(port: int, expected: str) -> None:
    from paddlegen.compiler.collective import port_range
    assert port_range(port) == expected


def test_a_lost_peer_ends_a_kubeflow_run_within_the_process_groups_timeout() -> None:
    kubeflow = objects(KUBEFLOW)["paddlejob"]["spec"]["paddleReplicaSpecs"]["Worker"]
    assert env_of(container(kubeflow["template"]["spec"]))["PADDLE_PG_TIMEOUT"] == "600000"
    indexed = env_of(container(objects(INDEXED)["job"]["spec"]["template"]["spec"]))
    assert "PADDLE_PG_TIMEOUT" not in indexed  # a lost pod fails the Job: nothing waits


def test_explain_names_each_pods_ranks() -> None:
    spec = edited("workerInstanceType: g5.xlarge", "workerInstanceType: p4d.24xlarge")
    result = explain(spec.replace("gpusPerNode: 1", "gpusPerNode: 8").encode(), "spec.yaml")
    assert [p["ranks"] for p in result.facts["processes"]] == [list(range(8)),
                                                              list(range(8, 16))]
    from paddlegen.compiler.explain import explanation_text
    text = explanation_text(result)
    assert "\npod 0: ranks 0-7\n" in text and "\npod 1: ranks 8-15\n" in text


@pytest.mark.parametrize("launcher", ["indexed", "kubeflow"])
def test_the_job_name_makes_a_service_name_for_either_launcher(launcher: str) -> None:
    spec = edited("launcher: indexed", f"launcher: {launcher}")
    digit = [p for p in problems(spec.replace("name: ctr-p3, namespace", "name: 3ctr, namespace"))
             if ": warning: " not in p]
    assert digit == [f"spec.yaml:3:18: metadata.name: the {launcher} launcher names a Service "
                     "after the job, and a Service's name starts with a letter (a DNS-1035 "
                     f"label) [{launcher}-names]"]


def edited(old: str, new: str, text: str = DESIGN_SPEC) -> str:
    assert old in text
    return text.replace(old, new)


def test_fields_of_paddle_v1_are_refused_with_paddle_at_their_line() -> None:
    found = problems(edited("  nodes: 2\n", "  nodes: 2\n  portsNum: 2\n  nic: eth0\n"))
    assert found == [
        "spec.yaml:23:13: training.portsNum: a field of framework paddle-v1, not of paddle; "
        "remove it, or set training.framework: paddle-v1 [framework-fields]",
        "spec.yaml:24:8: training.nic: a field of framework paddle-v1, not of paddle; remove "
        "it, or set training.framework: paddle-v1 [framework-fields]"]


def test_fields_of_paddle_are_refused_with_paddle_v1() -> None:
    spec = (GOLDEN / "eks" / "spec.yaml").read_text()
    found = problems(spec.replace("  nodes: 3\n", "  nodes: 3\n  gpusPerNode: 1\n"))
    assert len(found) == 1 and "training.gpusPerNode: a field of framework paddle," in found[0]


def test_paddle_needs_a_script_and_a_launcher_that_is_not_the_images() -> None:
    found = problems(edited("  script: /workspace/train.py\n", "").replace(
        "launcher: indexed", "launcher: seed"))
    assert any("training.script: framework paddle needs it [framework-fields]" in p for p in found)
    assert any("training.launcher: the seed launcher" in p for p in found)


def test_without_a_framework_a_spec_of_v1_fields_is_paddle_v1() -> None:
    v1 = (GOLDEN / "eks" / "spec.yaml").read_text().replace("  framework: paddle-v1\n", "")
    result = build(v1.encode(), "spec.yaml")
    assert result.plan.training.__class__.__name__ == "PserverTraining"
    design = build(DESIGN_SPEC.replace("  framework: paddle\n", "").encode(), "spec.yaml")
    assert design.plan.training.__class__.__name__ == "CollectiveTraining"


def test_efa_gives_each_pod_every_adapter_of_its_node_and_nccl_its_provider() -> None:
    spec = edited("workerInstanceType: g5.xlarge",
                  "workerInstanceType: p4d.24xlarge\n  efa: true")
    result = build(spec.replace("gpusPerNode: 1", "gpusPerNode: 8").encode(), "spec.yaml")
    job = next(m.obj for m in result.manifests if m.obj["kind"] == "Job")
    c = container(job["spec"]["template"]["spec"])
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == "4"  # p4d.24xlarge has 4
    assert env_of(c)["FI_PROVIDER"] == "efa" and env_of(c)["FI_EFA_USE_DEVICE_RDMA"] == "1"
    config = YAML_SAFE.load(next(a.text for a in result.artifacts
                                 if a.path == "aws/eksctl-cluster.yaml"))
    [group] = config["managedNodeGroups"]
    assert group["efaEnabled"] is True and group["availabilityZones"] == ["us-west-2a"]


def test_efa_needs_a_type_that_has_it_and_framework_paddle() -> None:
    found = problems(edited("workerInstanceType: g5.xlarge", "workerInstanceType: g5.xlarge\n"
                            "  efa: true"))
    assert found == ["spec.yaml:12:8: cluster.efa: g5.xlarge has no Elastic Fabric Adapter; "
                     "choose a type with one [instance-capacity]"]
    v1 = (GOLDEN / "eks" / "spec.yaml").read_text().replace(
        "workerInstanceType: m5.xlarge", "workerInstanceType: p4d.24xlarge\n  efa: true")
    assert any("cluster.efa: EFA serves PaddlePaddle 3's collective" in p for p in problems(v1))


def test_an_unknown_region_is_named_and_its_zones_are_not_blamed() -> None:
    found = problems(DESIGN_SPEC.replace("region: us-west-2", "region: us-west-9"))
    assert found == ["spec.yaml:7:11: cluster.region: us-west-9 is not an AWS region; did you "
                     "mean 'us-west-2'? [aws-region]"]


def test_unset_kube_version_is_the_newest_in_standard_support_on_the_calendars_date() -> None:
    result = build(DESIGN_SPEC.encode(), "spec.yaml")
    assert result.plan.meta.target.kube.version == "1.35" and result.warnings == ()


def test_a_release_past_standard_support_warns_with_its_date_and_price(
        monkeypatch: pytest.MonkeyPatch) -> None:
    old = DESIGN_SPEC.replace("profile: eks\n", 'profile: eks\nkubeVersion: "1.33"\n')
    [warning] = build(old.encode(), "spec.yaml").warnings
    assert str(warning) == (
        "spec.yaml:5:14: warning: kubeVersion: EKS 1.33 left standard support on 2026-07-29: "
        "the cluster costs $0.60 an hour instead of $0.10 until 2027-07-29, when EKS upgrades "
        "it; use 1.35 [eks-support]")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1806883200")  # 2027-04-05: 1.35's has ended too
    current = DESIGN_SPEC.replace("profile: eks\n", 'profile: eks\nkubeVersion: "1.35"\n')
    [later] = build(current.encode(), "spec.yaml").warnings
    assert "EKS 1.35 left standard support on 2027-03-27" in str(later)


def test_no_warning_stands_next_to_an_error_about_the_same_field() -> None:
    found = problems(DESIGN_SPEC.replace("fs-0123456789abcdef0", "fs-zz"))
    assert len(found) == 1 and "storage.efs.fileSystemId: 'fs-zz' is not" in found[0]


def test_the_runbook_says_what_the_cluster_costs_and_what_it_needs_first() -> None:
    runbook = (INDEXED / "out" / "RUNBOOK.md").read_text()
    before = runbook[runbook.index("## Before you start"):runbook.index("\n## 0. ")]
    # 2 g5.xlarge at $1.006 an hour (the table has us-east-1's alone for g5), the control
    # plane's $0.10 and the NAT gateway's $0.045 (us-east-2's alone)
    assert "| 2 x g5.xlarge, on demand | $2.012 (us-east-1's price) |" in before
    assert "| EKS control plane (1.34, standard support) | $0.10 |" in before
    assert "| one NAT gateway | $0.045 (us-east-2's price) |" in before
    assert "| total | $2.157 |" in before
    assert 'EC2 quota for 8 vCPUs of "Running On-Demand G and VT instances"' in before
    assert "docker" in before and "git" not in before  # an indexed run needs no operator
    kubeflow = (KUBEFLOW / "out" / "RUNBOOK.md").read_text()
    assert "git, with which kubectl fetches the training operator's manifests" in kubeflow
