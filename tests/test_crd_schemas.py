"""The vendored schemas of JobSet, Kubeflow Trainer v2 and Kueue (schema/jobset/, schema/trainer/,
schema/kueue/): each kind's minimal object validates through compiler/kube_schema.py, the path the
build uses, and a misspelt field is refused; and the CRDs' CEL rules, kept in the schemas as
`x-kubernetes-validations`, evaluated by tests/cel_rules.py: a valid object keeps them, an object
that breaks one is refused with the rule's message. How the files are made is tested in
test_vendoring.py."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import cel
import pytest

from paddlegen.compiler import kube_schema
from paddlegen.compiler.problems import Violation

import vendor_crds
from cel_rules import UnsupportedRule, cel_violations, rules, with_defaults
from conftest import ROOT

RELEASE = "1.35"  # any release: custom resources are found after the release's own kinds
IMAGE = "paddlepaddle/paddle:3.3.1"

POD_TEMPLATE: dict[str, Any] = {
    "spec": {"restartPolicy": "Never", "containers": [{"name": "paddle", "image": IMAGE}]}}
JOBSET: dict[str, Any] = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"replicatedJobs": [{
        "name": "workers", "replicas": 1,
        "template": {"spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0,
                              "completionMode": "Indexed", "template": POD_TEMPLATE}}}]}}
TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"runtimeRef": {"name": "paddle-distributed", "kind": "TrainingRuntime"},
             "trainer": {"numNodes": 2, "image": IMAGE, "command": ["python", "train.py"]}}}
RUNTIME_SPEC: dict[str, Any] = {
    "mlPolicy": {"numNodes": 2},
    "template": {"spec": {"replicatedJobs": [{
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": IMAGE}]}}}}}]}}}
TRAINING_RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
    "metadata": {"name": "paddle-distributed", "namespace": "default"}, "spec": RUNTIME_SPEC}
CLUSTER_TRAINING_RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "paddle-distributed"}, "spec": RUNTIME_SPEC}
RESOURCE_FLAVOR: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
    "metadata": {"name": "default-flavor"},
    "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": "g5.xlarge"}}}
CLUSTER_QUEUE: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
    "metadata": {"name": "cluster-queue"},
    "spec": {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu", "memory"],
        "flavors": [{"name": "default-flavor",
                     "resources": [{"name": "cpu", "nominalQuota": 9},
                                   {"name": "memory", "nominalQuota": "36Gi"}]}]}]}}
LOCAL_QUEUE: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
    "metadata": {"name": "user-queue", "namespace": "default"},
    "spec": {"clusterQueue": "cluster-queue"}}

VALID = {obj["kind"]: obj for obj in (JOBSET, TRAINJOB, TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME,
                                      RESOURCE_FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE)}
KINDS = {kind.kind: kind for kind in vendor_crds.KINDS}


@cache
def _schema_text(kind: str) -> str:
    return KINDS[kind].output.read_text(encoding="utf-8")


def schema_of(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_schema_text(kind))
    return schema


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of obj with the value at a dotted path (list indices as numbers) set."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def test_every_vendored_kind_has_a_valid_example() -> None:
    assert VALID.keys() == KINDS.keys()


# --- through compiler/kube_schema.py, as the build validates --------------------------------------


@pytest.mark.parametrize("kind", VALID)
def test_a_minimal_object_validates(kind: str) -> None:
    assert kube_schema.violations(VALID[kind], RELEASE) == []


@pytest.mark.parametrize(("kind", "path", "misspelt"), [
    ("JobSet", "spec.replicatedJobs.0", "replica"),
    ("JobSet", "spec.replicatedJobs.0.template.spec.template.spec", "restartPolicies"),
    ("TrainJob", "spec.trainer", "numNode"),
    ("TrainJob", "spec.runtimeRef", "kinds"),
    ("TrainingRuntime", "spec.mlPolicy", "numNode"),
    ("ClusterTrainingRuntime", "spec.template.spec.replicatedJobs.0.template.metadata",
     "label"),
    ("ResourceFlavor", "spec", "nodeLabel"),
    ("ClusterQueue", "spec.resourceGroups.0.flavors.0", "resource"),
    ("LocalQueue", "spec", "clusterqueue"),
])
def test_a_misspelt_field_is_refused(kind: str, path: str, misspelt: str) -> None:
    obj = changed(VALID[kind], f"{path}.{misspelt}", "x")
    [(where, message)] = kube_schema.violations(obj, RELEASE)
    assert ".".join(map(str, where)) == path
    assert f"'{misspelt}' was unexpected" in message


@pytest.mark.parametrize("kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
def test_an_empty_struct_takes_nothing(kind: str) -> None:
    # mlPolicy.jax is `type: object` with no fields: the API server would drop what is put in it.
    assert kube_schema.violations(changed(VALID[kind], "spec.mlPolicy", {"jax": {}}),
                                  RELEASE) == []
    [(where, message)] = kube_schema.violations(
        changed(VALID[kind], "spec.mlPolicy", {"jax": {"numProcPerNode": 8}}), RELEASE)
    assert where == ("spec", "mlPolicy", "jax") and "'numProcPerNode' was unexpected" in message


def test_the_object_s_own_metadata_is_left_to_the_api_server() -> None:
    # As for the PaddleJob: `type: object` in the CRD, ObjectMeta for the API server.
    assert kube_schema.violations(changed(JOBSET, "metadata.label", {}), RELEASE) == []


@pytest.mark.parametrize(("kind", "api_version"), [
    ("LocalQueue", "kueue.x-k8s.io/v1beta1"),  # served by Kueue v0.19.2, deprecated: not vendored
    ("JobSet", "jobset.x-k8s.io/v1alpha1"),
    ("TrainJob", "kubeflow.org/v1"),
])
def test_another_version_is_not_served(kind: str, api_version: str) -> None:
    obj = {**VALID[kind], "apiVersion": api_version}
    assert kube_schema.violations(obj, RELEASE) == [
        ((), f"Kubernetes {RELEASE} serves no {kind} in {api_version}")]


@pytest.mark.parametrize(("kind", "path", "value"), [
    ("JobSet", "spec.replicatedJobs.0.replicas", "2"),
    ("JobSet", "spec.failurePolicy", {"rules": [{"action": "FailJobSet"}]}),  # name required
    ("TrainJob", "spec.managedBy", "x" * 254),  # maxLength 253
    ("TrainJob", "spec.runtimeRef", {"kind": "TrainingRuntime"}),  # name required
    ("ClusterQueue", "spec.queueingStrategy", "FIFO"),  # enum
    ("ResourceFlavor", "spec.nodeLabels",
     {f"k{i}": "v" for i in range(9)}),  # maxProperties 8
])
def test_what_the_crd_types_say_is_checked(kind: str, path: str, value: Any) -> None:
    assert kube_schema.violations(changed(VALID[kind], path, value), RELEASE) != []


# --- the CEL rules ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", VALID)
def test_every_rule_compiles_and_is_found_by_the_walk(kind: str) -> None:
    schema = schema_of(kind)
    found = rules(schema)
    assert len(found) == _schema_text(kind).count('"rule":') > 0
    for _, rule in found:
        cel.compile(rule["rule"])
        assert rule.keys() <= {"rule", "message"}  # no fieldPath, messageExpression, reason


@pytest.mark.parametrize("kind", VALID)
def test_a_valid_object_keeps_every_rule(kind: str) -> None:
    assert cel_violations(VALID[kind], schema_of(kind)) == []


NAME_RULE = "metadata.name must match RFC 1035 DNS label format"
STARTUP = "StartupPolicy and DependsOn APIs are mutually exclusive"
ONE_POLICY = "Only one of the policy can be configured"
NODE_CONTAINER = ("containerNames must not include the main node container because PET_* envs "
                  "are always injected into it")
TARGETS = "spec.mlPolicy.torch.envInjection.targets"


@pytest.mark.parametrize(("kind", "path", "value", "expected"), [
    ("JobSet", "spec.startupPolicy", {"startupPolicyOrder": "InOrder"}, None),
    ("JobSet", "spec.volumeClaimPolicies",
     [{"templates": [{"metadata": {"name": "data", "namespace": "other"}}]}],
     [(("spec", "volumeClaimPolicies", 0),
       "namespace cannot be set for VolumeClaimPolicies templates")]),
    ("TrainJob", "metadata.name", "Train_1", [((), NAME_RULE)]),
    ("TrainJob", "metadata.name", "t" * 64,
     [((), "metadata.name must be no more than 63 characters")]),
    ("TrainJob", "spec.managedBy", "paddlegen",
     [(("spec", "managedBy"), "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                              "kueue.x-k8s.io/multikueue if set")]),
    ("TrainJob", "spec.initializer", {"dataset": {"storageUri": "s3-bucket/data"}},
     [(("spec", "initializer", "dataset", "storageUri"),
       "storageUri may be empty, or it must be a valid URI (scheme://...)")]),
    ("TrainingRuntime", "spec.mlPolicy", {"numNodes": 2, "torch": {}, "mpi": {}},
     [(("spec", "mlPolicy"), ONE_POLICY)]),
    ("ClusterTrainingRuntime", "spec.mlPolicy",
     {"torch": {"envInjection": {"targets": [{"jobName": "node",
                                              "containerNames": ["sidecar", "node"]}]}}},
     [((*TARGETS.split("."), 0, "containerNames"), NODE_CONTAINER)]),
    ("ClusterTrainingRuntime", "spec.mlPolicy.flux", {"numProcPerNode": 0},
     [(("spec", "mlPolicy", "flux", "numProcPerNode"),
       "NumProcPerNode in fluxPolicy must be >= 1")]),
    ("ResourceFlavor", "spec", {"topologyName": "default", "nodeLabels": {}},
     [(("spec",), "at least one nodeLabel is required when topology is set")]),
    ("ResourceFlavor", "spec.tolerations",
     [{"key": "nvidia.com/gpu", "operator": "Exists", "value": "true", "effect": "NoSchedule"}],
     [(("spec", "tolerations"), "a value must be empty when 'operator' is 'Exists'")]),
    ("ResourceFlavor", "spec.nodeTaints", [{"key": "k", "value": "v", "effect": "NoSchedul"}],
     [(("spec", "nodeTaints"),
       "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'")]),
    ("ClusterQueue", "spec.resourceGroups.0.coveredResources", ["cpu", "memory", "nvidia.com/gpu"],
     [(("spec", "resourceGroups", 0),
       "flavors must have the same number of resources as the coveredResources")]),
    ("ClusterQueue", "spec.resourceGroups.0.flavors.0.resources.0.borrowingLimit", 2,
     [(("spec",), "borrowingLimit must be nil when cohort is empty")]),
    ("ClusterQueue", "spec.flavorFungibility", {"preference": "BorrowingOverPreemption"},
     [(("spec", "flavorFungibility"), "preference can only be set when both whenCanBorrow and "
                                      "whenCanPreempt are TryNextFlavor")]),
])
def test_an_object_breaking_a_rule_is_refused_with_its_message(
        kind: str, path: str, value: Any, expected: list[Violation] | None) -> None:
    obj = changed(VALID[kind], path, value)
    if kind == "JobSet" and expected is None:  # the rule spans two fields
        obj["spec"]["replicatedJobs"].insert(0, {**obj["spec"]["replicatedJobs"][0],
                                                 "name": "init"})
        obj["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "init", "status": "Complete"}]
        assert cel_violations(changed(obj, path, {"startupPolicyOrder": "AnyOrder"}),
                              schema_of(kind)) == []
        expected = [(("spec",), STARTUP)]
    assert cel_violations(obj, schema_of(kind)) == expected


def test_the_rules_of_the_trainers_jobset_template_are_the_jobset_s() -> None:
    # A (Cluster)TrainingRuntime's template is a JobSet spec, and carries JobSet's rules.
    spec = copy.deepcopy(JOBSET["spec"])
    spec["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    spec["replicatedJobs"].append({**spec["replicatedJobs"][0], "name": "second",
                                   "dependsOn": [{"name": "workers", "status": "Ready"}]})
    runtime = changed(TRAINING_RUNTIME, "spec.template.spec", spec)
    assert kube_schema.violations(runtime, RELEASE) == []
    assert cel_violations(runtime, schema_of("TrainingRuntime")) == [
        (("spec", "template", "spec"), STARTUP)]


def test_defaults_apply_before_the_rules() -> None:
    # preemption defaults to {} and reclaimWithinCohort to Never: a borrowWithinCohort policy
    # other than Never breaks the rule, as on a cluster.
    queue = changed(CLUSTER_QUEUE, "spec.preemption",
                    {"borrowWithinCohort": {"policy": "LowerPriority"}})
    assert cel_violations(queue, schema_of("ClusterQueue")) == [
        (("spec", "preemption"), "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")]
    defaulted = with_defaults(CLUSTER_QUEUE, schema_of("ClusterQueue"))
    assert defaulted["spec"]["preemption"] == {
        "borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never"}
    assert "preemption" not in CLUSTER_QUEUE["spec"]  # a copy


def test_a_rule_that_cannot_be_evaluated_is_a_violation() -> None:
    # nodeLabels is not set and has no default: "no such key", and the API server refuses it.
    flavor = changed(RESOURCE_FLAVOR, "spec", {"topologyName": "default"})
    [(where, message)] = cel_violations(flavor, schema_of("ResourceFlavor"))
    assert where == ("spec",)
    assert message.endswith("evaluation error: no such key: nodeLabels")


def test_transition_rules_are_not_evaluated() -> None:
    # LocalQueue's only rule makes clusterQueue immutable: a rule of updates (it reads oldSelf).
    [(path, rule)] = rules(schema_of("LocalQueue"))
    assert path == ("spec", "clusterQueue") and "oldSelf" in rule["rule"]
    assert cel_violations(changed(LOCAL_QUEUE, "spec.clusterQueue", "x"),
                          schema_of("LocalQueue")) == []
    transition = sum("oldSelf" in rule["rule"]
                     for kind in VALID for _, rule in rules(schema_of(kind)))
    assert transition > 0


# --- the evaluator itself, on small schemas ---------------------------------------------------


def rule_schema(*validations: dict[str, Any], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties,
            "x-kubernetes-validations": list(validations)}


def test_at_the_root_metadata_holds_only_name_and_generate_name() -> None:
    schema = rule_schema({"rule": "has(self.metadata.name) && !has(self.metadata.labels)"},
                         metadata={"type": "object"})
    assert cel_violations({"metadata": {"name": "a", "labels": {"b": "c"}}}, schema) == []


def test_rules_are_evaluated_on_every_item_and_map_value() -> None:
    positive = {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0",
                                                                 "message": "not positive"}]}
    schema = rule_schema(list={"type": "array", "items": positive},
                         map={"type": "object", "additionalProperties": positive})
    assert cel_violations({"list": [1, 0, 2, -1], "map": {"a": 1, "b": 0}}, schema) == [
        (("list", 1), "not positive"), (("list", 3), "not positive"),
        (("map", "b"), "not positive")]


def test_the_message_of_a_rule() -> None:
    value = {"a": 1}
    assert cel_violations(value, rule_schema({"rule": "self.a == 2"})) == [
        ((), "failed rule: self.a == 2")]
    assert cel_violations(value, rule_schema({"rule": "self.a == 2", "message": "m",
                                              "messageExpression": "'a is ' + string(self.a)"})
                          ) == [((), "a is 1")]
    assert cel_violations(value, rule_schema({"rule": "self.a == 2", "fieldPath": ".a",
                                              "message": "m"})) == [(("a",), "m")]
    assert cel_violations(value, rule_schema({"rule": "self.a"})) == [
        ((), "self.a: evaluated to 1, not a bool")]


def test_what_the_evaluator_would_get_wrong_stops_it() -> None:
    with pytest.raises(UnsupportedRule, match="optionalOldSelf"):
        cel_violations({}, rule_schema({"rule": "self == oldSelf", "optionalOldSelf": True}))
    with pytest.raises(UnsupportedRule, match="fieldPath"):
        cel_violations({"a": 1}, rule_schema({"rule": "false", "fieldPath": "a['b']"}))


def test_the_schema_files_are_those_of_the_script() -> None:
    # The tests read what the build reads.
    for kind in KINDS.values():
        source = kube_schema.SchemaSource(ROOT / "schema" / kind.directory, "")
        assert source.file(kind.api_version, kind.kind) == kind.output
