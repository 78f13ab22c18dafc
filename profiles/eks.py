"""Profile `eks`: today's AWS. A cluster made by eksctl (a managed node group, EKS Pod Identity
for the EFS CSI driver, the VPC CNI enforcing NetworkPolicies), EFS through its CSI driver, the
data-preparation Job, and the parameter-server training Job run by one of three launchers: the
seed image's own start script, an Indexed Job with a launcher script (the default), or Kubeflow's
PaddleJob running the same script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from shlex import quote as q
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel

from paddlegen.compiler import collective, efs, eksctl
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.collective import CollectiveLauncher, CollectiveTraining
from paddlegen.compiler.explain import common_facts, pserver_explanation
from paddlegen.compiler.kube_objects import (
    MODELS_MOUNT,
    Object,
    data_job,
    efs_csi_volume,
    headless_service,
    launcher_config_map,
    namespace,
    network_policy,
    paddle_job,
    persistent_volume_claim,
    pod_disruption_budget,
    pod_reader,
    trainer_selector,
    training_job,
)
from paddlegen.compiler.launcher import launcher_script
from paddlegen.compiler.plan import (
    DATA_MOUNT,
    DataJob,
    EfsCsiVolume,
    Meta,
    PserverTraining,
    claim_jobs,
    meta_of,
    region_of,
    resources_of,
)
from paddlegen.compiler.profile import Explanation, FileViolation, Profile
from paddlegen.compiler.render import to_json, to_yaml
from paddlegen.compiler.rules import (
    Rule,
    Violation,
    dataset_image_tag,
    gradient_servers,
    job_names,
    launcher_release,
    port_range,
    release_fields,
    resource_limits,
    rule,
    split_count,
    storage_request,
    system_namespace,
    training_image_tag,
    worker_capacity,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.profiles.aws import cost, data, instance_types
from paddlegen.schema import patterns as p
from paddlegen.schema.models import (
    ClusterTraining,
    DatasetSettings,
    Launcher,
    Resources,
    SpecBase,
    SpecModel,
    deadline,
    text,
    ttl,
)

EKSCTL = "v0.230.0"
EKSCTL_RELEASES = "https://github.com/eksctl-io/eksctl/releases/download"
# The releases eksctl v0.230.0 knows that paddlegen has schemas for; EKS itself decides, on the
# day, which it still runs (eksctl asks it).
EKS_VERSIONS = ("1.33", "1.34", "1.35")
TRAINING_OPERATOR = "v1.9.4"  # Kubeflow's training operator, the last v1 (PaddleJob) release
OPERATOR_MANIFESTS = ("github.com/kubeflow/trainer.git/manifests/overlays/standalone"
                      f"?ref={TRAINING_OPERATOR}")
NODE_GROUP = "trainers"
LOG_RETENTION_DAYS = 30
# A first mount can fail while a new mount target's DNS name propagates: wait until every one is
# available (after which the name resolves within the VPC).
MOUNT_TARGETS_READY = (
    'until [ -z "$(aws efs describe-mount-targets --file-system-id "$FILE_SYSTEM_ID" --query '
    '"MountTargets[?LifeCycleState!=\'available\'].MountTargetId" --output text)" ]; do\n'
    "  sleep 10\ndone\n")
# kubectl's kustomize clones the training operator's remote base with git
GIT_NEEDED = ", and git, with which kubectl fetches the training operator's manifests"
EFS_CSI_ROLE_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
JOBS = ("training", "dataset")
# What the user who runs eksctl needs beside the inline policy (aws/iam-policy.json): the
# managed half of eksctl's documented minimum, and EFS for the volume's stack.
MANAGED_POLICIES = ("AmazonEC2FullAccess", "AWSCloudFormationFullAccess",
                    "AmazonElasticFileSystemFullAccess")


class EksCluster(SpecModel):
    """The EKS cluster eksctl makes."""

    name: Annotated[str, text(p.EKS_CLUSTER_NAME, "Cluster name; eksctl's stacks are "
                              "eksctl-<name>-cluster and eksctl-<name>-nodegroup-trainers.")]
    region: Annotated[str, text(p.REGION, "AWS region, e.g. eu-central-1.")]
    availability_zones: list[Annotated[str, text(p.ZONE, "A zone of the region.")]] = Field(
        min_length=2, max_length=6, description=(
            "Zones of the cluster's subnets, at least two in the region (EKS needs two); the "
            "file system gets a mount target in each."))
    account_id: Annotated[
        str, text(p.ACCOUNT_ID, "AWS account id: 12 digits, quoted so YAML keeps it a string.")
    ]
    worker_count: Annotated[
        int | None,
        Field(ge=1, le=1000, description="Nodes of the managed node group; defaults to "
              "training.nodes."),
    ] = None
    worker_instance_type: Annotated[
        str, text(p.INSTANCE_TYPE, "EC2 instance type of the nodes.")
    ]
    efa: bool = Field(default=False, description=(
        "Give the nodes every Elastic Fabric Adapter their type has (eksctl's efaEnabled) and "
        "each trainer pod all of them, for NCCL; the node group then lives in the first zone "
        "(eksctl puts EFA node groups in one zone, in a cluster placement group)."))


class EksEfs(SpecModel):
    """The EFS file system of the shared volume."""

    file_system_id: Annotated[
        str | None, text(p.FILE_SYSTEM_ID, "An existing file system; absent, aws/efs.cfn.yaml "
                         "makes one, and the runbook brings its id here.")
    ] = None


class EksStorage(SpecModel):
    """EFS through its CSI driver, as a PersistentVolume bound to one claim."""

    efs: EksEfs = Field(default=EksEfs.model_construct(), description="The file system.")
    claim_name: Annotated[
        str, text(p.DNS_LABEL, "Name of the PersistentVolumeClaim; its volume is "
                  "<namespace>-<claimName>.")
    ]
    capacity: Annotated[str, text(p.QUANTITY, "Capacity of the PersistentVolume, e.g. 100Gi.")]
    request: Annotated[str, text(p.QUANTITY, "Storage the claim requests, e.g. 50Gi.")]


Framework = Literal["paddle", "paddle-v1"]
# PaddlePaddle v1's fields, and the tutorial's values (seed 003) for those a paddle-v1 spec leaves
# out; PaddlePaddle 3's fields. Each framework refuses the other's (rule framework-fields).
V1_DEFAULTS: dict[str, object] = {
    "image": "paddlepaddle/paddle-tutorial:k8s_train", "port": 7164, "portsNum": 2,
    "portsNumForSparse": 2, "trainerCount": 3, "nic": "eth0", "configDir": "quick_start",
    "jobPath": "/home/jobpath"}
V1_FIELDS = ("port", "ports_num", "ports_num_for_sparse", "gradient_servers", "trainer_count",
             "nic", "config_dir", "job_path")
PADDLE_FIELDS = ("script", "args", "gpus_per_node", "master_port")
V1_DATA_IMAGE = "paddlepaddle/paddle-tutorial:k8s_data"
MASTER_PORT = 36543  # the training operator's default for a PaddleJob's master port


class EksTraining(SpecModel):
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
    launcher: Launcher = Field(description=(
        "How the trainers find each other: indexed (an Indexed Job and a headless Service: "
        "ranks are completion indexes, peers stable DNS names), kubeflow (Kubeflow's "
        "PaddleJob) or, with paddle-v1, seed (the image's own start script)."))
    resources: Resources = Field(description="CPU and memory of each trainer pod.")
    active_deadline_seconds: Annotated[int, deadline("the training run")]
    ttl_seconds_after_finished: Annotated[int | None, ttl("the training Job")] = None
    script: Annotated[str | None, text(p.ABSOLUTE_PATH, (
        "paddle: the training script, an absolute path inside the image."))] = None
    args: list[Annotated[str, Field(max_length=4096)]] | None = Field(
        default=None, max_length=256, description="paddle: the script's arguments.")
    gpus_per_node: Annotated[int | None, Field(ge=0, le=64, description=(
        "paddle: GPUs of each pod (nvidia.com/gpu), one trainer process each; 0, the "
        "default: CPU, one process, over gloo."))] = None
    master_port: Annotated[int | None, Field(ge=1, le=65535, description=(
        "paddle: the rendezvous port of the launcher on pod 0 (default 36543)."))] = None
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


class EksDataset(DatasetSettings):
    """The data-preparation Job; with paddle, there is one only if its image is given."""

    # optional here, required in the shared model: pydantic takes the narrower override
    image: Annotated[str | None, text(p.IMAGE, (
        "Image of the data-preparation Job; with paddle-v1 the tutorial's by default, with "
        "paddle none: no data Job."))] = None  # type: ignore[assignment]


class EksSpec(SpecBase):
    """Distributed training on an EKS cluster made by eksctl, EFS through its CSI driver."""

    profile: Literal["eks"] = Field(description="Which way to run.")
    cluster: EksCluster = Field(description="The EKS cluster.")
    storage: EksStorage = Field(description="The shared volume.")
    dataset: EksDataset = Field(description="The data-preparation Job.")
    training: EksTraining = Field(description="The training run.")


def v1_training(training: EksTraining) -> ClusterTraining:
    """The parameter-server settings of a paddle-v1 spec, the tutorial's values filled in."""
    given = training.model_dump(by_alias=True, exclude_none=True,
                                exclude={"framework", *PADDLE_FIELDS})
    return ClusterTraining.model_validate({**V1_DEFAULTS, **given})


