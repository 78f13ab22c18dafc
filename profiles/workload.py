"""The training a profile for today's clusters runs (eks, kubernetes): PaddlePaddle 3's
collective launcher (framework paddle, the default) or the tutorials' PaddlePaddle v1 parameter
server (paddle-v1), started by an Indexed Job or Kubeflow's PaddleJob. Its spec model, rules,
derivation and objects; the profile brings the cluster and the shared volume."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel

from paddlegen.compiler import collective, kube_expansion
from paddlegen.compiler.collective import (
    GANG_LAUNCHERS,
    REPLICATED_JOB,
    CollectiveLauncher,
    CollectiveTraining,
)
from paddlegen.compiler.explain import common_facts, pserver_explanation
from paddlegen.compiler.kube_objects import (
    Object,
    data_job,
    headless_service,
    launcher_config_map,
    namespace,
    network_policy,
    paddle_job,
    pod_disruption_budget,
    pod_reader,
    training_job,
)
from paddlegen.compiler.launcher import launcher_script
from paddlegen.compiler.plan import (
    DataJob,
    Meta,
    PserverTraining,
    SharedVolume,
    claim_jobs,
    resources_of,
)
from paddlegen.compiler.profile import Explanation
from paddlegen.compiler.rules import Rule, Violation, dataset_image_tag, quantity, rule
from paddlegen.compiler.targets import KubeRelease
from paddlegen.profiles.aws.capacity import MIB, allowance_words
from paddlegen.schema import patterns as p
from paddlegen.schema.json_schema import condition
from paddlegen.schema.models import (
    ClusterTraining,
    DatasetSettings,
    Metadata,
    Resources,
    SpecModel,
    deadline,
    text,
    ttl,
)

TRAINING_OPERATOR = "v1.9.4"  # Kubeflow's training operator, the last v1 (PaddleJob) release
OPERATOR_MANIFESTS = ("github.com/kubeflow/trainer.git/manifests/overlays/standalone"
                      f"?ref={TRAINING_OPERATOR}")

Framework = Literal["paddle", "paddle-v1"]
# PaddlePaddle v1's fields, and the tutorial's values (seed 003) for those a paddle-v1 spec leaves
# out; PaddlePaddle 3's fields. Each framework refuses the other's (rule framework-fields).
V1_DEFAULTS: dict[str, object] = {
    "image": "paddlepaddle/paddle-tutorial:k8s_train", "port": 7164, "portsNum": 2,
    "portsNumForSparse": 2, "trainerCount": 3, "nic": "eth0", "configDir": "quick_start",
    "jobPath": "/home/jobpath"}
V1_FIELDS = ("port", "ports_num", "ports_num_for_sparse", "gradient_servers", "trainer_count",
             "nic", "config_dir", "job_path")
PADDLE_FIELDS = ("script", "args", "gpus_per_node", "master_port", "restarts",
                 "grace_period_seconds", "queue")
# The launchers of paddle-v1 (the tutorials'), and those only PaddlePaddle 3 runs: JobSet, and
# Kubeflow Trainer v2's TrainJob on it, restart the whole gang from its newest checkpoint.
V1_LAUNCHERS = ("seed", "indexed", "kubeflow")
WorkloadLauncher = Literal["seed", "indexed", "kubeflow", "jobset", "trainjob"]
# A whole-gang restart after a failure: transient ones (a NCCL timeout, a GPU's Xid, a node
# lost) are common on GPU fleets, and each restart costs one start-up plus the steps since the
# newest checkpoint; a script that fails for good fails the run after this many.
RESTARTS = 3
# SIGTERM to SIGKILL: PaddlePaddle 3.3.1's launcher passes SIGTERM to its trainers at once, waits
# 30 s for them, then kills them and exits (launch/controllers/controller.py, launch/job/
# container.py, launch/utils/process_context.py): measured 31-32 s. Below LAUNCHER_STOP_SECONDS
# the kubelet's SIGKILL can cut a checkpoint the script is saving.
GRACE_PERIOD_SECONDS = 120  # a spot instance's notice
LAUNCHER_STOP_SECONDS = 35
V1_DATA_IMAGE = "paddlepaddle/paddle-tutorial:k8s_data"
MASTER_PORT = 36543  # the training operator's default for a PaddleJob's master port
# A paddle-v1 trainer pod's resources where the spec gives none: the tutorial stacks'
# (kube-aws.yaml, kube-up.yaml), a pserver and a trainer of trainerCount threads.
V1_RESOURCES = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "6Gi"}}
# /dev/shm of every trainer: a memory-backed emptyDir, whose pages count against the pod's memory
# limit. DataLoader workers hand batches over through it and NCCL its intra-node buffers; the
# runtime's 64 MB is too little for either. A quarter of the memory limit (Linux's own /dev/shm
# takes half of RAM), at most 64Gi: more is a leak, not a need. Without a memory limit, 1Gi: the
# --shm-size NVIDIA gives its containers.
SHM_SHARE = 4
SHM_MAX_MIB = 64 * 1024
SHM_WITHOUT_LIMIT = "1Gi"


RESOURCES_DESCRIPTION = (
    "CPU and memory of each trainer pod, used as given. Unset on eks with framework paddle, "
    "sized to the instance type: requests = limits (Guaranteed QoS), each pod an equal share of "
    "what a node leaves trainer pods, shared by one pod a node on CPU and by the type's GPUs // "
    "gpusPerNode on GPUs. What a node leaves them is the EKS AMI kubelet's allocatable less "
    f"{allowance_words()}. With paddle-v1 on eks, the tutorial's: 1 CPU and 2Gi requested, at "
    "most 2 and 6Gi. The kubernetes profile sets those as its default instead: it knows nothing "
    "of the cluster's nodes. Every trainer's /dev/shm is memory-backed, counted against the "
    f"memory limit, and holds at most 1/{SHM_SHARE} of it (DataLoader workers and NCCL use it), "
    f"{SHM_MAX_MIB // 1024}Gi at most; {SHM_WITHOUT_LIMIT} without a memory limit.")


def framework_schema(schema: dict[str, Any]) -> None:
    """training's JSON Schema by framework (its json_schema_extra), as the loader reads a spec:
    the keys of one framework are properties of its branch alone (if/then/else), and
    unevaluatedProperties refuses every other key, so that an editor completes and accepts only
    the framework's keys. paddle is the framework written, or, absent, that of a spec that sets
    no key only paddle-v1 has (WorkloadTraining.prepared); it needs an image and a script (as
    the rule framework-fields says)."""
    properties = schema["properties"]  # keyed by alias: the spec's JSON Schema is by alias
    v1 = {key: properties.pop(key) for key in map(to_camel, V1_FIELDS)}
    paddle = {key: properties.pop(key) for key in map(to_camel, PADDLE_FIELDS)}
    # The test is for paddle, not paddle-v1: completing, yaml-language-server takes a value
    # for a const it begins, and "paddle" begins "paddle-v1".
    written_paddle = {"required": ["framework"],
                      "properties": {"framework": condition(properties["framework"],
                                                            {"const": "paddle"})}}
    inferred_paddle = {"not": {"anyOf": [{"required": [key]} for key in ("framework", *v1)]}}
    del schema["additionalProperties"]  # blind to the branches' properties; see below
    schema.update({
        "if": {"anyOf": [written_paddle, inferred_paddle]},
        "then": {"title": "PaddlePaddle 3 (framework paddle)", "properties": paddle,
                 "required": ["image", "script"]},
        "else": {"title": "PaddlePaddle v1 (framework paddle-v1)", "properties": v1},
        "unevaluatedProperties": False})


class WorkloadTraining(SpecModel, title="Training", json_schema_extra=framework_schema):
    """The training run: PaddlePaddle 3's collective launcher (framework paddle, the default) or
    PaddlePaddle v1's parameter server of the tutorials (framework paddle-v1)."""

    framework: Framework = Field(default="paddle", description=(
        "paddle: PaddlePaddle 3, `python -m paddle.distributed.launch`, data-parallel; "
        "paddle-v1: the tutorials' parameter server (`paddle pserver` and `paddle train`). "
        "Absent: paddle-v1 if the spec sets a field only paddle-v1 has (specs written before "
        "this field), else paddle."))

    @classmethod
    def prepared(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A spec without a framework is paddle-v1's if it sets one of its fields (also read by
        the partial validation of a spec with errors)."""
        if "framework" in data:
            return data
        v1 = any(to_camel(name) in data for name in V1_FIELDS)
        return {**data, "framework": "paddle-v1" if v1 else "paddle"}

    @model_validator(mode="before")
    @classmethod
    def inferred_framework(cls, data: Any) -> Any:
        return cls.prepared(data) if isinstance(data, dict) else data
    image: Annotated[str | None, text(p.IMAGE, (
        "Image of the trainers: with paddle, yours, with PaddlePaddle 3 and your script; with "
        "paddle-v1, the tutorial's by default."))] = None
    nodes: Annotated[
        int, Field(ge=1, le=1000, description="Trainer pods; parallelism = completions = nodes.")
    ]
    launcher: WorkloadLauncher = Field(description=(
        "How the trainers are run and find each other: indexed (an Indexed Job and a headless "
        "Service: ranks are completion indexes, peers stable DNS names; no controller needed; "
        "the first lost pod fails the run), jobset (paddle: a JobSet, JobSet v0.12.0: the same "
        "pods, and a failure restarts the whole job from its newest checkpoint), trainjob "
        "(paddle: Kubeflow Trainer v2.3.0's TrainJob and the TrainingRuntime paddlegen writes "
        "for it, on JobSet), kubeflow (Kubeflow's legacy PaddleJob, training operator v1) or, "
        "with paddle-v1, seed (the image's own start script)."))
    resources: Resources | None = Field(default=None, description=RESOURCES_DESCRIPTION)
    active_deadline_seconds: Annotated[int, deadline("the training run")]
    ttl_seconds_after_finished: Annotated[int | None, ttl("the training Job")] = None
    script: Annotated[str | None, text(p.ABSOLUTE_PATH, (
        "paddle: the training script, an absolute path inside the image."))] = None
    args: list[Annotated[str, text(p.ARGUMENT)]] | None = Field(
        default=None, max_length=256, description=(
            "paddle: the script's arguments, passed as written: a `$` stays a `$` (paddlegen "
            "doubles it in the pod's command, so that the kubelet's $(VAR) expansion leaves "
            "it), and $(VAR) is not expanded; the script reads the environment itself."))
    gpus_per_node: Annotated[int | None, Field(ge=0, le=64, description=(
        "paddle: GPUs of each pod (nvidia.com/gpu), one trainer process each; 0, the "
        "default: CPU, one process, over gloo."))] = None
    master_port: Annotated[int | None, Field(ge=1, le=65535, description=(
        "paddle: the rendezvous port of the launcher on pod 0 (default 36543)."))] = None
    restarts: Annotated[int | None, Field(ge=0, le=100, description=(
        "paddle, with jobset or trainjob: how many times a failure restarts the whole job, "
        f"each time from its newest checkpoint (default {RESTARTS}); then the run fails. A "
        "disruption (an eviction, a node drain, a spot reclaim) restarts it without "
        "counting."))] = None
    grace_period_seconds: Annotated[int | None, Field(ge=0, le=86400, description=(
        "paddle: from SIGTERM to SIGKILL, the time a trainer has to save a checkpoint "
        f"(terminationGracePeriodSeconds; default {GRACE_PERIOD_SECONDS}, a spot instance's "
        "notice). PaddlePaddle's launcher kills its trainers 30 s after SIGTERM whatever this "
        f"says, so a save must finish within that; below {LAUNCHER_STOP_SECONDS} s the "
        "kubelet may kill the launcher first."))] = None
    queue: Annotated[str | None, text(p.DNS_LABEL, (
        "paddle: the Kueue LocalQueue that admits the run, all of its pods or none (the label "
        "kueue.x-k8s.io/queue-name on the JobSet, TrainJob, Job or PaddleJob). On eks "
        "paddlegen also writes it in the job's namespace, the ClusterQueue `trainers` it "
        "points to, whose quota is what the node group leaves trainer pods, and their "
        "ResourceFlavor, the node group's nodes; on kubernetes only the label: the cluster's "
        "admin owns its queues."))] = None
    port: Annotated[int | None, Field(ge=1, le=65535, description=(
        "paddle-v1: first pserver port (--port); default 7164."))] = None
    ports_num: Annotated[int | None, Field(ge=1, le=100, description=(
        "paddle-v1: ports for dense updates (--ports_num); default 2."))] = None
    ports_num_for_sparse: Annotated[int | None, Field(ge=0, le=100, description=(
        "paddle-v1: ports for sparse updates (--ports_num_for_sparse); default 2."))] = None
    gradient_servers: Annotated[int | None, Field(ge=1, le=1000, description=(
        "paddle-v1: --num_gradient_servers; defaults to nodes."))] = None
    trainer_count: Annotated[int | None, Field(ge=1, le=1024, description=(
        "paddle-v1: trainer threads per pod (TRAINER_COUNT); default 3."))] = None
    nic: Annotated[str | None, text(p.NIC, (
        "paddle-v1: network interface the pservers bind (--nics); default eth0."))] = None
    config_dir: Annotated[str | None, text(p.PATH_SEGMENT, (
        "paddle-v1: directory of the trainer config under the job directory; default "
        "quick_start."))] = None
    job_path: Annotated[str | None, text(p.ABSOLUTE_PATH, (
        "paddle-v1: where the shared volume is mounted in the trainer (JOB_PATH); default "
        "/home/jobpath."))] = None


class WorkloadDataset(DatasetSettings):
    """The data-preparation Job; with paddle, there is one only if its image is given."""

    # optional here, required in the shared model: pydantic takes the narrower override
    image: Annotated[str | None, text(p.IMAGE, (
        "Image of the data-preparation Job; with paddle-v1 the tutorial's by default, with "
        "paddle none: no data Job."))] = None  # type: ignore[assignment]


class WithWorkload(Protocol):
    """The parts of a spec the workload reads."""

    @property
    def metadata(self) -> Metadata: ...
    @property
    def training(self) -> WorkloadTraining: ...
    @property
    def dataset(self) -> WorkloadDataset: ...
    @property
    def as_v1(self) -> Any: ...
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False
                   ) -> Any: ...


def v1_training(training: WorkloadTraining) -> ClusterTraining:
    """The parameter-server settings of a paddle-v1 spec, the tutorial's values filled in."""
    given = training.model_dump(by_alias=True, exclude_none=True,
                                exclude={"framework", "resources", *PADDLE_FIELDS})
    if training.launcher not in V1_LAUNCHERS:
        given["launcher"] = "indexed"  # the rule framework-fields reports it
    return ClusterTraining.model_validate(
        {**V1_DEFAULTS, **given,
         "resources": v1_resources(training).model_dump(by_alias=True, exclude_none=True)})


