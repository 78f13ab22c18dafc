"""Surviving the cluster: the jobset and trainjob launchers, Kueue's queues and the rules about
them. The facts are asserted on the objects the specs build (so that a wrong golden, regenerated,
cannot pass), each against what JobSet v0.12.0, Kubeflow Trainer v2.3.0 and Kueue v0.19.2 do
(their sources quoted where a fact comes from); every object of the two goldens is checked
against its vendored schema and its CRD's CEL rules; the quota is computed here from the
vendored instance table, not by the code under test."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from paddlegen.compiler import kube_schema
from paddlegen.compiler.build import Build, build
from paddlegen.compiler.problems import Problem, SpecError

from cel_rules import cel_violations
from conftest import GOLDEN, ROOT

EKS_GOLDEN = GOLDEN / "eks-paddle-jobset" / "spec.yaml"
TRAINJOB_GOLDEN = GOLDEN / "kubernetes-trainjob" / "spec.yaml"
# DESIGN.md's "Surviving the cluster" spec, with exactly these keys: it must build.
DESIGN_SPEC = """\
apiVersion: paddlegen/v1
kind: TrainingJob
metadata: {name: ctr-js, namespace: ml}
profile: kubernetes
kubeVersion: "1.35"
storage: {storageClassName: nfs-rwx, request: 50Gi}
training:
  framework: paddle
  image: registry.example.org/acme/ctr-train:1.4
  script: /workspace/train.py
  nodes: 3
  launcher: jobset                   # indexed | jobset | trainjob | kubeflow (legacy PaddleJob)
  restarts: 2                        # whole-job restarts after a failure (jobset, trainjob)
  gracePeriodSeconds: 120            # SIGTERM to SIGKILL: time to save a checkpoint
  queue: team-a                      # Kueue LocalQueue (label kueue.x-k8s.io/queue-name)
"""
# JobSet v0.12.0, pkg/webhooks/jobset_webhook.go: the failure policy's rule names, the reasons
# a rule may name (validOnJobFailureReasons), and the actions that need the RestartJob gate (off
# by default: the webhook refuses them without it).
RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
JOB_FAILURE_REASONS = {"BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes",
                       "MaxFailedIndexesExceeded", "PodFailurePolicy"}
GATED_ACTIONS = {"RestartJob", "RestartJobAndIgnoreMaxRestarts"}
# The actions that restart without counting, or that end the run (no restart to count).
NOT_COUNTED = {"RestartJobSetAndIgnoreMaxRestarts", "FailJobSet"}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"  # JobSet's constants.RestartsKey
# k8s.io/apimachinery's IsDNS1035Label, which JobSet's webhook applies to the longest pod name.
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# The ClusterQueue's flavor names (the vendored CRD's pattern): a DNS subdomain.
FLAVOR_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


TABLE: dict[str, dict[str, Any]] = {
    name: facts for name, facts in
    json.loads((ROOT / "profiles" / "aws" / "instance-types.json").read_text()).items()
    if not name.startswith("_")}
# The allowance for the cluster's own pods as the committed schema states it (training.resources'
# description): millicores and MiB, without EFA and with it.
ALLOWANCE = re.search(
    r"allocatable less (\d+)m CPU and (\d+)Mi memory \((\d+)m and (\d+)Mi with EFA\)",
    (ROOT / "schema" / "paddlegen.schema.json").read_text())


def room(kind: str, efa: bool = False) -> tuple[int, int]:
    """What a node of the type leaves trainer pods, millicores and MiB: the EKS AMI kubelet's
    allocatable (it reserves 6% of the first core, 1% of the second, 0.5% of the next two and
    0.25% of the rest, in tenths of a millicore here; 11 MiB a pod, 255 MiB and the 100 MiB
    eviction threshold) less the stated allowance."""
    assert ALLOWANCE is not None
    facts = TABLE[kind]
    cores = facts["vcpu"]
    reserved = 600 + 100 * min(cores - 1, 1) + 50 * min(max(cores - 2, 0), 2) \
        + 25 * max(cores - 4, 0)
    kept_cpu, kept_mib = map(int, ALLOWANCE.groups()[2:] if efa else ALLOWANCE.groups()[:2])
    return ((cores * 10000 - reserved) // 10 - kept_cpu,
            facts["memoryMiB"] - 11 * facts["maxPods"] - 255 - 100 - kept_mib)


def built(text: str) -> Build:
    return build(text.encode(), "spec.yaml")


def objects(result: Build) -> list[dict[str, Any]]:
    return [m.obj for m in result.manifests]


def one(result: Build, kind: str) -> dict[str, Any]:
    [found] = [obj for obj in objects(result) if obj["kind"] == kind]
    return found


def problems(text: str) -> list[Problem]:
    """The errors that stop the build (the warnings beside them left out)."""
    with pytest.raises(SpecError) as raised:
        built(text)
    return [p for p in raised.value.problems if p.severity == "error"]


def warnings(text: str) -> list[Problem]:
    return list(built(text).warnings)


def at(text: str, key: str) -> int:
    """The line of `key:` (a training field, indented) in a spec's text."""
    return next(number for number, line in enumerate(text.splitlines(), 1)
                if line.lstrip().startswith(f"{key}:"))