def v1_dataset(dataset: EksDataset) -> DatasetSettings:
    return DatasetSettings.model_validate(
        {**dataset.model_dump(by_alias=True, exclude_none=True),
         "image": dataset.image or V1_DATA_IMAGE})


def as_v1(spec: EksSpec) -> Any:
    """A paddle-v1 spec as the shared parameter-server rules read it."""
    return spec.model_copy(update={"training": v1_training(spec.training),
                                   "dataset": v1_dataset(spec.dataset)})


def v1_only(shared: Rule[Any]) -> Rule[EksSpec]:
    """A parameter-server rule, for paddle-v1 specs only."""
    def check(spec: EksSpec) -> Iterable[Violation]:
        if spec.training.framework == "paddle-v1":
            yield from shared.check(as_v1(spec))
    check.__doc__ = shared.doc
    return Rule(shared.name, check, shared.severity)


def either(shared: Rule[Any], applies: Callable[[EksSpec], bool] = lambda spec: True
           ) -> Rule[EksSpec]:
    """A rule of both frameworks, reading a paddle-v1 spec with the tutorial's values, and a
    paddle spec where `applies` (the rule framework-fields reports what it lacks)."""
    def check(spec: EksSpec) -> Iterable[Violation]:
        if spec.training.framework == "paddle-v1":
            yield from shared.check(as_v1(spec))
        elif spec.training.image is not None and applies(spec):
            yield from shared.check(spec)
    check.__doc__ = shared.doc
    return Rule(shared.name, check, shared.severity)


FRAMEWORK_FIELDS = {"paddle": V1_FIELDS, "paddle-v1": PADDLE_FIELDS}


@rule("framework-fields")
def framework_fields(spec: EksSpec) -> Iterable[Violation]:
    """training's fields belong to its framework: port, portsNum, portsNumForSparse,
    gradientServers, trainerCount, nic, configDir and jobPath only to paddle-v1 (PaddlePaddle
    v1's parameter server); script, args, gpusPerNode, masterPort and cluster.efa only to
    paddle (PaddlePaddle 3); paddle needs an image and a script, and runs with the indexed or
    kubeflow launcher."""
    t = spec.training
    other = "paddle-v1" if t.framework == "paddle" else "paddle"
    for name in FRAMEWORK_FIELDS[t.framework]:
        if getattr(t, name) is not None:
            field = EksTraining.model_fields[name].alias or name
            yield ("training", field), (
                f"a field of framework {other}, not of {t.framework}; remove it, or set "
                f"training.framework: {other}")
    if t.framework != "paddle":
        if spec.cluster.efa:
            yield ("cluster", "efa"), ("EFA serves PaddlePaddle 3's collective (NCCL); "
                                       "PaddlePaddle v1's pservers talk TCP")
        return
    for name in ("image", "script"):
        if getattr(t, name) is None:
            yield ("training", name), "framework paddle needs it"
    if t.launcher == "seed":
        yield ("training", "launcher"), ("the seed launcher runs the tutorial image's start "
                                         "script, for paddle-v1; use indexed or kubeflow")


def eks_calendar() -> dict[str, Any]:
    calendar: dict[str, Any] = data("eks-versions.json")
    return calendar