def v1_resources(training: WorkloadTraining) -> Resources:
    """A paddle-v1 trainer pod's resources: the spec's, over the tutorial's."""
    given = (training.resources.model_dump(by_alias=True, exclude_none=True)
             if training.resources else {})
    return Resources.model_validate({kind: {**values, **given.get(kind, {})}
                                     for kind, values in V1_RESOURCES.items()})


def v1_dataset(dataset: WorkloadDataset) -> DatasetSettings:
    return DatasetSettings.model_validate(
        {**dataset.model_dump(by_alias=True, exclude_none=True),
         "image": dataset.image or V1_DATA_IMAGE})


# What as_v1 needs valid, besides the fields the tutorial's values fill in: a rule that reads a
# spec through it reads these too.
AS_V1_READS = ("training.framework", "training.nodes", "training.launcher", "training.resources",
               "training.activeDeadlineSeconds", "dataset.image", "dataset.jobName",
               "dataset.resources", "dataset.activeDeadlineSeconds")


class WorkloadSpec:
    """What the spec models of the workload's profiles share besides their fields (a base
    before the model's own, so that its model_copy is the one called)."""

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False
                   ) -> Any:
        """The copy, without the view cached from this spec: an update may change it."""
        copied = super().model_copy(update=update, deep=deep)  # type: ignore[misc]
        copied.__dict__.pop("as_v1", None)
        return copied

    @cached_property
    def as_v1(self: WithWorkload) -> Any:
        """A paddle-v1 spec as the shared parameter-server rules read it, made once: ten
        rules and the derivation read it."""
        return self.model_copy(update={"training": v1_training(self.training),
                                       "dataset": v1_dataset(self.dataset)})


