"""Profile `eks`: today's AWS. A cluster made by eksctl (a managed node group, EKS Pod Identity
for the EFS CSI driver, the VPC CNI enforcing NetworkPolicies), EFS through its CSI driver, the
data-preparation Job, and the parameter-server training Job run by one of three launchers: the
seed image's own start script, an Indexed Job with a launcher script (the default), or Kubeflow's
PaddleJob running the same script.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from math import ceil
from shlex import quote as q
from typing import Annotated, Any, Literal

from pydantic import Field

from paddlegen.compiler import clock, collective, kube_objects, kueue
from paddlegen.compiler import phases as run_phases
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.collective import CollectiveTraining
from paddlegen.compiler.kube_objects import Object
from paddlegen.compiler.phases import Phase
from paddlegen.compiler.plan import (
    DataJob,
    Meta,
    PserverTraining,
    meta_of,
)
from paddlegen.compiler.problems import FieldPath, did_you_mean
from paddlegen.compiler.profile import Explanation, FileViolation, Profile
from paddlegen.compiler.render import to_json, to_yaml
from paddlegen.compiler.rules import (
    Violation,
    gradient_servers,
    job_names,
    launcher_release,
    port_range,
    quantity,
    release_fields,
    resource_limits,
    rule,
    split_count,
    storage_positive,
    storage_request,
    system_namespace,
    training_image_tag,
    worker_capacity,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.compiler.template import render
from paddlegen.profiles import workload
from paddlegen.profiles.aws import budget, capacity, cost, data, efs, eksctl, instance_types
from paddlegen.profiles.aws import formats as aws_p
from paddlegen.profiles.aws import runbook as aws_rb
from paddlegen.profiles.aws.models import EfsStorage
from paddlegen.profiles.aws.rules import region_of
from paddlegen.profiles.aws.storage import SEED_DATA_MOUNT, EfsCsiVolume
from paddlegen.profiles.workload import (
    OPERATOR_MANIFESTS,
    TRAINING_OPERATOR,
    WorkloadDataset,
    WorkloadSpec,
    WorkloadTraining,
    either,
    v1_only,
)
from paddlegen.schema.models import (
    Quantities,
    Resources,
    SpecBase,
    SpecModel,
    text,
)

EKSCTL = "v0.230.0"
EKSCTL_RELEASES = "https://github.com/eksctl-io/eksctl/releases/download"
# The releases eksctl v0.230.0 knows that paddlegen has schemas for; EKS itself decides, on the
# day, which it still runs (eksctl asks it).
EKS_VERSIONS = ("1.33", "1.34", "1.35")
NODE_GROUP = "trainers"
CLUSTER_DOMAIN = "cluster.local"  # EKS sets no other (its kubelet's clusterDomain)
LOG_RETENTION_DAYS = 30
# Prints the stack named by the file system's owner tag: the stack that made it (one the spec
# brought has no such tag). Teardown deletes the file system only if that is this runbook's stack.
OWNER_OF_FILE_SYSTEM = (
    'aws efs describe-file-systems --file-system-id "$FILE_SYSTEM_ID" --query '
    f"\"FileSystems[0].Tags[?Key=='{efs.OWNER_TAG}'].Value\" --output text")
EFS_CSI_ROLE_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
JOBS = ("training", "dataset")
# What the user who runs eksctl needs beside the inline policy (aws/iam-policy.json): the
# managed half of eksctl's documented minimum, and EFS for the volume's stack.
MANAGED_POLICIES = ("AmazonEC2FullAccess", "AWSCloudFormationFullAccess",
                    "AmazonElasticFileSystemFullAccess")


class EksCluster(SpecModel, title="EKS cluster"):
    """The EKS cluster eksctl makes."""

    name: Annotated[str, text(aws_p.EKS_CLUSTER_NAME, "Cluster name; eksctl's stacks are "
                              "eksctl-<name>-cluster and eksctl-<name>-nodegroup-trainers.")]
    region: Annotated[str, text(aws_p.REGION, "AWS region, e.g. eu-central-1.")]
    availability_zones: list[Annotated[str, text(aws_p.ZONE, "A zone of the region.")]] = Field(
        min_length=2, max_length=6, description=(
            "Zones of the cluster's subnets, at least two in the region (EKS needs two); the "
            "file system gets a mount target in each."))
    account_id: Annotated[
        str, text(aws_p.ACCOUNT_ID, "AWS account id: 12 digits, quoted so YAML keeps it a string.")
    ]
    worker_count: Annotated[
        int | None,
        Field(ge=1, le=1000, description=(
            "Nodes of the managed node group. Unset: with framework paddle on a type of "
            "paddlegen's table, the fewest that hold training.nodes pods (one a node on CPU "
            "when sized to the node, the type's GPUs // gpusPerNode on GPUs); otherwise "
            "training.nodes.")),
    ] = None
    worker_instance_type: Annotated[
        str, text(aws_p.INSTANCE_TYPE, "EC2 instance type of the nodes.")
    ]
    efa: bool = Field(default=False, description=(
        "Give the nodes every Elastic Fabric Adapter their type has (eksctl's efaEnabled) and "
        "each trainer pod all of them, for NCCL; the node group then lives in the first zone "
        "(eksctl puts EFA node groups in one zone, in a cluster placement group)."))
    monthly_budget: Annotated[
        float | None,  # strict float takes YAML's ints too; the JSON Schema stays a number
        Field(ge=budget.MIN_MONTHLY_BUDGET, le=budget.MAX_MONTHLY_BUDGET, description=(
            "A monthly budget in USD for the account's cost: with alertEmail, aws/budget.cfn.yaml "
            "makes an AWS Budgets budget that e-mails at 50, 80 and 100 % of the actual cost "
            "and 100 % of the forecast; the cluster phase deploys it, `down` removes it. It "
            "counts the whole account, not the cluster alone.")),
    ] = None
    alert_email: Annotated[
        str | None, text(budget.EMAIL, "Where the budget's alerts go (with monthlyBudget).")
    ] = None


class EksEfs(SpecModel, title="EFS file system"):
    """The EFS file system of the shared volume."""

    file_system_id: Annotated[
        str | None, text(aws_p.FILE_SYSTEM_ID, "An existing file system; absent, aws/efs.cfn.yaml "
                         "makes one, and the runbook brings its id here.")
    ] = None


class EksStorage(EfsStorage):
    """EFS through its CSI driver, as a PersistentVolume bound to one claim."""

    efs: EksEfs = Field(  # type: ignore[assignment]  # the CSI driver names it by its id
        default=EksEfs.model_construct(), description="The file system.")


class EksSpec(WorkloadSpec, SpecBase):
    """Distributed training on an EKS cluster made by eksctl, EFS through its CSI driver."""

    profile: Literal["eks"] = Field(description="Which way to run.")
    cluster: EksCluster = Field(description="The EKS cluster.")
    storage: EksStorage = Field(description="The shared volume.")
    dataset: WorkloadDataset = Field(description="The data-preparation Job.")
    training: WorkloadTraining = Field(description="The training run.")


@rule("framework-fields",
      reads=("cluster.efa", *workload.framework_fields.reads))
def framework_fields(spec: EksSpec) -> Iterable[Violation]:
    """training's fields belong to its framework: port, portsNum, portsNumForSparse,
    gradientServers, trainerCount, nic, configDir and jobPath only to paddle-v1 (PaddlePaddle
    v1's parameter server); script, args, gpusPerNode, masterPort and cluster.efa only to
    paddle (PaddlePaddle 3); paddle needs an image and a script, and runs with the indexed or
    kubeflow launcher."""
    if spec.training.framework != "paddle" and spec.cluster.efa:
        yield ("cluster", "efa"), ("EFA serves PaddlePaddle 3's collective (NCCL); "
                                   "PaddlePaddle v1's pservers talk TCP")
    yield from workload.framework_fields.check(spec)


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


@rule("eks-support", severity="warning", reads=("kubeVersion",))
def eks_support(spec: EksSpec) -> Iterable[Violation]:
    """kubeVersion is in EKS standard support today (the calendar vendored in
    profiles/aws/eks-versions.json; SOURCE_DATE_EPOCH sets the day): past it, EKS bills the
    cluster at the extended support price until that ends too, then upgrades it."""
    calendar = eks_calendar()
    version = spec.kube_version or default_version()
    dates = calendar["releases"].get(version)
    if dates is None or dates["standardEnd"] > clock.today():
        return
    prices = calendar["pricePerClusterHour"]
    yield ("kubeVersion",), (
        f"EKS {version} left standard support on {dates['standardEnd']}: the cluster costs "
        f"${prices['extended']} an hour instead of ${prices['standard']} until "
        f"{dates['extendedEnd']}, when EKS upgrades it; use {default_version()}")


TARGET_READS = ("kubeVersion",)  # what target() reads of the spec


def target(spec: EksSpec) -> Target:
    version = spec.kube_version or default_version()
    return Target(f"eksctl {EKSCTL}, EKS {version}", KubeRelease(version, version))


@rule("eks-version", reads=("kubeVersion",))
def eks_version(spec: EksSpec) -> Iterable[Violation]:
    """kubeVersion is a release EKS runs that paddlegen has schemas for (1.33, 1.34, 1.35: the
    ones eksctl v0.230.0 knows; if unset, the newest in standard support on the vendored
    calendar's date, 1.35)."""
    if spec.kube_version is not None and spec.kube_version not in EKS_VERSIONS:
        yield ("kubeVersion",), (f"{spec.kube_version} is not an EKS release paddlegen targets; "
                                 f"use one of {', '.join(EKS_VERSIONS)}")


def aws_regions() -> tuple[str, ...]:
    return tuple(data("regions.json")["regions"])


@rule("aws-region", reads=("cluster.region",))
def aws_region(spec: EksSpec) -> Iterable[Violation]:
    """cluster.region is a region of AWS's commercial partition (the list botocore bundles,
    vendored in profiles/aws/regions.json): the one whose ARNs paddlegen writes."""
    region = spec.cluster.region
    if region not in aws_regions():
        yield ("cluster", "region"), (f"{region} is not an AWS region"
                                      f"{did_you_mean(region, aws_regions())}")


@rule("zones-in-region", reads=("cluster.region", "cluster.availabilityZones"))
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


@rule("efs-file-system", severity="warning", reads=("storage.efs.fileSystemId",))
def efs_file_system(spec: EksSpec) -> Iterable[Violation]:
    """storage.efs.fileSystemId is set: without it the tree has no PersistentVolume yet (the
    claim waits), until the runbook brings the id of the file system aws/efs.cfn.yaml makes."""
    if spec.storage.efs.file_system_id is None:
        yield ("storage", "efs"), (
            "no fileSystemId: aws/efs.cfn.yaml makes the file system and the claim waits for "
            "its volume; put the id here once the runbook has it, and rebuild")


INSTANCE_TABLE = "profiles/aws/instance-types.json"


def type_facts(kind: str) -> dict[str, Any] | None:
    """The table's facts of an instance type, if paddlegen knows it."""
    return None if kind.startswith("_") else instance_types().get(kind)


def known_types() -> list[str]:
    return [name for name in instance_types() if not name.startswith("_")]


def worker_node(cluster: EksCluster) -> capacity.Node | None:
    """A node of the node group, as the trainer pods see it, if paddlegen knows its type."""
    facts = type_facts(cluster.worker_instance_type)
    return (None if facts is None
            else capacity.node(cluster.worker_instance_type, facts, cluster.efa))


def trainer_gpus(spec: EksSpec) -> int:
    t = spec.training
    return (t.gpus_per_node or 0) if t.framework == "paddle" else 0


def sized_resources(spec: EksSpec, node: capacity.Node | None) -> Resources | None:
    """A paddle trainer pod's resources where the spec gives none: its equal share of what a
    node leaves trainer pods, among the pods that share the node (by GPUs; one on CPU)."""
    if spec.training.framework != "paddle" or spec.training.resources is not None or not node:
        return None
    pods = node.pods_by_gpus(trainer_gpus(spec))
    if not pods:  # more GPUs than the type has: rule instance-capacity refuses it
        return None
    millicores, mib = capacity.share(node, pods)
    size = Quantities(cpu=f"{millicores}m", memory=f"{mib}Mi")
    # Guaranteed QoS (requests = limits): the pod reserves all it may use, so the kubelet evicts
    # it last under memory pressure and the kernel's OOM killer picks others first. It costs
    # nothing: the share is the pod's anyway, no other workload is meant for these nodes, and a
    # CPU limit above the request would only take CPU from the trainers beside it.
    return Resources(requests=size, limits=size)


def trainer_resources(spec: EksSpec, node: capacity.Node | None) -> Resources | None:
    """Each trainer pod's resources as built: the spec's (paddle-v1's over the tutorial's), else
    sized to the node (None: the type is unknown, which rule instance-type refuses)."""
    t = spec.training
    if t.framework == "paddle-v1":
        return workload.v1_resources(t)
    return t.resources or sized_resources(spec, node)


def requested(resources: Resources | None, kind: str) -> tuple[FieldPath, str] | None:
    """Where a pod's request of `kind` (cpu, memory) is written, and what it is: the request,
    else the limit (which Kubernetes then takes for the request)."""
    if resources is None:
        return None
    for side in ("requests", "limits"):
        value = getattr(getattr(resources, side), kind)
        if value is not None:
            return ("training", "resources", side, kind), value
    return None


def pods_per_node(spec: EksSpec, node: capacity.Node) -> int:
    """How many trainer pods one node holds: by GPUs, CPU and memory requests, EFA adapters."""
    resources = trainer_resources(spec, node)
    cpu, memory = (requested(resources, kind) for kind in ("cpu", "memory"))
    return capacity.fitting_pods(
        node, trainer_gpus(spec),
        quantity(cpu[1]) / capacity.MILLI if cpu else None,
        quantity(memory[1]) / capacity.MIB if memory else None)


def worker_count(spec: EksSpec, node: capacity.Node | None) -> int:
    """The node group's size: the spec's; else, for paddle on a type paddlegen knows, the fewest
    nodes that hold the trainer pods; else one node per pod (paddle-v1, as the tutorial)."""
    nodes = spec.training.nodes
    if spec.cluster.worker_count is not None:
        return spec.cluster.worker_count
    fit = pods_per_node(spec, node) if node and spec.training.framework == "paddle" else 0
    return -(-nodes // fit) if fit else nodes


def count(number: int, noun: str) -> str:
    """'no GPU', '1 GPU', '2 GPUs'."""
    return f"no {noun}" if number == 0 else f"{number} {noun}{'' if number == 1 else 's'}"


TYPE_READS = ("cluster.workerInstanceType", "cluster.efa", "training.framework",
              "training.resources")


def typo_hint(kind: str) -> str:
    """'; did you mean ...?' where a type paddlegen does not know is a misspelt one it knows:
    close to one, and not of a family it knows with a size EC2 has (t3.small is no typo)."""
    table = known_types()
    if kind in table or capacity.looks_real(kind, table):
        return ""
    return did_you_mean(kind, table)


def unknown_type(kind: str) -> bool:
    """A type outside the table that paddlegen takes for a real one it does not know."""
    return (type_facts(kind) is None and capacity.unsupported(kind) is None
            and not typo_hint(kind))


@rule("instance-type", reads=(*TYPE_READS, "training.queue"))
def instance_type(spec: EksSpec) -> Iterable[Violation]:
    """cluster.workerInstanceType is a type PaddlePaddle's images run on: they are built for
    NVIDIA GPUs and CPUs, on x86_64. Types of other hardware are refused by what they have:
    Trainium (trn*), Inferentia (inf*), Gaudi (dl1), Qualcomm AI 100 (dl2q), AMD GPUs (g4ad),
    FPGAs (f1, f2, vt1), Mac, and arm64: Graviton (a `g` after the generation digit: m6g,
    c7gn, g5g, t4g, x2gd, im4gn; and a1) and Grace (p6e-gb200). A name close to a type of the table
    (profiles/aws/instance-types.json) is taken for a typo of it. A type outside the table is
    an error where paddlegen would have to guess what it writes: with cluster.efa, how many
    adapters each pod gets (none would leave NCCL on TCP while eksctl enables EFA); with
    framework paddle and no training.resources, the pods' size; with training.queue, the
    quota of the node group's ClusterQueue. Otherwise the output is what the spec says, and
    rule unknown-instance-type warns of what goes unchecked."""
    kind, path = spec.cluster.worker_instance_type, ("cluster", "workerInstanceType")
    hardware = capacity.unsupported(kind)
    if hardware is not None:
        yield path, f"{kind} has {hardware}; PaddlePaddle's images are built for NVIDIA GPUs " \
                    f"and CPUs, on x86_64: choose {instead_of(kind, hardware)}"
    elif typo := typo_hint(kind):
        yield path, f"not an EC2 instance type{typo}"
    else:
        yield from unknown_type_refusals(spec)


def unknown_type_refusals(spec: EksSpec) -> list[Violation]:
    """Where a type outside the table would make paddlegen guess what it writes (the rule
    instance-type's errors; without them, unknown-instance-type's warning)."""
    kind, path = spec.cluster.worker_instance_type, ("cluster", "workerInstanceType")
    found: list[Violation] = []
    if unknown_type(kind):
        if spec.cluster.efa:
            found.append((("cluster", "efa"), (
                f"paddlegen does not know how many Elastic Fabric Adapters {kind} has, so its "
                f"pods would get none while eksctl enables EFA; choose a type of {INSTANCE_TABLE}, "
                "or leave efa out")))
        if spec.training.framework == "paddle" and spec.training.resources is None:
            found.append((path, (
                f"paddlegen does not know {kind}'s CPUs, memory and GPUs, so it cannot size the "
                "trainer pods to it; set training.resources (requests and limits), or choose a "
                f"type of {INSTANCE_TABLE}")))
        if spec.training.framework == "paddle" and spec.training.queue is not None:
            found.append((("training", "queue"), (
                f"paddlegen does not know {kind}'s CPUs, memory and GPUs, so it cannot write "
                f"the quota of the node group's ClusterQueue; choose a type of "
                f"{INSTANCE_TABLE}, or leave queue out")))
    return found


def instead_of(kind: str, hardware: str) -> str:
    """What to choose instead of a type whose hardware PaddlePaddle's images do not serve."""
    if hardware != capacity.GRAVITON_WORDS:
        return "an NVIDIA GPU type (such as g5, g6e, p4d or p5) or an x86_64 CPU type"
    sibling = capacity.x86_sibling(kind, instance_types())
    return f"its x86_64 counterpart {sibling}" if sibling else "an x86_64 type (Intel or AMD)"


@rule("unknown-instance-type", severity="warning",
      reads=(*TYPE_READS, "training.gpusPerNode", "training.queue"))
def unknown_instance_type(spec: EksSpec) -> Iterable[Violation]:
    """cluster.workerInstanceType is in paddlegen's table (profiles/aws/instance-types.json),
    which holds the common sizes of the families people train on. Another real type builds
    exactly as the spec says (its training.resources, no EFA; rule instance-type refuses the
    rest), so it is a warning, not an error: but nothing checks its GPUs against gpusPerNode,
    its EFA adapters, whether the pods' CPU and memory requests fit a node, nor how many pods
    share one."""
    kind = spec.cluster.worker_instance_type
    if not unknown_type(kind) or unknown_type_refusals(spec):
        return  # rule instance-type refuses it
    gpus = trainer_gpus(spec)
    asked = f" (gpusPerNode {gpus})" if gpus else ""
    yield ("cluster", "workerInstanceType"), (
        f"{kind} is not in paddlegen's table ({INSTANCE_TABLE}), so nothing checks its "
        f"GPUs{asked}, its EFA adapters, or that the trainer pods' CPU and memory fit a node; "
        "check them against AWS's specification of the type")


@rule("instance-capacity", reads=(*TYPE_READS, "training.gpusPerNode"))
def instance_capacity(spec: EksSpec) -> Iterable[Violation]:
    """Each trainer pod fits on one node of cluster.workerInstanceType (a type of paddlegen's
    table), or it stays Pending: training.gpusPerNode at most the type's GPUs (the smallest
    type of the same family that has enough is suggested, where there is one); the pod's CPU
    and memory requests (or limits, where it requests none) at most what a node leaves trainer
    pods, the numbers the pods are sized by (training.resources: the EKS AMI kubelet's
    allocatable less the allowance for the cluster's own pods); with cluster.efa, a type with
    Elastic Fabric Adapters, at least one for each pod that shares a node."""
    node = worker_node(spec.cluster)
    if node is None:
        return
    kind, gpus = node.kind, trainer_gpus(spec)
    if spec.cluster.efa and not node.efa_adapters:
        yield ("cluster", "efa"), f"{kind} has no Elastic Fabric Adapter; choose a type with one"
    if gpus > node.gpus:
        ask = "set it to 0 (CPU)" if not node.gpus else f"ask for at most {node.gpus}"
        yield ("training", "gpusPerNode"), (
            f"{kind} has {count(node.gpus, 'GPU')}; {ask}, or {larger_type(kind, gpus)}")
    elif node.efa_adapters and not node.efa_per_pod(gpus):
        least = -(-node.gpus // node.efa_adapters)
        yield ("cluster", "efa"), (
            f"{kind} has {count(node.efa_adapters, 'Elastic Fabric Adapter')} for the "
            f"{node.pods_by_gpus(gpus)} trainer pods of {count(gpus, 'GPU')} on each node; "
            f"give each pod one: raise gpusPerNode to {least}, or leave efa out")
    resources = trainer_resources(spec, node)
    for name, room, allocated, unit in (
            ("cpu", node.millicores, node.allocatable_millicores, "m"),
            ("memory", node.mib, node.allocatable_mib, "Mi")):
        found = requested(resources, name)
        if found is None:
            continue
        path, asked = found
        size = quantity(asked) / (capacity.MILLI if unit == "m" else capacity.MIB)
        if size > room:
            yield path, (
                f"{asked} does not fit on a {kind} node: its kubelet gives pods "
                f"{allocated}{unit}, of which the cluster's own pods keep "
                f"{allocated - room}{unit}; ask for at most {room}{unit}, or choose a larger "
                "instance type")


def larger_type(kind: str, gpus: int) -> str:
    """The smallest type with at least `gpus` GPUs: of the same family if it has one."""
    family, table = kind.split(".")[0], instance_types()
    fitting = sorted((table[name]["gpus"], table[name]["vcpu"], table[name]["memoryMiB"], name)
                     for name in known_types() if table[name]["gpus"] >= gpus)
    same = [row for row in fitting if row[3].split(".")[0] == family]
    if same:
        return (f"choose {same[0][3]} ({count(same[0][0], 'GPU')}), the smallest {family} "
                f"with {gpus} or more")
    if fitting:
        return (f"choose {fitting[0][3]} ({count(fitting[0][0], 'GPU')}), the smallest type "
                f"paddlegen knows with {gpus} or more")
    return f"split the work: no type paddlegen knows has {gpus}"


GROUP_READS = (*TYPE_READS, "training.gpusPerNode", "training.nodes", "training.launcher",
               "cluster.workerCount", "training.queue")


@rule("node-group-capacity", reads=GROUP_READS)
def node_group_capacity(spec: EksSpec) -> Iterable[Violation]:
    """The node group holds every trainer pod: training.nodes at most cluster.workerCount times
    the pods one node holds (by GPUs, by CPU and memory requests against what a node leaves
    trainer pods, by EFA adapters, by the pods its kubelet admits), or the pods beyond stay
    Pending while the rest wait for them. Unset, workerCount is the fewest nodes that hold
    them (paddle) or training.nodes (paddle-v1); the seed launcher's one pod a node is rule
    worker-capacity's, and a job over its queue's quota rule queue-quota's."""
    node, t, workers = worker_node(spec.cluster), spec.training, spec.cluster.worker_count
    if node is None or workers is None or t.launcher == "seed" or over_quota(spec):
        return
    fit = pods_per_node(spec, node)
    if fit and t.nodes > workers * fit:  # none fits: rule instance-capacity says why
        held = workers * fit
        yield ("cluster", "workerCount"), (
            f"the node group, {count(workers, 'node')} of {node.kind} with room for "
            f"{count(fit, 'trainer pod')} each, holds {held} of the {t.nodes} pods of "
            f"training.nodes: {t.nodes - held} would stay Pending; raise workerCount to "
            f"{-(-t.nodes // fit)}, or lower training.nodes to {held}")


def pod_requests(spec: EksSpec, node: capacity.Node) -> dict[str, Decimal]:
    """What each trainer pod requests, in the units of the node group's quota (millicores, MiB,
    GPUs, EFA adapters), as Kubernetes and Kueue count it: the request, else the limit."""
    resources, gpus = trainer_resources(spec, node), trainer_gpus(spec)
    found = {name: quantity(asked[1]) / unit if (asked := requested(resources, name)) else
             Decimal(0) for name, unit in (("cpu", capacity.MILLI), ("memory", capacity.MIB))}
    found[collective.GPU_RESOURCE] = Decimal(gpus)
    found[EFA_RESOURCE] = Decimal(node.efa_per_pod(gpus) if node.efa_adapters else 0)
    return found


def over_quota(spec: EksSpec) -> list[tuple[kueue.Quota, Decimal]]:
    """With a queue, each quota of the node group's ClusterQueue that the job's pods need more
    of, all together, and what they need; none where the rules of a node's size say what is
    wrong (a type paddlegen does not know, a pod no node holds)."""
    node, t, workers = worker_node(spec.cluster), spec.training, spec.cluster.worker_count
    if t.queue is None or t.framework != "paddle" or node is None or workers is None \
            or not pods_per_node(spec, node):
        return []  # unset, workerCount is the fewest nodes that hold the pods: they fit
    asked = pod_requests(spec, node)
    return [(quota, t.nodes * asked[quota.resource])
            for quota in capacity.node_group_quota(node, workers)
            if t.nodes * asked[quota.resource] > quota.amount]


@rule("queue-quota", reads=GROUP_READS)
def queue_quota(spec: EksSpec) -> Iterable[Violation]:
    """With training.queue, the job fits the quota of its ClusterQueue, which paddlegen writes
    as what the node group leaves trainer pods (cluster.workerCount nodes, each with the
    numbers rule instance-capacity sizes the pods by, and every GPU and EFA adapter):
    training.nodes times each pod's requests at most the quota of each resource, or Kueue
    admits none of the job, ever. Said here in the stead of rule node-group-capacity, whose
    Pending pods a queue never makes."""
    over = over_quota(spec)
    if not over:
        return
    node, t = worker_node(spec.cluster), spec.training
    assert node is not None and spec.cluster.worker_count is not None  # over_quota's
    workers, fit = spec.cluster.worker_count, pods_per_node(spec, node)
    needs = listed([f"{ceil(need)}{quota.unit} {quota.resource}" for quota, need in over])
    holds = listed([quota.quantity for quota, _ in over])
    yield ("training", "queue"), (
        f"the {t.nodes} trainer pods need {needs}; the ClusterQueue {NODE_GROUP} holds "
        f"{holds} (what the node group, {count(workers, 'node')} of {node.kind}, leaves trainer "
        f"pods), so Kueue would never admit the job; raise cluster.workerCount to "
        f"{-(-t.nodes // fit)}, or lower training.nodes to {workers * fit}")


def listed(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join(filter(None, (", ".join(items[:-1]), items[-1])))


@rule("idle-gpus", severity="warning", reads=("cluster.workerInstanceType", "cluster.efa",
                                              "training.framework", "training.gpusPerNode"))
def idle_gpus(spec: EksSpec) -> Iterable[Violation]:
    """The trainer pods use every GPU of the nodes they are billed for: on a GPU type,
    training.gpusPerNode 0 (CPU, the default) leaves them all idle, and a count that does not
    divide the type's leaves the rest idle."""
    node, gpus = worker_node(spec.cluster), trainer_gpus(spec)
    if node is None or not node.gpus or spec.training.framework != "paddle" or gpus > node.gpus:
        return
    idle = node.gpus - node.pods_by_gpus(gpus) * gpus if gpus else node.gpus
    if not gpus:
        yield ("training", "gpusPerNode"), (
            f"{node.kind} has {count(node.gpus, 'GPU')}, which CPU trainers (gpusPerNode 0) "
            f"leave idle while each node is billed for them; set gpusPerNode to "
            f"{node.gpus}, or choose a type without GPUs")
    elif idle:
        divisors = [n for n in range(1, node.gpus + 1) if node.gpus % n == 0]
        yield ("training", "gpusPerNode"), (
            f"{node.kind} has {count(node.gpus, 'GPU')}: pods of {gpus} leave "
            f"{count(idle, 'GPU')} of each node idle, and billed; use "
            f"{', '.join(map(str, divisors[:-1]))} or {divisors[-1]}")


@dataclass(frozen=True)
class EksPlan:
    meta: Meta
    cluster: EksCluster  # the spec's settings, with worker_count resolved
    efs_stack: str
    iam_group: str  # also its inline policy's name
    volume: EfsCsiVolume
    data: DataJob | None  # paddle runs one only if the spec names its image
    training: PserverTraining | CollectiveTraining
    queues: kueue.Queues | None = None  # with training.queue: Kueue's, for the node group

    @property
    def launcher(self) -> str:
        return workload.launcher_of(self.training)


# NCCL over EFA (aws-ofi-nccl in the image): libfabric's EFA provider, GPUDirect RDMA on the
# types whose EFA reads GPU memory directly, and NCCL's INFO log, whose lines tell whether it took
# EFA or fell back to TCP (the runbook quotes them).
EFA_RESOURCE = capacity.EFA_RESOURCE
RDMA_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300")


def efa_wiring(cluster: EksCluster, node: capacity.Node | None, gpus_per_node: int
               ) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """Each pod's EFA devices (its equal share of the node's, among the pods that share it) and
    NCCL's environment."""
    adapters = node.efa_per_pod(gpus_per_node) if node and node.efa_adapters else 0
    if not adapters:  # with cluster.efa, rules instance-type and instance-capacity say why
        return (), ()
    env = [("FI_PROVIDER", "efa")]
    if cluster.worker_instance_type.split(".")[0] in RDMA_FAMILIES:
        env.append(("FI_EFA_USE_DEVICE_RDMA", "1"))
    env.append(("NCCL_DEBUG", "INFO"))
    return ((EFA_RESOURCE, str(adapters)),), tuple(env)


def derive(spec: EksSpec) -> EksPlan:
    namespace, tgt = spec.metadata.namespace, target(spec)
    node = worker_node(spec.cluster)
    cluster = spec.cluster.model_copy(update={"worker_count": worker_count(spec, node)})
    storage = spec.storage
    volume = EfsCsiVolume(f"{namespace}-{storage.claim_name}", storage.claim_name,
                          storage.capacity, storage.request, storage.efs.file_system_id)
    data, training = workload.derive_training(
        spec, volume, tgt.kube, efa_wiring(spec.cluster, node, trainer_gpus(spec)),
        CLUSTER_DOMAIN, sized_resources(spec, node))
    return EksPlan(meta_of(spec, tgt, training.image), cluster, f"{cluster.name}-efs",
                   f"{cluster.name}-eksctl", volume, data, training,
                   queues(spec.training.queue, node, cluster.worker_count or 0))


# Kueue's objects for a run with a queue. The ClusterQueue is the node group's quota, named after
# it: the cluster is this tree's own, and an EKS cluster's name may hold capitals, which no
# Kubernetes name may. The flavor is the node group's nodes, by labels the nodes carry: the
# kubelet's instance type, and the node group's name, which EKS puts on a managed node group's
# nodes (eksctl v0.230.0 selects an unowned managed group's nodes by it,
# pkg/apis/eksctl.io/v1alpha5/types.go EKSNodeGroupNameLabel).
NODE_GROUP_LABEL = "eks.amazonaws.com/nodegroup"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def queues(queue: str | None, node: capacity.Node | None, workers: int
           ) -> kueue.Queues | None:
    """The run's queues: its LocalQueue `queue` in its namespace, on a ClusterQueue whose quota
    is what the node group leaves trainer pods (None without a queue, or for a type paddlegen
    does not know, which rule instance-type refuses with a queue)."""
    if queue is None or node is None:
        return None
    return kueue.Queues(
        flavor=node.kind,
        node_labels=((INSTANCE_TYPE_LABEL, node.kind), (NODE_GROUP_LABEL, NODE_GROUP)),
        cluster_queue=NODE_GROUP, local_queue=queue,
        quota=capacity.node_group_quota(node, workers))


def objects(plan: EksPlan) -> list[Object]:
    """The namespace first (the LocalQueue lives in it), then the queues, then what they
    admit and what it needs."""
    queued = kueue.objects(plan.meta, plan.queues) if plan.queues else []
    return [*kube_objects.namespace(plan.meta), *queued,
            *workload.objects(plan.meta, plan.volume, plan.data, plan.training,
                              own_namespace=False)]


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
            *([{"Sid": "Budget", "Effect": "Allow", "Action": list(budget.IAM_ACTIONS),
                "Resource": [budget.budget_arn(c.account_id, c.name, c.region)]},
               {"Sid": "BudgetBillingViews", "Effect": "Allow",
                "Action": list(budget.BILLING_VIEW_ACTIONS),
                "Resource": [f"arn:aws:billing::{c.account_id}:billingview/*"]}]
              if cost_guard(plan) else []),
        ],
    }


@dataclass(frozen=True)
class CostGuard:
    """The budget of cluster.monthlyBudget: its template, and the runbook's lines and words."""

    template: dict[str, Any]
    deploy: str
    remove: str
    about: str


def cost_guard(plan: EksPlan) -> CostGuard | None:
    c = plan.cluster
    if c.monthly_budget is None or c.alert_email is None:
        return None
    stack, region = budget.stack_name(c.name, c.region), budget.BUDGET_REGION
    deploy = (aws_rb.stack_removed(stack, only_failed=True, region=region)
              + budget.deploy_lines(c.name, c.region).rstrip("\n")
              + aws_rb.or_stack_failures(stack, region=region))
    return CostGuard(budget.template(c.name, c.region, c.monthly_budget, c.alert_email), deploy,
                     aws_rb.stack_removed(stack, region=region),
                     budget.cost_text(c.name, c.region, c.monthly_budget, c.alert_email))


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
            **({budget.TEMPLATE_FILE: to_yaml(guard.template)} if (guard := cost_guard(plan))
               else {}),
            aws_rb.TRUST_POLICY: to_json(aws_rb.trust_policy(plan.cluster.account_id)),
            aws_rb.ASSUME_ROLE_POLICY: to_json(aws_rb.assume_role_policy(
                plan.cluster.account_id, plan.iam_group)),
            "aws/efs.cfn.yaml": to_yaml(efs.eks_template(plan.cluster.name,
                                                         plan.efs_stack, zones))}


def checks(plan: EksPlan) -> list[FileViolation]:
    config = cluster_config(plan)
    return [FileViolation(CLUSTER_CONFIG, config, where, message)
            for where, message in eksctl.violations(config)]


def runbook(plan: EksPlan, manifest_paths: list[str]) -> str:
    """The phases: the tools and the user's profile, the role, the image, the cluster (with what
    a launcher and a queue need), the file system (whose id comes back into the spec), the data,
    the run, its status, log and stop, the output off EFS, and the teardown:
    profiles/eks.md.j2, filled from the plan."""
    training = plan.training
    collective_run = isinstance(training, CollectiveTraining)
    return render(__package__, "eks.md.j2", {
        "plan": plan, "manifests": rb.tree_manifests(manifest_paths, plan.data),
        "collective_run": collective_run, "rb": rb, "ph": run_phases, "phases": phases(plan),
        "aws_rb": aws_rb, "collective": collective, "eksctl": EKSCTL,
        "eksctl_releases": EKSCTL_RELEASES, "operator_release": TRAINING_OPERATOR,
        "operator_manifests": OPERATOR_MANIFESTS, "managed_policies": MANAGED_POLICIES,
        "owner_tag": efs.OWNER_TAG, "owner_of_file_system": OWNER_OF_FILE_SYSTEM,
        "log_group": log_group, "image": training_image(plan), "ecr": ecr_repository(plan),
        "logs": workload.pod_log_dir(plan.training), "failures": failures,
        "data_mount": SEED_DATA_MOUNT, "before_you_start": before_you_start(plan),
        "status": status(plan), "budget": cost_guard(plan), "node_group": NODE_GROUP,
        "reader_pod": rb.reader_pod(plan.meta, training),
        "controllers": rb.needed_controllers(training)})


def hourly_costs(plan: EksPlan) -> list[cost.Cost]:
    """What the cluster as specified costs an hour: its control plane, nodes, NAT gateway."""
    c, calendar, version = plan.cluster, eks_calendar(), plan.meta.target.kube.minor
    dates = calendar["releases"].get(version)
    support = "extended" if dates and dates["standardEnd"] <= calendar["asOf"] else "standard"
    return [cost.eks_control_plane(version, support),
            cost.instances(c.region, c.worker_instance_type, c.worker_count or 0),
            cost.nat_gateway(c.region)]


def phases(plan: EksPlan) -> list[Phase]:
    """The runbook's phases, in order; nothing bills before the cluster, the image built first."""
    c = plan.cluster
    rows = hourly_costs(plan)
    known = [row.per_hour for row in rows if row.per_hour is not None]
    hourly = (f"about {cost.money(sum(known))} an hour" if len(known) == len(rows)
              else "by the hour (the price table lacks a part)")
    collective_run = isinstance(plan.training, CollectiveTraining)
    return [
        Phase("setup", "eksctl and kubectl into $ASSETS/bin, checked; your AWS CLI profile"),
        Phase("iam", "as an administrator: the role the other phases take"),
        *([Phase("image", "the training image: built, checked, pushed",
                 "the registry's storage, by the GB-month")] if collective_run else []),
        Phase("cluster", "the EKS cluster and its nodes, and what the run needs on it",
              f"{hourly}: the control plane, {c.worker_count} x "
              f"{c.worker_instance_type}, the NAT gateway"),
        Phase("storage", "the EFS file system in the cluster's network",
              "EFS storage, by the GB-month"),
        *([Phase("data", "the data Job, afresh if it failed")] if plan.data else []),
        rb.train_phase(plan.training),
        Phase("status", "what bills now, and whether a run is on"),
        Phase("logs", "the first trainer's log, followed"),
        Phase("stop", "the run ended; the cluster stays"),
        Phase("output", "the run's output copied into $ASSETS"),
        Phase("down", "the output copied, then all the runbook made deleted"),
        Phase("iam-down", "as an administrator: the role deleted"),
    ]


def status(plan: EksPlan) -> str:
    """The status phase: what of the cluster and the file system is there, so billing, each
    with its price from the cost table, then the run, where there is a cluster."""
    c = plan.cluster
    control_plane, _, nat = hourly_costs(plan)
    nat_price = cost.money(nat.per_hour or 0)
    node = cost.instances(c.region, c.worker_instance_type, 1)
    each = ("at " + cost.money(node.per_hour) + " an hour each" if node.per_hour is not None
            else "(no price in the table)")
    nodes = (f"aws eks describe-nodegroup --cluster-name {q(c.name)} --nodegroup-name "
             f"{NODE_GROUP} --query nodegroup.scalingConfig.desiredSize --output text")
    # eksctl tags its stacks, so every resource they make, alpha.eksctl.io/cluster-name (seen
    # on its VPC, subnets and internet gateway; CloudFormation passes a stack's tags on)
    nats = (f"aws ec2 describe-nat-gateways --filter Name=tag:alpha.eksctl.io/cluster-name,"
            f"Values={q(c.name)} Name=state,Values=pending,available "
            "--query 'length(NatGateways)' --output text")
    size = ('aws efs describe-file-systems --file-system-id "$FILE_SYSTEM_ID" '
            "--query 'FileSystems[0].SizeInBytes.Value' --output text")
    file_system = aws_rb.stack_output(plan.efs_stack, "FileSystemId")
    return (aws_rb.SIGNED_IN
            + f"STATUS=$(aws eks describe-cluster --name {q(c.name)} --query cluster.status "
            "--output text 2>/dev/null || true)\n"
            'if [ -z "$STATUS" ]; then\n'
            f"  echo {q(f'cluster {c.name}: none, so no nodes and no NAT gateway bill')}\n"
            "else\n"
            f'  echo "cluster {c.name} ($STATUS):" '
            f"{q(f'the control plane, {cost.money(control_plane.per_hour or 0)} an hour')}\n"
            f"  NODES=$({nodes} 2>/dev/null || echo 0)\n"
            f'  echo "node group {NODE_GROUP}: $NODES x" {q(f"{c.worker_instance_type} {each}")}\n'
            f"  NATS=$({nats} 2>/dev/null || echo 0)\n"
            f'  echo "NAT gateways: $NATS," {q(f"at {nat_price} an hour each")}\n'
            + textwrap.indent(rb.run_status(plan.meta, plan.training), "  ")
            + "fi\n"
            f"FILE_SYSTEM_ID=$({file_system} 2>/dev/null || true)\n"
            'if [ -n "$FILE_SYSTEM_ID" ] && [ "$FILE_SYSTEM_ID" != None ]; then\n'
            f'  echo "file system $FILE_SYSTEM_ID: $({size}) bytes stored, by the GB-month"\n'
            "else\n"
            f"  echo {q(f'file system: no stack {plan.efs_stack}')}\n"
            "fi\n")


ECR_IMAGE = re.compile(r"(?P<registry>(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)"
                       r"\.amazonaws\.com)/(?P<repository>[^:@]+)")
# PaddlePaddle 3.3.1's images on Docker Hub, the release whose launcher compiler/collective.py
# drives: its CPU build, and its GPU build for CUDA 12.9 (tag as PaddlePaddle names its 3.3 GPU
# images, PaddlePaddle/PaddleFormers README.md: 3.3.0-gpu-cuda12.9-cudnn9.9). CUDA 12.9 because
# EKS's AL2023 NVIDIA AMI runs driver 580 (awslabs/amazon-eks-ami CHANGELOG.md, v20260714:
# kmod-nvidia-latest-dkms 580.159.03; templates/al2023/variables-default.json: 580), which runs
# it natively; 12.9 builds for Blackwell (p6-b200), and CUDA 13.0 drops Volta (p3's V100).
PADDLE_CPU_IMAGE = "paddlepaddle/paddle:3.3.1"
PADDLE_GPU_IMAGE = "paddlepaddle/paddle:3.3.1-gpu-cuda12.9-cudnn9.9"
# AWS's EFA installer, which brings libfabric and aws-ofi-nccl, NCCL's only way to EFA, into the
# image as docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-installer-containers.html does:
# --skip-kmod (the node's kernel has the driver), --skip-limit-conf (no ulimits in a container),
# --no-verify (no lspci). 1.50.0 (EFA release notes, 2026-08-21): libfabric 2.6.0amzn1.0,
# aws-ofi-nccl 1.21.1, whose log lines the runbook quotes (aws/aws-ofi-nccl v1.21.1).
EFA_INSTALLER = "aws-efa-installer-1.50.0.tar.gz"
EFA_INSTALLERS = "https://efa-installer.amazonaws.com"
# The key AWS signs the installer with (efa-start.html, "Verify the GPG key's fingerprint").
EFA_INSTALLER_KEY = "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
ECR_PUSH_ACTIONS = ("BatchCheckLayerAvailability", "BatchGetImage", "CompleteLayerUpload",
                    "CreateRepository", "DeleteRepository", "DescribeImages",
                    "DescribeRepositories", "InitiateLayerUpload", "PutImage", "UploadLayerPart")


def ecr_repository(plan: EksPlan) -> re.Match[str] | None:
    """The training image's ECR repository, if it is one of this cluster's account and region
    (the runbook makes it and pushes there; the nodes' role may pull from it)."""
    match = ECR_IMAGE.match(plan.training.image)
    c = plan.cluster
    if match and match["account"] == c.account_id and match["region"] == c.region:
        return match
    return None


@dataclass(frozen=True)
class TrainingImage:
    """How the runbook makes the training image and proves it before the run pays for nodes."""

    dockerfile: str
    checks: str  # shell lines run right after the build, where it was built (no GPU needed)
    node_check: str  # shell lines running the CUDA check on a node; "" for a CPU run
    efa: bool  # the image carries AWS's EFA software, and NCCL logs which network it took


def training_image(plan: EksPlan) -> TrainingImage | None:
    """A PaddlePaddle 3 run's image; None for v1's, which is the tutorial's own."""
    training = plan.training
    if not isinstance(training, CollectiveTraining):
        return None
    node_check = rb.cuda_check_on_node(plan.meta, training) if training.gpus_per_node else ""
    return TrainingImage(training_dockerfile(training), image_checks(training), node_check,
                         uses_efa(training))


def uses_efa(training: CollectiveTraining) -> bool:
    return any(name == EFA_RESOURCE for name, _ in training.device_limits)


def base_image(training: CollectiveTraining) -> str:
    """The GPU build for a GPU run: the CPU build has no CUDA, and its launcher trains on the
    CPU over gloo, the GPUs held and idle."""
    return PADDLE_GPU_IMAGE if training.gpus_per_node else PADDLE_CPU_IMAGE


def efa_install() -> list[str]:
    """Dockerfile lines installing AWS's EFA software, the tarball checked against AWS's key
    first. The base image's packages are not upgraded (AWS's guide does): its CUDA stays."""
    url, tarball = EFA_INSTALLERS, EFA_INSTALLER
    return [
        "# NCCL reaches EFA only through libfabric and aws-ofi-nccl, which Paddle's image lacks:",
        "# AWS's EFA installer brings both, its tarball checked against AWS's signing key first",
        "ARG DEBIAN_FRONTEND=noninteractive",
        "RUN apt-get update \\",
        " && apt-get install -y --no-install-recommends ca-certificates curl gnupg \\",
        " && mkdir /tmp/efa && cd /tmp/efa \\",
        f" && curl -fsSLO {url}/aws-efa-installer.key \\",
        f" && curl -fsSLO {url}/{tarball} \\",
        f" && curl -fsSLO {url}/{tarball}.sig \\",
        " && gpg --import aws-efa-installer.key \\",
        f" && gpg --status-fd 1 --verify {tarball}.sig {tarball} \\",
        f"    | grep -q 'VALIDSIG .*{EFA_INSTALLER_KEY}' \\",
        f" && tar -xf {tarball} && cd aws-efa-installer \\",
        " && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \\",
        " && cd / && rm -rf /tmp/efa /var/lib/apt/lists/*",
    ]


def training_dockerfile(training: CollectiveTraining) -> str:
    """The image's Dockerfile: the base, the EFA software where the pods get EFA, the code.
    Comments stand on lines of their own: Docker takes `#` for one only at a line's start."""
    code_dir = training.script.rsplit("/", 1)[0] or "/"
    lines = [f"FROM {base_image(training)}",
             *(efa_install() if uses_efa(training) else []),
             f"COPY . {code_dir}"]
    return "".join(f"{line}\n" for line in lines)


CUDA_BUILD_CHECK = "import paddle; assert paddle.is_compiled_with_cuda()"


def image_checks(training: CollectiveTraining) -> str:
    """What `docker run` proves of the built image where it was built: the script is where the
    pods run it, a GPU run's Paddle is a CUDA build (is_compiled_with_cuda needs no GPU), and
    with EFA the loader finds aws-ofi-nccl (libnccl-net.so, the plugin NCCL loads by default)."""
    run = f"docker run --rm {q(training.image)}"
    checks = [f"{run} test -f {q(training.script)}"]
    if training.gpus_per_node:
        checks.append(f"{run} python -c {q(CUDA_BUILD_CHECK)}")
    if uses_efa(training):
        checks.append(f"{run} sh -c {q('ldconfig -p | grep -qF libnccl-net.so')}")
    return "".join(f"{check}\n" for check in checks)


def before_you_start(plan: EksPlan) -> str:
    """What it costs, how long it takes and what it needs, before any block runs."""
    c = plan.cluster
    needs = ["a Linux x86_64 machine with bash, curl, tar and sha256sum (the tools below are "
             "its builds)",
             "the AWS CLI v2 and paddlegen on PATH",
             "an AWS CLI profile you sign in with, in `$SOURCE_PROFILE` (`aws configure sso`, "
             "or an IAM user's keys), and an administrator's in `$ADMIN_PROFILE` for the `iam` "
             "and `iam-down` phases",
             cost.vcpu_quota(c.region, {c.worker_instance_type: c.worker_count or 0})]
    if isinstance(plan.training, CollectiveTraining):
        needs.append("docker, to build, check and push the training image (no GPU needed)")
    if plan.launcher == "kubeflow":
        needs.append("git, with which kubectl fetches the training operator's manifests")
    if plan.launcher == "trainjob":
        needs.append("git, with which kubectl fetches Kubeflow Trainer's manifests")
    needs.append("a shell in the directory of this file (`cd out/`): the blocks read `$PWD`")
    guard = cost_guard(plan)
    return cost.before_you_start(
        c.region, hourly_costs(plan), "Data transfer, the NAT gateway's per-GB charge and storage",
        "It takes about 15 to 20 minutes for eksctl to make the cluster and its nodes, a few "
        "minutes for the file system's stack, and about as long again to tear it all down, "
        "which removes what this runbook made.", needs) + (f"\n{guard.about}\n" if guard else "")


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
    return workload.explanation(plan.meta, "eks", plan.data, plan.training)


PROFILE = Profile(
    name="eks",
    summary="today's AWS: PaddlePaddle 3 (or the tutorial's v1) on EKS, `aws/eksctl-cluster.yaml` "
            "for eksctl, EFS through its CSI driver, an Indexed Job or a PaddleJob",
    model=EksSpec,
    rules=(framework_fields, v1_only(port_range), v1_only(gradient_servers),
           either(worker_capacity), eks_version, eks_support,
           either(launcher_release(target, target_reads=TARGET_READS)),
           workload.kubeflow_names, workload.indexed_names, workload.jobset_names,
           workload.trainjob_names, workload.restarts, workload.grace_period,
           workload.legacy_operator, instance_type,
           unknown_instance_type, instance_capacity, node_group_capacity, queue_quota, idle_gpus,
           either(release_fields(target, JOBS, target_reads=TARGET_READS)),
           either(resource_limits(JOBS)), either(job_names), v1_only(split_count),
           aws_region, zones_in_region, storage_request,
           storage_positive(("capacity", "request")), efs_file_system,
           either(training_image_tag),
           workload.data_image_tag,
           system_namespace, budget.budget_fields),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain, checks=checks, phases=phases)