def default_version() -> str:
    """The newest release paddlegen targets that is in standard support on the calendar's date
    (fixed, so that a spec without kubeVersion builds the same until paddlegen's next release)."""
    calendar = eks_calendar()
    return max((v for v in EKS_VERSIONS
                if calendar["releases"][v]["standardEnd"] > calendar["asOf"]),
               key=lambda v: int(v.split(".")[1]))


def today() -> str:
    """The date (UTC), or the one SOURCE_DATE_EPOCH names (the reproducible-builds convention),
    for rules about support calendars."""
    import os
    from datetime import datetime, timezone

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    moment = (datetime.fromtimestamp(int(epoch), timezone.utc) if epoch.isdigit()
              else datetime.now(timezone.utc))
    return moment.date().isoformat()


@rule("eks-support", severity="warning")
def eks_support(spec: EksSpec) -> Iterable[Violation]:
    """kubeVersion is in EKS standard support today (the calendar vendored in
    profiles/aws/eks-versions.json; SOURCE_DATE_EPOCH sets the day): past it, EKS bills the
    cluster at the extended support price until that ends too, then upgrades it."""
    calendar = eks_calendar()
    version = spec.kube_version or default_version()
    dates = calendar["releases"].get(version)
    if dates is None or dates["standardEnd"] > today():
        return
    prices = calendar["pricePerClusterHour"]
    yield ("kubeVersion",), (
        f"EKS {version} left standard support on {dates['standardEnd']}: the cluster costs "
        f"${prices['extended']} an hour instead of ${prices['standard']} until "
        f"{dates['extendedEnd']}, when EKS upgrades it; use {default_version()}")


def target(spec: EksSpec) -> Target:
    version = spec.kube_version or default_version()
    return Target(f"eksctl {EKSCTL}, EKS {version}", KubeRelease(version, version))


@rule("eks-version")
def eks_version(spec: EksSpec) -> Iterable[Violation]:
    """kubeVersion is a release EKS runs that paddlegen has schemas for (1.33, 1.34, 1.35: the
    ones eksctl v0.230.0 knows; if unset, the newest in standard support on the vendored
    calendar's date, 1.35)."""
    if spec.kube_version is not None and spec.kube_version not in EKS_VERSIONS:
        yield ("kubeVersion",), (f"{spec.kube_version} is not an EKS release paddlegen targets; "
                                 f"use one of {', '.join(EKS_VERSIONS)}")


def aws_regions() -> tuple[str, ...]:
    return tuple(data("regions.json")["regions"])


@rule("aws-region")
def aws_region(spec: EksSpec) -> Iterable[Violation]:
    """cluster.region is a region of AWS's commercial partition (the list botocore bundles,
    vendored in profiles/aws/regions.json): the one whose ARNs paddlegen writes."""
    from paddlegen.compiler.spec import did_you_mean

    region = spec.cluster.region
    if region not in aws_regions():
        yield ("cluster", "region"), (f"{region} is not an AWS region"
                                      f"{did_you_mean(region, aws_regions())}")


@rule("zones-in-region")
def zones_in_region(spec: EksSpec) -> Iterable[Violation]:
    """availabilityZones are distinct zones of region (eu-central-1a is in eu-central-1)."""
    if spec.cluster.region not in aws_regions():
        return  # the rule aws-region says what is wrong
    seen: set[str] = set()
    for index, zone in enumerate(spec.cluster.availability_zones):
        path = ("cluster", "availabilityZones", index)
        if region_of(zone) != spec.cluster.region:
            yield path, f"{zone} is not in region {spec.cluster.region}"
        elif zone in seen:
            yield path, f"{zone} is listed twice; EKS needs two different zones"
        seen.add(zone)


# The training operator names worker i's pod and Service <job>-worker-<i>: a DNS-1035 label.
KUBEFLOW_NAME_LIMIT = 63


@rule("kubeflow-names")
def kubeflow_names(spec: EksSpec) -> Iterable[Violation]:
    """With the kubeflow launcher, the job's name is one the training operator takes: it starts
    with a letter, and <name>-worker-<nodes-1> (a pod's and its Service's name) has at most 63
    characters."""
    if spec.training.launcher != "kubeflow":
        return
    name = spec.metadata.name
    last = f"{name}-worker-{spec.training.nodes - 1}"
    if not name[0].isalpha():
        yield ("metadata", "name"), ("the training operator takes only a name that starts with "
                                     "a letter (a DNS-1035 label)")
    elif len(last) > KUBEFLOW_NAME_LIMIT:
        yield ("metadata", "name"), (
            f"the last worker would be {last} ({len(last)} characters, at most "
            f"{KUBEFLOW_NAME_LIMIT}); shorten the name to "
            f"{len(name) - len(last) + KUBEFLOW_NAME_LIMIT} characters")


@rule("efs-file-system", severity="warning")
def efs_file_system(spec: EksSpec) -> Iterable[Violation]:
    """storage.efs.fileSystemId is set: without it the tree has no PersistentVolume yet (the
    claim waits), until the runbook brings the id of the file system aws/efs.cfn.yaml makes."""
    if spec.storage.efs.file_system_id is None:
        yield ("storage", "efs"), (
            "no fileSystemId: aws/efs.cfn.yaml makes the file system and the claim waits for "
            "its volume; put the id here once the runbook has it, and rebuild")


def allocatable(facts: dict[str, Any]) -> tuple[Decimal, Decimal]:
    """What a node of the type gives pods (CPU cores, memory bytes), as the EKS-optimised AMI's
    kubelet reserves (amazon-eks-ami's bootstrap: 6% of the first core, 1% of the second, 0.5%
    of the next two, 0.25% of the rest; 11 MiB per pod the type can run and 255 MiB, and the
    100 MiB eviction threshold). The add-ons' DaemonSets are not counted."""
    cores = facts["vcpu"]
    reserved_cpu = (Decimal("0.06") + Decimal("0.01") * min(max(cores - 1, 0), 1)
                    + Decimal("0.005") * min(max(cores - 2, 0), 2)
                    + Decimal("0.0025") * max(cores - 4, 0))
    reserved_mib = 11 * facts["maxPods"] + 255 + 100
    return cores - reserved_cpu, Decimal((facts["memoryMiB"] - reserved_mib) * 2**20)