def v1_only(shared: Rule[Any]) -> Rule[WithWorkload]:
    """A parameter-server rule, for paddle-v1 specs only."""
    def check(spec: WithWorkload) -> Iterable[Violation]:
        if spec.training.framework == "paddle-v1":
            yield from shared.check(spec.as_v1)
    check.__doc__ = shared.doc
    return Rule(shared.name, check, shared.severity, (*shared.reads, *AS_V1_READS))


def either(shared: Rule[Any], applies: Callable[[WithWorkload], bool] = lambda spec: True,
           applies_reads: tuple[str, ...] = ()) -> Rule[WithWorkload]:
    """A rule of both frameworks, reading a paddle-v1 spec with the tutorial's values, and a
    paddle spec where `applies` (which reads the fields `applies_reads`; the rule
    framework-fields reports what it lacks)."""
    def check(spec: WithWorkload) -> Iterable[Violation]:
        if spec.training.framework == "paddle-v1":
            yield from shared.check(spec.as_v1)
        elif spec.training.image is not None and applies(spec):
            yield from shared.check(spec)
    check.__doc__ = shared.doc
    return Rule(shared.name, check, shared.severity,
                (*shared.reads, *AS_V1_READS, "training.image", *applies_reads))


# The data image's tag, where there is a data Job: paddle-v1 always, paddle if given an image.
data_image_tag = either(dataset_image_tag, lambda spec: spec.dataset.image is not None,
                        ("dataset.image",))