def with_training(text: str, **fields: Any) -> str:
    """The spec with training fields set (a None removes one)."""
    for key, value in fields.items():
        name = re.sub(r"_([a-z])", lambda m: m[1].upper(), key)
        text = re.sub(rf"\n  {name}: [^\n]*", "", text)
        if value is not None:
            text = text.replace("\ntraining:\n", f"\ntraining:\n  {name}: {value}\n")
    return text


def with_cluster(text: str, line: str) -> str:
    return text.replace("\ncluster:\n", f"\ncluster:\n  {line}\n")


EKS_SPEC = EKS_GOLDEN.read_text()
TRAINJOB_SPEC = TRAINJOB_GOLDEN.read_text()


def replicated_job(top: dict[str, Any]) -> dict[str, Any]:
    """The only replicated Job of a JobSet's spec (of a TrainingRuntime's template)."""
    spec = top["spec"]["template"]["spec"] if top["kind"] == "TrainingRuntime" else top["spec"]
    only: dict[str, Any]
    [only] = spec["replicatedJobs"]
    return only


def gang_spec(top: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = (top["spec"]["template"]["spec"] if top["kind"] == "TrainingRuntime"
                            else top["spec"])
    return spec


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


GANGS = [pytest.param(DESIGN_SPEC, "JobSet", id="design-jobset"),
         pytest.param(EKS_SPEC, "JobSet", id="eks-paddle-jobset"),
         pytest.param(TRAINJOB_SPEC, "TrainingRuntime", id="kubernetes-trainjob")]


# --- the JobSet, as the gang launchers run it ------------------------------------------------


@pytest.mark.parametrize(("text", "kind"), GANGS)
def test_a_failure_restarts_the_whole_job_at_most_restarts_times(text: str, kind: str) -> None:
    policy = gang_spec(one(built(text), kind))["failurePolicy"]
    assert policy["maxRestarts"] == 2  # each spec's training.restarts
    rules = policy["rules"]
    # JobSet takes the first rule that matches a failed Job; a Job failed by its pod failure
    # policy (a disruption, below) meets the rule that does not count before any other
    assert rules[0]["name"] == "DisruptionsDoNotCount"
    assert rules[0]["action"] == "RestartJobSetAndIgnoreMaxRestarts"
    assert rules[0]["onJobFailureReasons"] == ["PodFailurePolicy"]
    # every other rule ends the run or does not count either; a failure that matches none is
    # RestartJobSet, which counts
    assert all(rule["action"] in NOT_COUNTED for rule in rules)
    deadline = next(rule for rule in rules if "DeadlineExceeded" in rule["onJobFailureReasons"])
    assert deadline["action"] == "FailJobSet"  # a restart would start the deadline's clock again


@pytest.mark.parametrize(("text", "kind"), GANGS)
def test_the_failure_policy_is_one_jobsets_webhook_admits(text: str, kind: str) -> None:
    rules = gang_spec(one(built(text), kind))["failurePolicy"]["rules"]
    names = [rule["name"] for rule in rules]
    assert len(set(names)) == len(names)
    for rule in rules:
        assert RULE_NAME.match(rule["name"]) and 1 <= len(rule["name"]) <= 128, rule["name"]
        assert set(rule["onJobFailureReasons"]) <= JOB_FAILURE_REASONS
        assert rule["action"] not in GATED_ACTIONS
        assert "targetReplicatedJobs" not in rule


@pytest.mark.parametrize(("text", "kind"), GANGS)
def test_a_disruption_fails_the_job_by_its_pod_failure_policy(text: str, kind: str) -> None:
    job = replicated_job(one(built(text), kind))
    assert job["replicas"] == 1
    spec = job["template"]["spec"]
    assert spec["podFailurePolicy"] == {"rules": [{"action": "FailJob", "onPodConditions": [
        {"type": "DisruptionTarget", "status": "True"}]}]}
    # JobSet's webhook defaults an empty restartPolicy to OnFailure, which a Job with a pod
    # failure policy may not have: the JobSet would be admitted, its Jobs refused
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["completionMode"] == "Indexed"
    assert spec["parallelism"] == spec["completions"] == 3
    assert spec["backoffLimit"] == 0  # a lost rank fails the Job, and JobSet restarts them all


@pytest.mark.parametrize(("text", "kind", "grace"), [
    pytest.param(DESIGN_SPEC, "JobSet", 120, id="design-jobset"),
    pytest.param(EKS_SPEC, "JobSet", 90, id="eks-paddle-jobset"),
    pytest.param(TRAINJOB_SPEC, "TrainingRuntime", 120, id="kubernetes-trainjob")])
def test_every_trainer_knows_where_to_save_and_resume_and_has_the_time(
        text: str, kind: str, grace: int) -> None:
    result = built(text)
    pod = replicated_job(one(result, kind))["template"]["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == grace
    [container] = pod["containers"]
    env = env_of(container)
    job_dir = f"/mnt/shared/{result.plan.meta.name}"
    assert env["PADDLEGEN_OUTPUT_DIR"] == f"{job_dir}/output"
    assert env["PADDLEGEN_CHECKPOINT_DIR"] == f"{job_dir}/checkpoints"
    assert {"name": "shared", "mountPath": "/mnt/shared"} in container["volumeMounts"]
    # JobSet labels each Job and pod with its status.restarts when it made the Job
    # (pkg/controllers/jobset_controller.go labelAndAnnotateObject): 0 on the first attempt
    assert env["PADDLEGEN_RESTART_ATTEMPT"] == {
        "fieldRef": {"fieldPath": f"metadata.labels['{RESTART_ATTEMPT_LABEL}']"}}


@pytest.mark.parametrize(("text", "top"), [
    pytest.param(DESIGN_SPEC, "JobSet", id="design-jobset"),
    pytest.param(EKS_SPEC, "JobSet", id="eks-paddle-jobset"),
    pytest.param(TRAINJOB_SPEC, "TrainJob", id="kubernetes-trainjob")])
def test_the_queue_label_is_on_the_top_level_object_only(text: str, top: str) -> None:
    labelled = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if QUEUE_LABEL in node.get("labels", {}):
                labelled.append(path)
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    for obj in objects(built(text)):
        walk(obj, obj["kind"])
    # Kueue suspends and admits the object that carries it, all of its pods at once
    # (site/content/en/docs/tasks/run/jobsets.md, trainjobs.md)
    assert labelled == [f"{top}.metadata"]
    assert one(built(text), top)["metadata"]["labels"][QUEUE_LABEL] == "team-a"


@pytest.mark.parametrize("text", [DESIGN_SPEC, EKS_SPEC, TRAINJOB_SPEC],
                         ids=["design-jobset", "eks-paddle-jobset", "kubernetes-trainjob"])
def test_no_disruption_budget_and_no_service_of_ours(text: str) -> None:
    # a drain goes ahead (the run restarts from its checkpoint, uncounted), and JobSet makes
    # the headless Service of its subdomain itself (createHeadlessSvcIfNecessary)
    kinds = {obj["kind"] for obj in objects(built(text))}
    assert not kinds & {"PodDisruptionBudget", "Service"}


@pytest.mark.parametrize(("text", "kind"), GANGS)
def test_jobset_names_the_pods_in_its_own_subdomain(text: str, kind: str) -> None:
    result = built(text)
    spec = gang_spec(one(result, kind))
    name = result.plan.meta.name
    assert spec["network"] == {"enableDNSHostnames": True, "subdomain": name,
                               "publishNotReadyAddresses": True}
    pod = replicated_job(one(result, kind))["template"]["spec"]["template"]["spec"]
    assert "subdomain" not in pod  # JobSet sets it on the Jobs it makes


def test_the_trainjob_runs_the_namespaced_runtime_written_beside_it() -> None:
    result = built(TRAINJOB_SPEC)
    runtime, train_job = one(result, "TrainingRuntime"), one(result, "TrainJob")
    # runtimeRef's kind defaults to ClusterTrainingRuntime: the namespaced one is named
    assert train_job["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
        "name": runtime["metadata"]["name"]}
    assert runtime["metadata"]["namespace"] == train_job["metadata"]["namespace"] == "ml"
    assert train_job["spec"]["trainer"]["numNodes"] == 3
    # Trainer v2.3.0 drives the replicated Job that carries its ancestor label, and only its
    # container named `node` (pkg/runtime/framework/plugins/jobset/builder.go)
    job = replicated_job(runtime)
    assert job["template"]["metadata"]["labels"][
        "trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    [container] = job["template"]["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "node"
    objs = objects(result)
    assert objs.index(runtime) < objs.index(train_job)  # the runtime exists when the job comes


def test_the_design_spec_builds_a_jobset_and_no_queue_of_its_own() -> None:
    result = built(DESIGN_SPEC)
    assert [obj["kind"] for obj in objects(result)] == [
        "PersistentVolumeClaim", "NetworkPolicy", "JobSet"]
    assert one(result, "JobSet")["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert result.warnings == ()


# --- every object valid: schema and CEL rules -------------------------------------------------


def golden_objects() -> list[Any]:
    """Each object of the two goldens by its committed file (k8s/NN-kind-name.yaml); the test
    checks the object the spec builds into that file."""
    return [pytest.param(spec, path.name, id=f"{spec.parent.name}-{path.stem}")
            for spec in (EKS_GOLDEN, TRAINJOB_GOLDEN)
            for path in sorted((spec.parent / "out" / "k8s").glob("*.yaml"))]


def crd_schema(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The vendored CRD schema of a custom resource's kind; None for Kubernetes' own kinds."""
    for source in kube_schema.extra_sources():
        path = source.file(obj["apiVersion"], obj["kind"])
        if path.is_file():
            schema: dict[str, Any] = json.loads(path.read_bytes())
            return schema
    return None


@pytest.mark.parametrize(("spec", "name"), golden_objects())
def test_every_object_of_the_goldens_is_valid_and_keeps_its_crds_rules(
        spec: Path, name: str) -> None:
    result = build(spec.read_bytes(), "spec.yaml")
    [obj] = [m.obj for m in result.manifests if m.path == f"k8s/{name}"]
    assert obj["kind"].lower() == name.split("-")[1]
    release = result.plan.meta.target.kube.schema
    assert kube_schema.violations(obj, release) == []
    assert kube_schema.fast_valid(obj, release)  # decided without jsonschema
    schema = crd_schema(obj)
    if obj["kind"] in ("JobSet", "TrainJob", "TrainingRuntime", "ResourceFlavor", "ClusterQueue",
                       "LocalQueue"):
        assert schema is not None
    if schema is not None:
        assert cel_violations(obj, schema) == []


# --- Kueue's objects on eks -----------------------------------------------------------------


def test_the_queues_come_after_the_namespace_and_before_what_they_admit() -> None:
    kinds = [obj["kind"] for obj in objects(built(EKS_SPEC))]
    assert kinds == ["Namespace", "ResourceFlavor", "ClusterQueue", "LocalQueue",
                     "PersistentVolume", "PersistentVolumeClaim", "NetworkPolicy", "JobSet"]


def test_the_cluster_queue_holds_what_the_node_group_leaves_trainer_pods() -> None:
    result = built(EKS_SPEC)
    flavor, queue, local = (one(result, kind) for kind in
                            ("ResourceFlavor", "ClusterQueue", "LocalQueue"))
    # three g6.xlarge (workerCount unset: one pod of one GPU a node), each its kubelet's
    # allocatable less the allowance for the cluster's own pods
    millicores, mib = room("g6.xlarge")
    assert (millicores, mib) == (3370, 14339)
    [group] = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    [quota] = group["flavors"]
    assert quota == {"name": "g6.xlarge", "resources": [
        {"name": "cpu", "nominalQuota": f"{3 * millicores}m"},
        {"name": "memory", "nominalQuota": f"{3 * mib}Mi"},
        {"name": "nvidia.com/gpu", "nominalQuota": str(3 * TABLE["g6.xlarge"]["gpus"])}]}
    assert queue["spec"]["namespaceSelector"] == {}  # every namespace; absent: none
    assert queue["metadata"]["name"] == "trainers" and "namespace" not in queue["metadata"]
    # Kueue puts the flavor's nodeLabels into the admitted pods' nodeSelector: the node group's
    assert flavor["metadata"]["name"] == "g6.xlarge" and "namespace" not in flavor["metadata"]
    assert flavor["spec"]["nodeLabels"] == {"node.kubernetes.io/instance-type": "g6.xlarge",
                                            "eks.amazonaws.com/nodegroup": "trainers"}
    config = result.plan.cluster
    assert config.worker_instance_type == "g6.xlarge" and config.worker_count == 3
    assert local["metadata"] | {"labels": None} == {"name": "team-a", "namespace": "paddle",
                                                     "labels": None}
    assert local["spec"] == {"clusterQueue": "trainers"}


def requested(container: dict[str, Any]) -> set[str]:
    resources = container.get("resources", {})
    return {*resources.get("requests", {}), *resources.get("limits", {})}


@pytest.mark.parametrize("kind", ["g6.xlarge", "g5.12xlarge", "p4d.24xlarge", "m5.2xlarge"])
def test_every_resource_a_trainer_requests_is_covered(kind: str) -> None:
    # Kueue leaves a workload that requests a resource its ClusterQueue does not cover
    # unadmitted (flavorassigner.go: "resource ... unavailable in ClusterQueue")
    gpus = TABLE[kind]["gpus"]
    text = with_training(EKS_SPEC, gpus_per_node=gpus)
    text = text.replace("workerInstanceType: g6.xlarge", f"workerInstanceType: {kind}")
    efa = TABLE[kind]["efaInterfaces"] > 0
    if efa:
        text = with_cluster(text, "efa: true")
    result = built(text)
    queue, jobset = one(result, "ClusterQueue"), one(result, "JobSet")
    [group] = queue["spec"]["resourceGroups"]
    pod = replicated_job(jobset)["template"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert requested(container) <= set(group["coveredResources"])
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    workers = result.plan.cluster.worker_count
    if efa:
        assert quota["vpc.amazonaws.com/efa"] == str(workers * TABLE[kind]["efaInterfaces"])
    if gpus:
        assert quota["nvidia.com/gpu"] == str(workers * gpus)
    millicores, mib = room(kind, efa)
    assert (quota["cpu"], quota["memory"]) == (f"{workers * millicores}m", f"{workers * mib}Mi")


def test_every_type_of_the_table_names_a_flavor_kueue_takes() -> None:
    assert [kind for kind in TABLE if not FLAVOR_NAME.match(kind)] == []


def test_on_kubernetes_a_queue_is_only_the_label() -> None:
    # the cluster's admin owns its queues; the tree names the LocalQueue and nothing else
    kinds = {obj["kind"] for obj in objects(built(TRAINJOB_SPEC))}
    assert not kinds & {"ResourceFlavor", "ClusterQueue", "LocalQueue"}


def test_without_a_queue_eks_writes_no_queue() -> None:
    kinds = {obj["kind"] for obj in objects(built(with_training(EKS_SPEC, queue=None)))}
    assert not kinds & {"ResourceFlavor", "ClusterQueue", "LocalQueue"}


# --- the rules ------------------------------------------------------------------------------


@pytest.mark.parametrize("launcher", ["indexed", "kubeflow"])
def test_restarts_needs_a_launcher_that_restarts_the_whole_job(launcher: str) -> None:
    text = with_training(EKS_SPEC, launcher=launcher, queue=None)
    [problem] = problems(text)
    assert (problem.path, problem.rule) == ("training.restarts", "restarts")
    assert problem.position.line == at(text, "restarts")
    assert f"the {launcher} launcher cannot restart the whole job" in problem.message
    assert "launcher: jobset" in problem.message


def test_a_grace_period_shorter_than_the_launchers_stop_is_a_warning() -> None:
    text = with_training(TRAINJOB_SPEC, grace_period_seconds=20)
    [warning] = warnings(text)
    assert (warning.path, warning.rule, warning.severity) == (
        "training.gracePeriodSeconds", "grace-period", "warning")
    assert warning.position.line == at(text, "gracePeriodSeconds")
    assert "at least 35" in warning.message
    assert warnings(with_training(TRAINJOB_SPEC, grace_period_seconds=35)) == []


def test_a_paddlejob_in_a_queue_is_warned_of_kueues_deprecation() -> None:
    text = with_training(TRAINJOB_SPEC, launcher="kubeflow", restarts=None)
    found = {w.path: w for w in warnings(text)}
    queue = found["training.queue"]
    assert (queue.rule, queue.position.line) == ("legacy-operator", at(text, "queue"))
    assert "Kueue deprecated its PaddleJob integration" in queue.message
    assert "v0.20" in queue.message
    assert found["training.launcher"].rule == "legacy-operator"


def over_quota_spec(workers: int) -> str:
    return with_cluster(EKS_SPEC, f"workerCount: {workers}")


def test_a_job_over_its_queues_quota_is_one_error_at_the_queue() -> None:
    text = over_quota_spec(2)  # three pods of a whole node each, two nodes
    [problem] = problems(text)
    assert (problem.path, problem.rule) == ("training.queue", "queue-quota")
    assert problem.position.line == at(text, "queue")
    millicores, mib = room("g6.xlarge")
    assert (f"the 3 trainer pods need {3 * millicores}m cpu, {3 * mib}Mi memory and 3 "
            f"nvidia.com/gpu; the ClusterQueue trainers holds {2 * millicores}m, {2 * mib}Mi "
            "and 2 (what the node group, 2 nodes of g6.xlarge, leaves trainer pods), so Kueue "
            "would never admit the job; raise cluster.workerCount to 3, or lower "
            "training.nodes to 2") == problem.message
    # without the queue the same cause is the node group's: Pending pods
    [alone] = problems(with_training(text, queue=None))
    assert (alone.path, alone.rule) == ("cluster.workerCount", "node-group-capacity")


def test_a_job_within_its_quota_that_no_node_packs_is_the_node_groups() -> None:
    # three CPU pods of 2 CPUs on two m5.xlarge nodes (3.37 CPUs each for trainers): the 6 CPUs
    # fit the quota of 6.74, but no node holds two pods, so the third would stay Pending
    text = with_training(over_quota_spec(2), resources="{requests: {cpu: '2'}}",
                         gpus_per_node=None)
    text = text.replace("workerInstanceType: g6.xlarge", "workerInstanceType: m5.xlarge")
    assert room("m5.xlarge")[0] == 3370
    [problem] = problems(text)
    assert (problem.path, problem.rule) == ("cluster.workerCount", "node-group-capacity")


def test_a_pod_no_node_holds_is_the_instances_not_the_queues() -> None:
    text = with_training(over_quota_spec(2), resources="{requests: {cpu: '5'}}")
    [problem] = problems(text)
    assert (problem.path, problem.rule) == ("training.resources.requests.cpu",
                                            "instance-capacity")


def test_a_type_paddlegen_does_not_know_has_no_quota_to_write() -> None:
    text = with_training(EKS_SPEC, resources="{requests: {cpu: '1', memory: 1Gi}}",
                         gpus_per_node=None)
    text = text.replace("workerInstanceType: g6.xlarge", "workerInstanceType: t3.small")
    assert "t3.small" not in TABLE  # a real type the table lacks
    [problem] = problems(text)
    assert (problem.path, problem.rule) == ("training.queue", "instance-type")
    assert "cannot write the quota of the node group's ClusterQueue" in problem.message
    # without the queue it builds, with the warning of what goes unchecked
    [warning] = warnings(with_training(text, queue=None))
    assert warning.rule == "unknown-instance-type"


# --- the names JobSet's webhook takes --------------------------------------------------------


def longest_pod_name(name: str, replicated_job: str, nodes: int) -> str:
    """JobSet's webhook: GenPodName(<jobset>, <replicated job>, <replicas-1>, <completions-1>)
    and a 5-character suffix (pkg/webhooks/jobset_webhook.go)."""
    return f"{name}-{replicated_job}-0-{nodes - 1}-abcde"


def admitted(name: str, replicated_job: str, nodes: int) -> bool:
    pod = longest_pod_name(name, replicated_job, nodes)
    return len(pod) <= 63 and bool(DNS_1035.match(pod)) and bool(DNS_1035.match(name))


@pytest.mark.parametrize(("launcher", "replicated_job", "text"), [
    ("jobset", "trainer", DESIGN_SPEC), ("trainjob", "node", TRAINJOB_SPEC)])
@pytest.mark.parametrize("nodes", [3, 11])
def test_the_job_name_is_one_jobsets_webhook_admits(
        launcher: str, replicated_job: str, text: str, nodes: int) -> None:
    text = with_training(text, launcher=launcher, nodes=nodes)
    longest = next(length for length in range(1, 64)
                   if not admitted("a" * (length + 1), replicated_job, nodes))
    for length in (longest, longest + 1):
        name = "a" * length
        spec = re.sub(r"metadata: \{name: [^,]+,", f"metadata: {{name: {name},", text)
        spec = re.sub(r"\n  name: [^\n]+\n  namespace", f"\n  name: {name}\n  namespace", spec)
        if admitted(name, replicated_job, nodes):
            built(spec)
            continue
        [problem] = problems(spec)
        assert (problem.path, problem.rule) == ("metadata.name", f"{launcher}-names")
        assert f"shorten the name to {longest} characters" in problem.message
    [problem] = problems(re.sub(r"name: (ctr-[a-z]+)", r"name: 1\1", text, count=1))
    assert (problem.path, problem.rule) == ("metadata.name", f"{launcher}-names")


def test_an_old_release_refuses_the_gang_launchers_without_pointing_paddle_at_seed() -> None:
    """The launcher rule names what each launcher needs, and never advises seed, a PaddlePaddle
    v1 launcher, to a PaddlePaddle 3 spec (kubernetes still targets 1.8 for the tutorials)."""
    spec = (GOLDEN / "kubernetes" / "spec.yaml").read_text()
    for launcher in ("jobset", "trainjob"):
        old = spec.replace('kubeVersion: "1.37"', 'kubeVersion: "1.8"').replace(
            "launcher: indexed", f"launcher: {launcher}")
        with pytest.raises(SpecError) as raised:
            build(old.encode(), "spec.yaml")
        [problem] = [str(p) for p in raised.value.problems if "[launcher]" in str(p)]
        assert problem.endswith("which the " + launcher + " launcher needs; target a current "
                                "Kubernetes release [launcher]"), problem