@rule("instance-capacity")
def instance_capacity(spec: EksSpec) -> Iterable[Violation]:
    """cluster.workerInstanceType is an EC2 instance type paddlegen knows (a table vendored in
    profiles/aws/instance-types.json; a type close to a known one is taken for a typo), and each
    trainer pod fits on one node: training.gpusPerNode at most the type's GPUs, its CPU and
    memory requests at most what the node gives pods (the EKS AMI kubelet's reserve taken off),
    or the pods stay Pending; with cluster.efa, the type has Elastic Fabric Adapters."""
    from paddlegen.compiler.rules import quantity
    from paddlegen.compiler.spec import did_you_mean

    kind, t = spec.cluster.worker_instance_type, spec.training
    table = instance_types()
    facts = table.get(kind)
    if facts is None:
        close = did_you_mean(kind, (name for name in table if not name.startswith("_")))
        if close:
            yield ("cluster", "workerInstanceType"), f"not an EC2 instance type{close}"
        return
    if spec.cluster.efa and not facts["efaInterfaces"]:
        yield ("cluster", "efa"), f"{kind} has no Elastic Fabric Adapter; choose a type with one"
    gpus = (t.gpus_per_node or 0) if t.framework == "paddle" else 0
    if gpus > facts["gpus"]:
        have = {0: "no GPU", 1: "1 GPU"}.get(facts["gpus"], f"{facts['gpus']} GPUs")
        larger = min(((f["gpus"], f["vcpu"], name) for name, f in table.items()
                      if not name.startswith("_") and f["gpus"] >= gpus), default=None)
        instead = (f"choose an instance type with {gpus} GPUs or more, such as {larger[2]}"
                   if larger
                   else "no instance type paddlegen knows has more")
        yield ("training", "gpusPerNode"), (
            f"{kind} has {have}; ask for at most {facts['gpus']}, or {instead}")
    cpu, memory = allocatable(facts)
    requests = t.resources.requests
    for name, room, unit in (("cpu", cpu, "cores"), ("memory", memory, "bytes")):
        asked = getattr(requests, name)
        if asked is not None and quantity(asked) > room:
            shown = f"{room:.2f} cores" if unit == "cores" else f"{room / 2**30:.1f}Gi"
            yield ("training", "resources", "requests", name), (
                f"{asked} does not fit on a {kind} node, which gives pods about {shown}; "
                "request less, or choose a larger instance type")


@dataclass(frozen=True)
class EksPlan:
    meta: Meta
    cluster: EksCluster  # the spec's settings, with worker_count resolved
    efs_stack: str
    iam_group: str  # also its inline policy's name
    volume: EfsCsiVolume
    data: DataJob | None  # paddle runs one only if the spec names its image
    training: PserverTraining | CollectiveTraining

    @property
    def launcher(self) -> str:
        t = self.training
        return t.launcher if isinstance(t, CollectiveTraining) else t.launch.launcher


def collective_training(spec: EksSpec) -> CollectiveTraining:
    t = spec.training
    assert t.image is not None and t.script is not None  # rule framework-fields
    launcher: CollectiveLauncher = "kubeflow" if t.launcher == "kubeflow" else "indexed"
    return CollectiveTraining(
        spec.metadata.name, t.image, t.script, tuple(t.args or ()), t.nodes,
        t.gpus_per_node or 0, launcher, t.master_port or MASTER_PORT, spec.storage.claim_name,
        t.active_deadline_seconds, resources_of(t.resources), t.ttl_seconds_after_finished,
        *efa_wiring(spec.cluster))


# NCCL over EFA (aws-ofi-nccl in the image): libfabric's EFA provider, and GPUDirect RDMA on the
# types whose EFA reads GPU memory directly.
EFA_RESOURCE = "vpc.amazonaws.com/efa"
RDMA_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300")


def efa_wiring(cluster: EksCluster) -> tuple[tuple[tuple[str, str], ...],
                                             tuple[tuple[str, str], ...]]:
    """Each pod's EFA devices (all the node's: one pod per node) and NCCL's environment."""
    facts = instance_types().get(cluster.worker_instance_type)
    if not cluster.efa or not facts or not facts["efaInterfaces"]:
        return (), ()
    env = [("FI_PROVIDER", "efa")]
    if cluster.worker_instance_type.split(".")[0] in RDMA_FAMILIES:
        env.append(("FI_EFA_USE_DEVICE_RDMA", "1"))
    return ((EFA_RESOURCE, str(facts["efaInterfaces"])),), tuple(env)


def collective_data(spec: EksSpec) -> DataJob | None:
    """The data Job of a paddle spec that names its image: it writes to <job>/data on the
    shared volume, which the trainers see at /mnt/shared/<job>/data."""
    d = spec.dataset
    if d.image is None:
        return None
    return DataJob(d.job_name, d.image, f"{DATA_MOUNT}/{spec.metadata.name}/data",
                   spec.training.nodes, d.active_deadline_seconds, resources_of(d.resources),
                   d.ttl_seconds_after_finished)


def derive(spec: EksSpec) -> EksPlan:
    name, namespace = spec.metadata.name, spec.metadata.namespace
    tgt = target(spec)
    cluster = spec.cluster.model_copy(
        update={"worker_count": spec.cluster.worker_count or spec.training.nodes})
    storage = spec.storage
    volume = EfsCsiVolume(f"{namespace}-{storage.claim_name}", storage.claim_name,
                          storage.efs.file_system_id, storage.capacity, storage.request)
    data: DataJob | None
    training: PserverTraining | CollectiveTraining
    if spec.training.framework == "paddle-v1":
        data, training = claim_jobs(name, storage.claim_name, v1_dataset(spec.dataset),
                                    v1_training(spec.training), tgt.kube)
    else:
        data, training = collective_data(spec), collective_training(spec)
    return EksPlan(meta_of(spec, tgt, training.image), cluster, f"{cluster.name}-efs",
                   f"{cluster.name}-eksctl", volume, data, training)