FRAMEWORK_FIELDS = {"paddle": V1_FIELDS, "paddle-v1": PADDLE_FIELDS}


@rule("framework-fields", reads=(
    "training.framework", "training.image", "training.script", "training.launcher",
    *(f"training.{to_camel(name)}" for name in (*V1_FIELDS, *PADDLE_FIELDS))))
def framework_fields(spec: WithWorkload) -> Iterable[Violation]:
    """training's fields belong to its framework: port, portsNum, portsNumForSparse,
    gradientServers, trainerCount, nic, configDir and jobPath only to paddle-v1 (PaddlePaddle
    v1's parameter server); script, args, gpusPerNode, masterPort, restarts,
    gracePeriodSeconds and queue only to paddle (PaddlePaddle 3); paddle needs an image and a
    script, and runs with the indexed, jobset, trainjob or kubeflow launcher; jobset and
    trainjob run only paddle."""
    t = spec.training
    other = "paddle-v1" if t.framework == "paddle" else "paddle"
    for name in FRAMEWORK_FIELDS[t.framework]:
        if getattr(t, name) is not None:
            field = WorkloadTraining.model_fields[name].alias or name
            yield ("training", field), (
                f"a field of framework {other}, not of {t.framework}; remove it, or set "
                f"training.framework: {other}")
    if t.framework != "paddle":
        if t.launcher not in V1_LAUNCHERS:
            yield ("training", "launcher"), (
                f"the {t.launcher} launcher runs PaddlePaddle 3 (framework paddle); paddle-v1 "
                "runs with seed, indexed or kubeflow")
        return
    for name in ("image", "script"):
        if getattr(t, name) is None:
            yield ("training", name), "framework paddle needs it"
    if t.launcher == "seed":
        yield ("training", "launcher"), ("the seed launcher runs the tutorial image's start "
                                         "script, for paddle-v1; use jobset, indexed, "
                                         "trainjob or kubeflow")


