"""Profile `eks`: today's AWS. A cluster made by eksctl (a managed node group, EKS Pod Identity
for the EFS CSI driver, the VPC CNI enforcing NetworkPolicies), EFS through its CSI driver, the
data-preparation Job, and the parameter-server training Job run by one of three launchers: the
seed image's own start script, an Indexed Job with a launcher script (the default), or Kubeflow's
PaddleJob running the same script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import Field

from paddlegen.compiler import collective
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.collective import CollectiveTraining
from paddlegen.compiler.kube_objects import (
    Object,
)
from paddlegen.compiler.plan import (
    DataJob,
    Meta,
    PserverTraining,
    meta_of,
)
from paddlegen.compiler.profile import Explanation, FileViolation, Profile
from paddlegen.compiler.render import to_json, to_yaml
from paddlegen.compiler.rules import (
    Violation,
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
from paddlegen.compiler.template import render
from paddlegen.profiles import workload
from paddlegen.profiles.aws import cost, data, efs, eksctl, instance_types
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


class EksCluster(SpecModel):
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
        Field(ge=1, le=1000, description="Nodes of the managed node group; defaults to "
              "training.nodes."),
    ] = None
    worker_instance_type: Annotated[
        str, text(aws_p.INSTANCE_TYPE, "EC2 instance type of the nodes.")
    ]
    efa: bool = Field(default=False, description=(
        "Give the nodes every Elastic Fabric Adapter their type has (eksctl's efaEnabled) and "
        "each trainer pod all of them, for NCCL; the node group then lives in the first zone "
        "(eksctl puts EFA node groups in one zone, in a cluster placement group)."))


class EksEfs(SpecModel):
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


def today() -> str:
    """The date (UTC), or the one SOURCE_DATE_EPOCH names (the reproducible-builds convention),
    for rules about support calendars."""
    import os
    from datetime import datetime, timezone

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    moment = (datetime.fromtimestamp(int(epoch), timezone.utc) if epoch.isdigit()
              else datetime.now(timezone.utc))
    return moment.date().isoformat()


@rule("eks-support", severity="warning", reads=("kubeVersion",))
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
    from paddlegen.compiler.spec import did_you_mean

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


@rule("instance-capacity", reads=("cluster.workerInstanceType", "cluster.efa", "training.framework",
                                  "training.gpusPerNode", "training.resources.requests"))
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
        return workload.launcher_of(self.training)


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


def derive(spec: EksSpec) -> EksPlan:
    namespace, tgt = spec.metadata.namespace, target(spec)
    cluster = spec.cluster.model_copy(
        update={"worker_count": spec.cluster.worker_count or spec.training.nodes})
    storage = spec.storage
    volume = EfsCsiVolume(f"{namespace}-{storage.claim_name}", storage.claim_name,
                          storage.capacity, storage.request, storage.efs.file_system_id)
    data, training = workload.derive_training(spec, volume, tgt.kube, efa_wiring(spec.cluster))
    return EksPlan(meta_of(spec, tgt, training.image), cluster, f"{cluster.name}-efs",
                   f"{cluster.name}-eksctl", volume, data, training)


def objects(plan: EksPlan) -> list[Object]:
    return workload.objects(plan.meta, plan.volume, plan.data, plan.training)


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


def runbook(plan: EksPlan, manifest_paths: list[str]) -> str:
    """The tools, IAM, the cluster, the file system (whose id comes back into the spec), the
    training operator with kubeflow, the data and training of either framework, the output off
    EFS and the teardown: profiles/eks.md.j2, filled from the plan."""
    return render(__package__, "eks.md.j2", {
        "plan": plan, "manifest_paths": manifest_paths,
        "collective_run": isinstance(plan.training, CollectiveTraining), "rb": rb,
        "aws_rb": aws_rb, "collective": collective, "eksctl": EKSCTL,
        "eksctl_releases": EKSCTL_RELEASES, "operator_release": TRAINING_OPERATOR,
        "operator_manifests": OPERATOR_MANIFESTS, "managed_policies": MANAGED_POLICIES,
        "owner_tag": efs.OWNER_TAG, "owner_of_file_system": OWNER_OF_FILE_SYSTEM,
        "log_group": log_group, "base_image": PADDLE_BASE_IMAGE, "ecr": ecr_repository(plan),
        "trainers": rb.run_trainers(plan.meta, plan.data, plan.training, manifest_paths[-1]),
        "logs": workload.pod_log_dir(plan.training), "failures": failures,
        "data_mount": SEED_DATA_MOUNT, "before_you_start": before_you_start(plan)})


ECR_IMAGE = re.compile(r"(?P<registry>(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)"
                       r"\.amazonaws\.com)/(?P<repository>[^:@]+)")
PADDLE_BASE_IMAGE = "paddlepaddle/paddle:3.3.1"  # PaddlePaddle 3.3's CPU image on Docker Hub
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
    return workload.explanation(plan.meta, "eks", plan.data, plan.training)


PROFILE = Profile(
    name="eks",
    summary="today's AWS: PaddlePaddle 3 (or the tutorial's v1) on EKS, `aws/eksctl-cluster.yaml` "
            "for eksctl, EFS through its CSI driver, an Indexed Job or a PaddleJob",
    model=EksSpec,
    rules=(framework_fields, v1_only(port_range), v1_only(gradient_servers),
           either(worker_capacity), eks_version, eks_support,
           either(launcher_release(target, target_reads=TARGET_READS)),
           workload.kubeflow_names, instance_capacity,
           either(release_fields(target, JOBS, target_reads=TARGET_READS)),
           either(resource_limits(JOBS)), either(job_names), v1_only(split_count),
           aws_region, zones_in_region, storage_request, efs_file_system,
           either(training_image_tag),
           workload.data_image_tag,
           system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain, checks=checks)