def objects(plan: EksPlan) -> list[Object]:
    meta, training = plan.meta, plan.training
    storage = [*namespace(meta), *efs_csi_volume(meta, plan.volume),
               persistent_volume_claim(meta, plan.volume)]
    data = [data_job(meta, plan.data, plan.volume.claim_name)] if plan.data else []
    if isinstance(training, CollectiveTraining):
        return [*storage, *data, *collective.objects(meta, training)]
    launch = training.launch
    script = [launcher_config_map(meta, training, launcher_script(training))] \
        if launch.scripted else []
    ports = [(port.name, port.number) for port in training.ports]
    service = [headless_service(meta, launch.service, ports)] if launch.service else []
    trainers = paddle_job(meta, training) if launch.operator else training_job(meta, training)
    return [*storage, *pod_reader(meta, training.pod_reader), *script, *service,
            *network_policy(meta, training.ports),
            *pod_disruption_budget(meta, training.name, training.trainers), *data, trainers]


def cluster_config(plan: EksPlan) -> dict[str, Any]:
    """eksctl's ClusterConfig: private nodes behind one NAT gateway, the VPC CNI enforcing
    NetworkPolicies, the EFS CSI driver's controller given its AWS managed policy through EKS
    Pod Identity (its IRSA role would trust every service account that names it)."""
    c, meta = plan.cluster, plan.meta
    nodes = c.worker_count
    return {
        "apiVersion": "eksctl.io/v1alpha5",
        "kind": "ClusterConfig",
        "metadata": {"name": c.name, "region": c.region, "version": meta.target.kube.minor,
                     "tags": {"app.kubernetes.io/managed-by": "paddlegen",
                              "app.kubernetes.io/part-of": meta.name}},
        "availabilityZones": list(c.availability_zones),
        "vpc": {"nat": {"gateway": "Single"}},
        "managedNodeGroups": [{
            "name": NODE_GROUP, "instanceType": c.worker_instance_type,
            "desiredCapacity": nodes, "minSize": nodes, "maxSize": nodes,
            "privateNetworking": True,
            **({"availabilityZones": [c.availability_zones[0]], "efaEnabled": True}
               if c.efa else {}),
        }],
        "addons": [
            {"name": "vpc-cni",
             "configurationValues": json.dumps({"enableNetworkPolicy": "true"})},
            {"name": "eks-pod-identity-agent"},
            {"name": "aws-efs-csi-driver", "podIdentityAssociations": [{
                "namespace": "kube-system", "serviceAccountName": "efs-csi-controller-sa",
                "permissionPolicyARNs": [EFS_CSI_ROLE_POLICY]}]},
        ],
        # kept a month, and deleted at teardown: EKS makes the log group, nothing removes it
        "cloudWatch": {"clusterLogging": {"enableTypes": ["api", "audit", "authenticator"],
                                          "logRetentionInDays": LOG_RETENTION_DAYS}},
    }


# What eksctl does to the cluster's EKS resources, each action one that IAM scopes to them.
EKS_CLUSTER_ACTIONS = (
    "AssociateAccessPolicy", "CreateAccessEntry", "CreateAddon",
    "CreateNodegroup", "CreatePodIdentityAssociation", "DeleteAccessEntry", "DeleteAddon",
    "DeleteCluster", "DeleteNodegroup", "DeletePodIdentityAssociation", "DescribeAccessEntry",
    "DescribeAddon", "DescribeCluster", "DescribeNodegroup", "DescribePodIdentityAssociation",
    "DescribeUpdate", "ListAccessEntries", "ListAddons", "ListAssociatedAccessPolicies",
    "ListNodegroups", "ListPodIdentityAssociations", "ListTagsForResource", "ListUpdates",
    "TagResource", "UntagResource", "UpdateAddon", "UpdateClusterConfig",
    "UpdateClusterVersion", "UpdateNodegroupConfig", "UpdateNodegroupVersion",
    "UpdatePodIdentityAssociation")
# Those IAM grants on every resource only (no resource-level permissions).
EKS_ACCOUNT_ACTIONS = ("CreateCluster", "DescribeAddonConfiguration", "DescribeAddonVersions",
                       "DescribeClusterVersions", "ListAccessPolicies", "ListClusters")


# eksctl's documented IamLimitedAccess: the roles, instance profiles and policies it makes
# (all named eksctl-*), the cluster's OIDC provider, the node group's service-linked role.
IAM_ROLE_ACTIONS = (
    "AddRoleToInstanceProfile", "AttachRolePolicy", "CreateInstanceProfile",
    "CreateOpenIDConnectProvider", "CreatePolicy", "CreateRole", "DeleteInstanceProfile",
    "DeleteOpenIDConnectProvider", "DeletePolicy", "DeleteRole", "DeleteRolePolicy",
    "DetachRolePolicy", "GetInstanceProfile", "GetOpenIDConnectProvider", "GetPolicy",
    "GetRole", "GetRolePolicy", "ListAttachedRolePolicies", "ListInstanceProfilesForRole",
    "ListPolicyVersions", "PassRole", "PutRolePolicy", "RemoveRoleFromInstanceProfile",
    "TagOpenIDConnectProvider", "TagRole", "UntagRole", "UpdateAssumeRolePolicy")
# eksctl's list without Fargate's, which this cluster does not use.
SERVICE_LINKED_ROLES = ("eks.amazonaws.com", "eks-nodegroup.amazonaws.com")


def iam_statements(account: str) -> list[dict[str, Any]]:
    iam = f"arn:aws:iam::{account}"
    return [
        {"Sid": "IamEksctlRoles", "Effect": "Allow",
         "Action": [f"iam:{action}" for action in IAM_ROLE_ACTIONS],
         "Resource": [f"{iam}:instance-profile/eksctl-*", f"{iam}:role/eksctl-*",
                      f"{iam}:policy/eksctl-*", f"{iam}:oidc-provider/*",
                      f"{iam}:role/aws-service-role/eks-nodegroup.amazonaws.com/"
                      "AWSServiceRoleForAmazonEKSNodegroup", f"{iam}:role/eksctl-managed-*"]},
        {"Sid": "IamRead", "Effect": "Allow", "Action": ["iam:GetRole", "iam:GetUser"],
         "Resource": [f"{iam}:role/*", f"{iam}:user/*"]},
        {"Sid": "IamServiceLinkedRoles", "Effect": "Allow",
         "Action": ["iam:CreateServiceLinkedRole"],
         "Resource": [f"{iam}:role/aws-service-role/{service}/*"
                      for service in SERVICE_LINKED_ROLES],
         "Condition": {"StringEquals": {"iam:AWSServiceName": list(SERVICE_LINKED_ROLES)}}},
    ]