# The names the launchers give: the training operator names worker i's pod and Service
# <job>-worker-<i>; the Job controller names pod i's host <job>-<i> in the Service <job>. Service
# names are DNS-1035 labels (a letter first), host names DNS-1123 labels: at most 63 characters.
DNS_LABEL_LIMIT = 63


def launcher_names(launcher: str, last_pod: Callable[[str, int], str], doc: str
                   ) -> Rule[WithWorkload]:
    """The rule that the job's name makes valid names for `launcher`'s Service and pods."""
    def check(spec: WithWorkload) -> Iterable[Violation]:
        if spec.training.launcher != launcher:
            return
        name = spec.metadata.name
        last = last_pod(name, spec.training.nodes - 1)
        if not name[0].isalpha():
            yield ("metadata", "name"), (
                f"the {launcher} launcher names a Service after the job, and a Service's name "
                "starts with a letter (a DNS-1035 label)")
        elif len(last) > DNS_LABEL_LIMIT:
            yield ("metadata", "name"), (
                f"the last pod's name would be {last} ({len(last)} characters, at most "
                f"{DNS_LABEL_LIMIT}); shorten the name to "
                f"{len(name) - len(last) + DNS_LABEL_LIMIT} characters")
    check.__doc__ = doc
    return Rule(f"{launcher}-names", check, "error",
                ("training.launcher", "training.nodes", "metadata.name"))


kubeflow_names = launcher_names(
    "kubeflow", lambda name, last: f"{name}-worker-{last}",
    """With the kubeflow launcher, the job's name is one the training operator takes: it starts
    with a letter, and <name>-worker-<nodes-1> (a pod's and its Service's name) has at most 63
    characters.""")
indexed_names = launcher_names(
    "indexed", lambda name, last: f"{name}-{last}",
    """With the indexed launcher, the job's name makes its headless Service and the pods' host
    names: it starts with a letter (a Service's name is a DNS-1035 label), and <name>-<nodes-1>
    (the last pod's host name) has at most 63 characters.""")
# JobSet's webhook (v0.12.0, pkg/webhooks/jobset_webhook.go) refuses a pod name
# <jobset>-<replicated job>-<job index>-<completion index>-<5-character suffix> over 63.
jobset_names = launcher_names(
    "jobset", lambda name, last: f"{name}-{REPLICATED_JOB['jobset']}-0-{last}-xxxxx",
    """With the jobset launcher, the job's name makes the JobSet's Service and its pods' names:
    it starts with a letter, and <name>-trainer-0-<nodes-1>-<5-character suffix> (the last
    pod's name, which JobSet's webhook checks) has at most 63 characters.""")
trainjob_names = launcher_names(
    "trainjob", lambda name, last: f"{name}-{REPLICATED_JOB['trainjob']}-0-{last}-xxxxx",
    """With the trainjob launcher, the job's name makes the JobSet's Service and its pods'
    names: it starts with a letter, and <name>-node-0-<nodes-1>-<5-character suffix> (the last
    pod's name, which JobSet's webhook checks) has at most 63 characters.""")