def iam_policy(plan: EksPlan) -> dict[str, Any]:
    """The inline policy of the eksctl user's group: EKS on this cluster's resources only, what
    IAM cannot scope to them, the public parameters eksctl reads its node images from, and
    eksctl's limited IAM (in place of IAMFullAccess, which would let the user make itself an
    administrator)."""
    c = plan.cluster
    arn = f"arn:aws:eks:{c.region}:{c.account_id}"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "EksThisCluster", "Effect": "Allow",
             "Action": [f"eks:{action}" for action in EKS_CLUSTER_ACTIONS],
             "Resource": [f"{arn}:cluster/{c.name}", f"{arn}:nodegroup/{c.name}/*/*",
                          f"{arn}:addon/{c.name}/*/*",
                          f"{arn}:podidentityassociation/{c.name}/*",
                          f"{arn}:access-entry/{c.name}/*"]},
            {"Sid": "EksWithoutResources", "Effect": "Allow",
             "Action": [f"eks:{action}" for action in EKS_ACCOUNT_ACTIONS],
             "Resource": ["*"]},
            # The public parameters' ARNs have no account: `*` matches the empty one.
            {"Sid": "EksNodeImages", "Effect": "Allow",
             "Action": ["ssm:GetParameter", "ssm:GetParameters"],
             "Resource": [f"arn:aws:ssm:{c.region}:*:parameter/aws/service/*"]},
            # eksctl sets the control plane log group's retention; teardown deletes it
            {"Sid": "ControlPlaneLogs", "Effect": "Allow",
             "Action": ["logs:DeleteLogGroup", "logs:PutRetentionPolicy"],
             "Resource": [f"arn:aws:logs:{c.region}:{c.account_id}:log-group:"
                          f"{log_group(c.name)}:*"]},
            *iam_statements(c.account_id),
            *ecr_statements(plan),
        ],
    }


def log_group(cluster: str) -> str:
    """Where EKS sends the control plane's logs."""
    return f"/aws/eks/{cluster}/cluster"


def ecr_statements(plan: EksPlan) -> list[dict[str, Any]]:
    """Pushing the training image to its repository in this account, where it is one."""
    ecr = ecr_repository(plan) if isinstance(plan.training, CollectiveTraining) else None
    if ecr is None:
        return []
    c = plan.cluster
    return [{"Sid": "EcrTrainingImage", "Effect": "Allow",
             "Action": [f"ecr:{action}" for action in ECR_PUSH_ACTIONS],
             "Resource": [f"arn:aws:ecr:{c.region}:{c.account_id}:repository/"
                          f"{ecr['repository']}"]},
            {"Sid": "EcrLogin", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"],
             "Resource": ["*"]}]


CLUSTER_CONFIG = "aws/eksctl-cluster.yaml"


def files(plan: EksPlan) -> dict[str, str]:
    zones = len(plan.cluster.availability_zones)
    return {CLUSTER_CONFIG: to_yaml(cluster_config(plan)),
            "aws/iam-policy.json": to_json(iam_policy(plan)),
            "aws/efs.cfn.yaml": to_yaml(efs.eks_template(plan.cluster.name,
                                                         plan.efs_stack, zones))}


def checks(plan: EksPlan) -> list[FileViolation]:
    config = cluster_config(plan)
    return [FileViolation(CLUSTER_CONFIG, config, where, message)
            for where, message in eksctl.violations(config)]


def numbered(sections: list[tuple[str, str]]) -> str:
    return "".join(f"\n## {number}. {title}\n\n{body}\n"
                   for number, (title, body) in enumerate(sections))