@rule("restarts", reads=("training.framework", "training.launcher", "training.restarts"))
def restarts(spec: WithWorkload) -> Iterable[Violation]:
    """training.restarts is set only with a launcher that restarts the whole job (jobset or
    trainjob): an Indexed Job cannot take a replacement for a lost rank, and the training
    operator's PaddleJob recreates one pod, whose peers never regroup."""
    t = spec.training
    if t.framework == "paddle" and t.restarts is not None and t.launcher not in GANG_LAUNCHERS:
        yield ("training", "restarts"), (
            f"the {t.launcher} launcher cannot restart the whole job; use launcher: jobset "
            "(or trainjob), or remove restarts")


@rule("grace-period", severity="warning",
      reads=("training.framework", "training.gracePeriodSeconds"))
def grace_period(spec: WithWorkload) -> Iterable[Violation]:
    """training.gracePeriodSeconds leaves PaddlePaddle's launcher the time it takes to stop
    (it kills its trainers 30 s after SIGTERM and exits about 2 s later): at least 35 s, or
    the kubelet's SIGKILL may cut a checkpoint being saved."""
    t = spec.training
    if t.framework == "paddle" and t.grace_period_seconds is not None \
            and t.grace_period_seconds < LAUNCHER_STOP_SECONDS:
        yield ("training", "gracePeriodSeconds"), (
            f"{t.grace_period_seconds} s is less than PaddlePaddle's launcher takes to stop its "
            f"trainers after SIGTERM (about 32 s); a checkpoint saved on SIGTERM may be cut "
            f"off. Give it at least {LAUNCHER_STOP_SECONDS}")


@rule("legacy-operator", severity="warning",
      reads=("training.framework", "training.launcher", "training.queue"))
def legacy_operator(spec: WithWorkload) -> Iterable[Violation]:
    """The kubeflow launcher is Kubeflow's legacy training operator (v1, in maintenance; Trainer
    v2 replaces it, and has no PaddleJob): jobset or trainjob restart the whole job from its
    checkpoints, where a PaddleJob recreates a lost pod whose peers never regroup. With a
    queue, Kueue's PaddleJob integration is deprecated, to be removed in Kueue v0.20. (With
    paddle-v1, whose launchers restart nothing, there is no word.)"""
    t = spec.training
    if t.launcher != "kubeflow" or t.framework != "paddle":
        return  # paddle-v1's kubeflow launcher is the tutorial's, and has no other
    if t.queue is not None:
        yield ("training", "queue"), (
            "Kueue deprecated its PaddleJob integration (to be removed in v0.20) and does not "
            "enable it by default; use launcher: jobset or trainjob with a queue")
    yield ("training", "launcher"), (
        "the kubeflow launcher runs on Kubeflow's legacy training operator (v1, in "
        "maintenance); jobset or trainjob restart the whole job from its newest checkpoint")


def collective_training(spec: WithWorkload, claim_name: str,
                        device_limits: tuple[tuple[str, str], ...] = (),
                        device_env: tuple[tuple[str, str], ...] = (),
                        cluster_domain: str | None = None,
                        sized: Resources | None = None) -> CollectiveTraining:
    """PaddlePaddle 3's run of a paddle spec, its pods mounting `claim_name`; the platform's
    devices for a fabric (limits and environment), if any, its cluster domain if known, and the
    pods' resources sized to the node where the spec gives none."""
    t = spec.training
    assert t.image is not None and t.script is not None  # rule framework-fields
    launcher: CollectiveLauncher = "indexed" if t.launcher == "seed" else t.launcher
    resources = resources_of(t.resources or sized or Resources())
    return CollectiveTraining(
        spec.metadata.name, spec.metadata.namespace, t.image, t.script, tuple(t.args or ()),
        t.nodes, t.gpus_per_node or 0, launcher, t.master_port or MASTER_PORT, claim_name,
        t.active_deadline_seconds, resources, t.ttl_seconds_after_finished,
        device_limits, device_env, cluster_domain, shm_size=shm_size(resources),
        restarts=RESTARTS if t.restarts is None else t.restarts,
        grace_period_seconds=(GRACE_PERIOD_SECONDS if t.grace_period_seconds is None
                              else t.grace_period_seconds),
        queue=t.queue)