def runbook(plan: EksPlan, manifest_paths: list[str]) -> str:
    meta, c, training, data = plan.meta, plan.cluster, plan.training, plan.data
    operator = plan.launcher == "kubeflow"
    kube = meta.target.kube
    *first, training_manifest = manifest_paths
    stack, config = q(plan.efs_stack), f'"$OUT/{CLUSTER_CONFIG}"'
    pre = rb.preamble(c.name, {"KUBECONFIG": '"$ASSETS/kubeconfig"',
                               "AWS_DEFAULT_REGION": q(c.region),
                               "AWS_PROFILE": q(rb.user_profile(c.name))})
    file_system_of_stack = rb.stack_output(plan.efs_stack, "FileSystemId")
    given = plan.volume.file_system_id
    owner_of_file_system = (
        f'aws efs describe-file-systems --file-system-id "$FILE_SYSTEM_ID" --query '
        f"\"FileSystems[0].Tags[?Key=='{efs.OWNER_TAG}'].Value\" --output text")
    operator_removed = f"kubectl delete -k {q(OPERATOR_MANIFESTS)}\n" if operator else ""
    report = (f'[ "$FILE_SYSTEM_ID" = {q(given)} ] || ' if given else "") + \
        'echo "storage.efs.fileSystemId: $FILE_SYSTEM_ID"'
    zones = ", ".join(c.availability_zones)
    made = (f"gives the cluster's nodes the file system {given}" if given else
            "makes an encrypted file system and gives it to the cluster's nodes")
    sections = [
        (f"Tools: eksctl {EKSCTL} and kubectl {kube.minor}", f"""\
Beside the AWS CLI (v2) and paddlegen, which this needs on PATH already (the kubeconfig eksctl
writes runs `aws eks get-token`){GIT_NEEDED if operator else ""}. The cluster's kubeconfig and the
models at the end go to `$ASSETS`, out of this directory, which you commit.

```sh
{pre}curl -fL {EKSCTL_RELEASES}/{EKSCTL}/eksctl_Linux_amd64.tar.gz | tar xz -C "$ASSETS/bin" eksctl
KUBECTL=$(curl -fsL https://dl.k8s.io/release/stable-{kube.minor}.txt)
curl -fLo "$ASSETS/bin/kubectl" "https://dl.k8s.io/release/$KUBECTL/bin/linux/amd64/kubectl"
chmod +x "$ASSETS/bin/kubectl"
```"""),
        ("IAM, as an administrator of the account: a group for the user that runs eksctl", f"""\
```sh
{pre}{rb.AS_ADMINISTRATOR}{rb.iam_group(plan.iam_group, MANAGED_POLICIES, "eksctl")}\
{rb.group_policy_put(plan.iam_group)}```

{rb.as_the_user(c.name)}"""),
        (f"The cluster ({c.worker_count} {c.worker_instance_type} nodes in {zones})", f"""\
```sh
{pre}eksctl create cluster -f {config} --kubeconfig "$ASSETS/kubeconfig"
kubectl get nodes
```

eksctl makes the VPC (private nodes behind one NAT gateway), the managed node group, and the
add-ons: the VPC CNI with its network policy agent, EKS Pod Identity, and the EFS CSI driver, whose
controller gets `AmazonEFSCSIDriverPolicy` through Pod Identity."""),
        ("The file system in the cluster's network", f"""\
```sh
{pre}{rb.deploy_efs(plan.efs_stack, [f"FileSystemId={q(given or '')}"])}\
FILE_SYSTEM_ID=$({file_system_of_stack})
{MOUNT_TARGETS_READY}{report}
```

The stack {made}.
Its security group admits NFS (TCP 2049) from the cluster security group, which EKS gives the
managed nodes (and the control plane's network interfaces), and nothing else; a mount target goes
into each private subnet. If that printed a line, put that value in the spec, rebuild this tree,
check it, and go on with the rebuilt RUNBOOK.md:

```sh
{pre}{rb.REBUILD}```"""),
    ]
    if operator:
        sections.append((f"Kubeflow's training operator {TRAINING_OPERATOR}", f"""\
```sh
{pre}kubectl apply --server-side -k {q(OPERATOR_MANIFESTS)}
kubectl --namespace=kubeflow rollout status deployment/training-operator --timeout=600s
```"""))
    teardown = f"""\
```sh
{pre}{rb.delete_objects(meta)}{operator_removed}\
FILE_SYSTEM_ID=$({file_system_of_stack})
OWNER=$({owner_of_file_system})
aws cloudformation delete-stack --stack-name {stack}
aws cloudformation wait stack-delete-complete --stack-name {stack}
if [ "$OWNER" = {stack} ]; then aws efs delete-file-system --file-system-id "$FILE_SYSTEM_ID"; fi
eksctl delete cluster -f {config} --wait
aws logs delete-log-group --log-group-name {q(log_group(c.name))} || echo "(no log group left)"
```

The EFS stack goes before eksctl's, whose exports it uses and whose VPC its mount targets are in.
The file system goes only if this runbook's stack made it (its `{efs.OWNER_TAG}` tag); one you
brought stays. Last, as the administrator:

```sh
{pre}{rb.AS_ADMINISTRATOR}{rb.group_policy_deleted(plan.iam_group)}\
{rb.iam_group_removed(plan.iam_group, MANAGED_POLICIES)}```"""
    if isinstance(training, CollectiveTraining):
        sections += collective_sections(plan, training, pre, first, training_manifest)
        sections.append(("Teardown, in this order", teardown))
        return rb.header(meta, "eks") + before_you_start(plan) + numbered(sections)
    assert data is not None
    selector = "-l " + ",".join(f"{key}={q(value)}"
                                for key, value in trainer_selector(meta).items())
    sections += [
        ("Data and training", f"""\
```sh
{pre}{rb.creates(first)}{rb.after_job(meta, data.name, rb.creates([training_manifest])
                                     + rb.follow_trainers(meta, training, selector))}```

{rb.data_parts(data, training)} {failures(meta, training)}

The job's NetworkPolicy admits traffic to its pods only from its trainers, and only to the
pserver ports; the VPC CNI's network policy agent enforces it."""),
        ("The models, off EFS before anything is deleted", f"""\
```sh
{pre}{rb.copy_models(meta, training)}```

Go on only if it said the models are safe."""),
        ("Teardown, in this order", teardown),
    ]
    return rb.header(meta, "eks") + before_you_start(plan) + numbered(sections)


ECR_IMAGE = re.compile(r"(?P<registry>(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)"
                       r"\.amazonaws\.com)/(?P<repository>[^:@]+)")
PADDLE_BASE_IMAGE = "paddlepaddle/paddle:3.3.1"  # PaddlePaddle 3.3's CPU image on Docker Hub
ECR_PUSH_ACTIONS = ("BatchCheckLayerAvailability", "BatchGetImage", "CompleteLayerUpload",
                    "CreateRepository", "DeleteRepository", "DescribeImages",
                    "DescribeRepositories", "InitiateLayerUpload", "PutImage", "UploadLayerPart")


ECR_KEPT = ("The image's repository stays for the next run; `aws ecr delete-repository --force` "
            "removes it\nwith its images.")


def ecr_repository(plan: EksPlan) -> re.Match[str] | None:
    """The training image's ECR repository, if it is one of this cluster's account and region
    (the runbook makes it and pushes there; the nodes' role may pull from it)."""
    match = ECR_IMAGE.match(plan.training.image)
    c = plan.cluster
    if match and match["account"] == c.account_id and match["region"] == c.region:
        return match
    return None


def image_section(plan: EksPlan, training: CollectiveTraining, pre: str) -> tuple[str, str]:
    workdir = training.script.rsplit("/", 1)[0] or "/"
    dockerfile = (f"FROM {PADDLE_BASE_IMAGE}   # for GPUs: the 3.3.1 GPU tag of your CUDA "
                  f"release\nCOPY . {workdir}\n")
    ecr = ecr_repository(plan)
    image = q(training.image)
    if ecr is None:
        push = (f"Build it from your code's directory and push it where the nodes can pull "
                f"it:\n\n```sh\n{pre}docker build -t {image} \"${{CODE_DIR:?set CODE_DIR to "
                f"the directory of your code}}\"\ndocker push {image}\n```")
    else:
        repository = q(ecr["repository"])
        push = f"""\
Build it from your code's directory and push it to the account's registry (the group's policy
allows pushing to this repository only; the nodes' role pulls from it):

```sh
{pre}CODE_DIR="${{CODE_DIR:?set CODE_DIR to the directory of your code}}"
aws ecr describe-repositories --repository-names {repository} >/dev/null 2>&1 ||
  aws ecr create-repository --repository-name {repository} \\
    --image-scanning-configuration scanOnPush=true
aws ecr get-login-password | docker login --username AWS --password-stdin {ecr["registry"]}
docker build -t {image} "$CODE_DIR"
docker push {image}
```"""
    return ("The training image", f"""\
The trainers run PaddlePaddle 3 and your code, with `{training.script}` in it, from the image
`{training.image}`. A Dockerfile beside your code:

```
{dockerfile}```

{push}""")