def shm_size(resources: dict[str, dict[str, str]]) -> str:
    """The sizeLimit of a trainer's /dev/shm, by its memory limit."""
    limit = resources.get("limits", {}).get("memory")
    if limit is None:
        return SHM_WITHOUT_LIMIT
    mib = max(1, min(int(quantity(limit) / MIB / SHM_SHARE), SHM_MAX_MIB))
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def collective_data(spec: WithWorkload, data_mount: str) -> DataJob | None:
    """The data Job of a paddle spec that names its image: it writes to <job>/data on the
    shared volume, which the trainers see at /mnt/shared/<job>/data."""
    d = spec.dataset
    if d.image is None:
        return None
    return DataJob(d.job_name, d.image, f"{data_mount}/{spec.metadata.name}/data",
                   spec.training.nodes, d.active_deadline_seconds, resources_of(d.resources),
                   d.ttl_seconds_after_finished)


def derive_training(spec: WithWorkload, volume: SharedVolume, kube: KubeRelease,
                    devices: tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
                    = ((), ()), cluster_domain: str | None = None, sized: Resources | None = None
                    ) -> tuple[DataJob | None, PserverTraining | CollectiveTraining]:
    """The data Job (if any) and the training of either framework, on the shared volume; a
    paddle run's trainers get `sized` where the spec gives no resources."""
    if spec.training.framework == "paddle-v1":
        v1 = spec.as_v1
        return claim_jobs(spec.metadata.name, volume.claim, v1.dataset, v1.training, kube)
    return (collective_data(spec, volume.claim.data_mount),
            collective_training(spec, volume.claim.claim_name, *devices, cluster_domain, sized))


def pod_log_dir(training: PserverTraining | CollectiveTraining) -> str:
    """Where a PaddlePaddle 3 pod writes its logs, `<pod>` for its name; none for paddle-v1."""
    if isinstance(training, CollectiveTraining):
        return kube_expansion.expanded(training.log_dir,
                                       {collective.POD_NAME_VARIABLE: "<pod>"})
    return ""


def launcher_of(training: PserverTraining | CollectiveTraining) -> str:
    return (training.launcher if isinstance(training, CollectiveTraining)
            else training.launch.launcher)


def objects(meta: Meta, volume: SharedVolume, data: DataJob | None,
            training: PserverTraining | CollectiveTraining,
            own_namespace: bool = True) -> list[Object]:
    """The shared volume's objects, the data Job's and the training's, in apply order; first
    the namespace, if the tree makes its own."""
    storage = [*(namespace(meta) if own_namespace else []), *volume.objects(meta)]
    data_jobs = [data_job(meta, data, volume.claim)] if data else []
    if isinstance(training, CollectiveTraining):
        return [*storage, *data_jobs, *collective.objects(meta, training)]
    launch = training.launch
    script = [launcher_config_map(meta, training, launcher_script(training))] \
        if launch.scripted else []
    ports = [(port.name, port.number) for port in training.ports]
    service = [headless_service(meta, launch.service, ports)] if launch.service else []
    trainers = paddle_job(meta, training) if launch.operator else training_job(meta, training)
    return [*storage, *pod_reader(meta, training.pod_reader), *script, *service,
            *network_policy(meta, training.ports),
            *pod_disruption_budget(meta, training.name, training.trainers), *data_jobs, trainers]


def explanation(meta: Meta, profile: str, data: DataJob | None,
                training: PserverTraining | CollectiveTraining) -> Explanation:
    """What `explain` prints of either framework's run."""
    if isinstance(training, CollectiveTraining):
        return collective.explanation(meta, profile, training,
                                      common_facts(meta, profile, training.nodes))
    assert data is not None  # paddle-v1 always has its data Job
    return pserver_explanation(meta, profile, training, data.out_dir)