def collective_sections(plan: EksPlan, training: CollectiveTraining, pre: str,
                        first: list[str], training_manifest: str) -> list[tuple[str, str]]:
    meta, data = plan.meta, plan.data
    selector = "-l " + ",".join(f"{key}={q(value)}" for key, value in
                                collective.first_pod_selector(training).items())
    kind = "paddlejob" if training.launcher == "kubeflow" else "job"
    done = "Succeeded" if training.launcher == "kubeflow" else "Complete"
    run = rb.after_job(meta, training.name, 'echo "the run is done"\n', kind, done)
    data_note = (f"The data Job writes {data.out_dir}, which the trainers see at "
                 f"{collective.SHARED_MOUNT}/{training.name}/data. " if data else "")
    pod = collective.output_pod(meta, training)
    name = pod["metadata"]["name"]
    archive = f'"$ASSETS/{training.name}-output.tar.gz"'
    phase = rb.kubectl(meta, f"get pod {name} -o jsonpath='{{.status.phase}}'")
    tar = f"exec {name} -- tar czf - -C {MODELS_MOUNT} {q(training.name)}"
    trainers = (rb.creates([training_manifest])
                + rb.follow_trainers(meta, training, selector) + run)
    if data:
        trainers = rb.after_job(meta, data.name, trainers)
    logs = training.log_dir.replace(f"$({collective.POD_NAME_VARIABLE})", "<pod>")
    return [
        image_section(plan, training, pre),
        ("Data and training", f"""\
```sh
{pre}{rb.creates(first)}{trainers}```

{data_note}Each pod runs `python -m paddle.distributed.launch` (`paddlegen explain` prints
each pod's command and environment). Its logs go to its own directory on the shared volume,
`{logs}`, and pod 0 prints trainer 0's. The first failed pod fails the run,
which is stopped after {training.deadline_seconds} seconds in any case. The job's NetworkPolicy
admits traffic to its pods only from its own pods, on every port (the launcher's and the
collective's ports after the master's are random); the VPC CNI's network policy agent
enforces it."""),
        ("The output, off EFS before anything is deleted", f"""\
```sh
{pre}{rb.kubectl(meta, 'create -f -')} <<'EOF'
{to_yaml(pod)}EOF
until [ "$({phase})" = Running ]; do sleep 5; done
{rb.kubectl(meta, tar)} > {archive}
{rb.kubectl(meta, f'delete pod {name}')}
tar -tzf {archive} >/dev/null && echo "the run's directory is in {archive[1:-1]}"
```

It holds the logs and whatever your script saved under {collective.SHARED_MOUNT}/{training.name}.
{ECR_KEPT if ecr_repository(plan) else ""}"""),
    ]


def before_you_start(plan: EksPlan) -> str:
    """What it costs, how long it takes and what it needs, before any block runs."""
    c, calendar, version = plan.cluster, eks_calendar(), plan.meta.target.kube.minor
    dates = calendar["releases"].get(version)
    support = "extended" if dates and dates["standardEnd"] <= calendar["asOf"] else "standard"
    nodes = c.worker_count or 0
    costs = [cost.eks_control_plane(version, support),
             cost.instances(c.region, c.worker_instance_type, nodes), cost.nat_gateway(c.region)]
    needs = ["a Linux x86_64 machine with bash, curl and tar (the tools below are its builds)",
             "the AWS CLI v2 and paddlegen on PATH",
             "an IAM user with access keys, and an administrator's AWS CLI profile in "
             "`$ADMIN_PROFILE` for the two IAM blocks",
             cost.vcpu_quota(c.region, {c.worker_instance_type: nodes})]
    if isinstance(plan.training, CollectiveTraining):
        needs.append("docker, to build and push the training image")
    if plan.launcher == "kubeflow":
        needs.append("git, with which kubectl fetches the training operator's manifests")
    needs.append("a shell in the directory of this file (`cd out/`): the blocks read `$PWD`")
    return cost.before_you_start(
        c.region, costs, "Data transfer, the NAT gateway's per-GB charge and storage",
        "It takes about 15 to 20 minutes for eksctl to make the cluster and its nodes, a few "
        "minutes for the file system's stack, and about as long again to tear it all down, "
        "which removes what this runbook made.", needs)


def failures(meta: Meta, training: PserverTraining) -> str:
    if not training.launch.scripted:
        return rb.failures(meta, training)
    return (f"The run fails as soon as a trainer pod fails (backoffLimit 0: a pserver cannot "
            f"take a replacement trainer, nor a restarted one its lost shard), and is stopped "
            f"after {training.deadline_seconds} seconds in any case; the launcher script fails "
            "the pod when its trainer fails. Its PodDisruptionBudget lets no trainer be "
            "evicted: `kubectl drain` waits for the run to end, and an upgrade of the managed "
            "node group gives up on a node it cannot drain (unless forced, which ends the "
            "run), so upgrade between runs. A node that dies ends the run, as any failed "
            "trainer does.")


def explain(plan: EksPlan) -> Explanation:
    training = plan.training
    if isinstance(training, CollectiveTraining):
        return collective.explanation(plan.meta, "eks", training,
                                      common_facts(plan.meta, "eks", training.nodes))
    assert plan.data is not None  # paddle-v1 always has its data Job
    return pserver_explanation(plan.meta, "eks", training, plan.data.out_dir)


PROFILE = Profile(
    name="eks",
    summary="today's AWS: PaddlePaddle 3 (or the tutorial's v1) on EKS, `aws/eksctl-cluster.yaml` "
            "for eksctl, EFS through its CSI driver, an Indexed Job or a PaddleJob",
    model=EksSpec,
    rules=(framework_fields, v1_only(port_range), v1_only(gradient_servers),
           either(worker_capacity), eks_version, eks_support,
           either(launcher_release(target)),
           kubeflow_names, instance_capacity, either(release_fields(target, JOBS)),
           either(resource_limits(JOBS)), either(job_names), v1_only(split_count),
           aws_region, zones_in_region, storage_request, efs_file_system,
           either(training_image_tag),
           either(dataset_image_tag, lambda spec: spec.dataset.image is not None),
           system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain, checks=checks)
