"""Profile `kube-aws` (seeds 001 and 003): a kube-aws cluster on AWS, EFS as a PersistentVolume,
the data-preparation Job and the parameter-server training Job.

Two kube-aws releases, chosen by cluster.kubeAwsVersion, each with its own cluster.yaml dialect
and its own Kubernetes: v0.9.1 (the seeds'; flat keys, Kubernetes 1.4.6, no authorizer, so no
RBAC objects) and v0.9.9 (node pools and API endpoints; Kubernetes 1.8.4 with RBAC).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import pserver_explanation
from paddlegen.compiler.kube_objects import (
    Object,
    data_job,
    namespace,
    network_policy,
    pod_reader,
    training_job,
)
from paddlegen.compiler.plan import (
    DataJob,
    Meta,
    PserverTraining,
    claim_jobs,
    meta_of,
)
from paddlegen.compiler.problems import FieldPath, dotted
from paddlegen.compiler.profile import Explanation, Profile
from paddlegen.compiler.render import Quoted, to_json, to_yaml
from paddlegen.compiler.rules import (
    Violation,
    dataset_image_tag,
    gradient_servers,
    job_names,
    kube_version,
    launcher_release,
    port_range,
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
from paddlegen.profiles.aws import cost, efs
from paddlegen.profiles.aws import formats as aws_p
from paddlegen.profiles.aws import runbook as aws_rb
from paddlegen.profiles.aws.models import EfsStorage
from paddlegen.profiles.aws.rules import bucket_of, prefix_of, s3_bucket_name, zone_in_region
from paddlegen.profiles.aws.storage import SEED_DATA_MOUNT, EfsVolume, seed_claim
from paddlegen.schema import patterns as p
from paddlegen.schema.models import (
    INT32_MAX,
    ClusterTraining,
    DatasetSettings,
    SpecBase,
    SpecModel,
    text,
)

KubeAwsVersion = Literal["v0.9.1", "v0.9.9"]
KUBE_AWS_RELEASES = "https://github.com/kubernetes-retired/kube-aws/releases/download"
TARGETS: dict[str, Target] = {
    "v0.9.1": Target("kube-aws v0.9.1", KubeRelease("1.4.6", "1.5")),
    "v0.9.9": Target("kube-aws v0.9.9", KubeRelease("1.8.4", "1.8")),
}

# What kube-aws does to its CloudFormation stack (seed 001/003's inline policy).
CLOUDFORMATION_ACTIONS = (
    "cloudformation:CreateStack",
    "cloudformation:UpdateStack",
    "cloudformation:DeleteStack",
    "cloudformation:DescribeStacks",
    "cloudformation:DescribeStackResource",
    "cloudformation:GetTemplate",
    "cloudformation:DescribeStackEvents",
)


class KubeAwsCluster(SpecModel, title="kube-aws cluster"):
    """AWS settings of a kube-aws cluster."""

    kube_aws_version: KubeAwsVersion = Field(title="kube-aws version", description=(
        "The kube-aws release that builds the cluster: v0.9.1 (the tutorials'; Kubernetes 1.4.6) "
        "or v0.9.9 (Kubernetes 1.8.4, with RBAC); each reads its own cluster.yaml."))
    name: Annotated[
        str, text(aws_p.STACK_NAME, "Cluster name; kube-aws uses it as the stack name.")
    ]
    region: Annotated[str, text(aws_p.REGION, "AWS region, e.g. us-west-2.")]
    availability_zone: Annotated[
        str, text(aws_p.ZONE, "Availability zone inside `region`, e.g. us-west-2a.")
    ]
    account_id: Annotated[
        str, text(aws_p.ACCOUNT_ID, "AWS account id: 12 digits, quoted so YAML keeps it a string.")
    ]
    key_name: Annotated[str, text(aws_p.KEY_NAME, "Name of the EC2 key pair for SSH to the nodes.")]
    kms_key_arn: Annotated[
        str | None, text(aws_p.KMS_KEY_ARN, (
            "ARN of the KMS key that encrypts the cluster's TLS assets. Leave it out of the "
            "first build: the runbook makes the key and prints it."))
    ] = None
    external_dns_name: Annotated[
        str, text(p.HOSTNAME, "DNS name of the API server (kube-aws externalDNSName).")
    ] = Field(alias="externalDNSName")
    s3_uri: Annotated[str, text(aws_p.S3_URI, "s3://bucket/prefix for `kube-aws up --s3-uri`.")]
    worker_count: Annotated[
        int | None,
        Field(ge=1, le=1000, description="Worker nodes; defaults to training.nodes."),
    ] = None
    controller_instance_type: Annotated[
        str | None, text(aws_p.INSTANCE_TYPE, "EC2 instance type of the controller.")
    ] = None
    controller_root_volume_size: Annotated[
        int | None, Field(ge=1, le=16384, description="Controller root disk, GiB.")
    ] = None
    worker_instance_type: Annotated[
        str | None, text(aws_p.INSTANCE_TYPE, "EC2 instance type of the workers.")
    ] = None
    worker_root_volume_size: Annotated[
        int | None, Field(ge=1, le=16384, description="Worker root disk, GiB.")
    ] = None
    # kube-aws's network and DNS settings; unset ones keep kube-aws's defaults.
    vpc_cidr: Annotated[
        str | None, text(p.CIDR, "CIDR of the VPC (kube-aws default 10.0.0.0/16).")
    ] = Field(default=None, alias="vpcCIDR")
    instance_cidr: Annotated[
        str | None, text(p.CIDR, "CIDR of the instances' subnet, inside vpcCIDR "
                         "(default 10.0.0.0/24).")
    ] = Field(default=None, alias="instanceCIDR")
    pod_cidr: Annotated[
        str | None, text(p.CIDR, "CIDR of the pods, outside vpcCIDR (default 10.2.0.0/16).")
    ] = Field(default=None, alias="podCIDR")
    service_cidr: Annotated[
        str | None, text(p.CIDR, "CIDR of the Services, outside vpcCIDR and podCIDR "
                         "(default 10.3.0.0/24).")
    ] = Field(default=None, alias="serviceCIDR")
    dns_service_ip: Annotated[
        str | None, text(p.IPV4, "Cluster DNS address, inside serviceCIDR (default 10.3.0.10).")
    ] = Field(default=None, alias="dnsServiceIP")
    create_record_set: bool | None = Field(
        default=None, description="Have kube-aws create the Route 53 record of externalDNSName.")
    hosted_zone: Annotated[
        str | None, text(p.HOSTNAME, "Route 53 hosted zone name for createRecordSet.")
    ] = None
    hosted_zone_id: Annotated[
        str | None, text(aws_p.HOSTED_ZONE_ID, "Route 53 hosted zone id for createRecordSet.")
    ] = Field(default=None, alias="hostedZoneId")
    record_set_ttl: Annotated[
        int | None, Field(ge=1, le=INT32_MAX, description="TTL of the record set, seconds.")
    ] = Field(default=None, alias="recordSetTTL")


class KubeAwsSpec(SpecBase):
    """Distributed training on a kube-aws cluster with EFS."""

    profile: Literal["kube-aws"] = Field(description="Which way to run.")
    cluster: KubeAwsCluster = Field(description="The kube-aws cluster.")
    storage: EfsStorage = Field(description="EFS for data, configs and output.")
    dataset: DatasetSettings = Field(description="The data-preparation Job.")
    training: ClusterTraining = Field(description="The parameter-server training Job.")


# Network plugins that enforce NetworkPolicies on a kube-aws cluster.
CALICO = "Calico, Cilium; kube-aws with `useCalico`"


TARGET_READS = ("cluster.kubeAwsVersion",)  # what target() reads of the spec


def target(spec: KubeAwsSpec) -> Target:
    return TARGETS[spec.cluster.kube_aws_version]


# kube-aws v0.9.x's defaults for the settings its own checks compare.
NETWORK_DEFAULTS = {"vpcCIDR": "10.0.0.0/16", "instanceCIDR": "10.0.0.0/24",
                    "podCIDR": "10.2.0.0/16", "serviceCIDR": "10.3.0.0/24",
                    "dnsServiceIP": "10.3.0.10"}


# The values only AWS knows, which the runbook makes and prints (its steps 2 and 3): a first
# build goes without them and writes only those steps.
PENDING: tuple[tuple[FieldPath, str], ...] = (
    (("cluster", "kmsKeyArn"), "step 2 makes the KMS key and step 3 prints its ARN"),
    (("storage", "efs", "dnsName"), "step 2 makes the file system and step 3 prints its name"),
)


def pending_paths(spec: KubeAwsSpec) -> tuple[FieldPath, ...]:
    values: dict[FieldPath, str | None] = {("cluster", "kmsKeyArn"): spec.cluster.kms_key_arn,
              ("storage", "efs", "dnsName"): spec.storage.efs.dns_name}
    return tuple(path for path, _ in PENDING if values[path] is None)


@rule("pending", severity="warning", reads=("cluster.kmsKeyArn", "storage.efs.dnsName"))
def pending_values(spec: KubeAwsSpec) -> Iterable[Violation]:
    """cluster.kmsKeyArn and storage.efs.dnsName may be left out until RUNBOOK.md has made them:
    its steps 2 and 3 create the KMS key and the EFS file system and print both values. Until
    both are in the spec the tree holds only those steps and the EFS template (no cluster.yaml,
    IAM policy or Kubernetes objects); put them in and rebuild."""
    missing = set(pending_paths(spec))
    for path, how in PENDING:
        if path in missing:
            yield path, (f"not set yet: RUNBOOK.md {how}; until then the tree holds only "
                         "steps 0 to 3, so put it here and rebuild after them")


@rule("kms-key-arn", reads=("cluster.kmsKeyArn", "cluster.region", "cluster.accountId"))
def kms_key_arn(spec: KubeAwsSpec) -> Iterable[Violation]:
    """kmsKeyArn names the cluster's region and account (KMS keys are regional)."""
    cluster = spec.cluster
    if cluster.kms_key_arn is None:
        return
    _, _, _, region, account, _ = cluster.kms_key_arn.split(":", 5)
    if region != cluster.region:
        yield ("cluster", "kmsKeyArn"), (
            f"the key is in {region} but the cluster in {cluster.region}; "
            f"create the key with `aws kms --region={cluster.region} create-key`")
    if account != cluster.account_id:
        yield ("cluster", "kmsKeyArn"), (
            f"the key belongs to account {account}, not accountId {cluster.account_id}")


@rule("efs-region", reads=("storage.efs.dnsName", "cluster.region"))
def efs_region(spec: KubeAwsSpec) -> Iterable[Violation]:
    """The EFS file system is in the cluster's region (NFS mounts do not cross regions)."""
    if spec.storage.efs.dns_name is None:
        return
    region = spec.storage.efs.dns_name.split(".")[2]
    if region != spec.cluster.region:
        yield ("storage", "efs", "dnsName"), (
            f"the file system is in {region} but the cluster in {spec.cluster.region}")


@rule("kube-aws-network", reads=tuple(f"cluster.{key}" for key in NETWORK_DEFAULTS))
def kube_aws_network(spec: KubeAwsSpec) -> Iterable[Violation]:
    """kube-aws's own network checks: vpcCIDR contains instanceCIDR; the VPC, pod and Service
    ranges do not overlap; dnsServiceIP lies in serviceCIDR and is neither its network address
    nor its first address (the kubernetes Service's). Unset values take kube-aws's defaults."""
    given = spec.model_dump(by_alias=True)["cluster"]
    values = {key: given[key] or default for key, default in NETWORK_DEFAULTS.items()}
    nets = {}
    for key in ("vpcCIDR", "instanceCIDR", "podCIDR", "serviceCIDR"):
        try:
            nets[key] = ipaddress.IPv4Network(values[key], strict=False)  # as Go's ParseCIDR
        except ValueError as error:
            yield ("cluster", key), f"{values[key]} is not a network: {error}"
    if len(nets) < 4:
        return
    if not nets["instanceCIDR"].subnet_of(nets["vpcCIDR"]):
        yield ("cluster", "instanceCIDR"), (
            f"{values['instanceCIDR']} is not inside vpcCIDR {values['vpcCIDR']}")
    for key, other in (("podCIDR", "vpcCIDR"), ("serviceCIDR", "vpcCIDR"),
                       ("serviceCIDR", "podCIDR")):
        if nets[key].overlaps(nets[other]):
            yield ("cluster", key), (
                f"{values[key]} overlaps {other} {values[other]}; pick a disjoint range")
    try:
        dns = ipaddress.IPv4Address(values["dnsServiceIP"])
    except ValueError as error:
        yield ("cluster", "dnsServiceIP"), str(error)
        return
    service = nets["serviceCIDR"]
    if dns not in service:
        yield ("cluster", "dnsServiceIP"), (
            f"{dns} is outside serviceCIDR {service}; use e.g. {service.network_address + 10}")
    elif dns in (service.network_address, service.network_address + 1):
        yield ("cluster", "dnsServiceIP"), (
            f"{dns} is reserved ({service.network_address + 1} is the kubernetes Service); "
            f"use e.g. {service.network_address + 10}")


@rule("record-set", reads=("cluster.createRecordSet", "cluster.recordSetTTL", "cluster.hostedZone",
                          "cluster.hostedZoneId", "cluster.kubeAwsVersion"))
def record_set(spec: KubeAwsSpec) -> Iterable[Violation]:
    """createRecordSet needs exactly one of hostedZone and hostedZoneId (v0.9.9: hostedZoneId;
    it names the zone by id only), and recordSetTTL means something only with createRecordSet
    (kube-aws's own checks)."""
    c = spec.cluster
    if not c.create_record_set:
        if c.record_set_ttl is not None:
            yield ("cluster", "recordSetTTL"), (
                "kube-aws takes recordSetTTL only with createRecordSet: true; remove it, or "
                "set createRecordSet and hostedZoneId")
        return
    zones = [c.hosted_zone, c.hosted_zone_id]
    if c.kube_aws_version == "v0.9.9" and c.hosted_zone_id is None:
        yield ("cluster", "createRecordSet"), (
            "kube-aws v0.9.9 finds the hosted zone by id only: set hostedZoneId "
            "(`aws route53 list-hosted-zones-by-name`) instead of hostedZone")
    elif zones.count(None) != 1:
        yield ("cluster", "createRecordSet"), (
            "createRecordSet needs exactly one of hostedZone and hostedZoneId; "
            f"{'both are' if None not in zones else 'neither is'} set")


# kube-aws v0.9.9 names the control plane's IAM role <cluster>-<nested stack>-<12-character
# stack id>-<region>-<role> and checks it against IAM's limit (cfnresource/naming.go).
V099_ROLE_NAME = "{cluster}-Controlplane-PRK1CVQNY7XZ-{region}-"
IAM_ROLE_NAME_LIMIT = 64


@rule("iam-role-name", reads=("cluster.kubeAwsVersion", "cluster.name", "cluster.region"))
def iam_role_name(spec: KubeAwsSpec) -> Iterable[Violation]:
    """kube-aws v0.9.9 derives the controllers' IAM role name from the cluster name and the
    region (<cluster>-Controlplane-<id>-<region>-...), which IAM limits to 64 characters."""
    c = spec.cluster
    if c.kube_aws_version != "v0.9.9":
        return
    role = V099_ROLE_NAME.format(cluster=c.name, region=c.region)
    if len(role) > IAM_ROLE_NAME_LIMIT:
        longest = len(c.name) - (len(role) - IAM_ROLE_NAME_LIMIT)
        yield ("cluster", "name"), (
            f"kube-aws v0.9.9 would name the controllers' IAM role {role}..., over IAM's "
            f"{IAM_ROLE_NAME_LIMIT} characters; shorten the name to at most {longest} characters")


@dataclass(frozen=True)
class AwsNames:
    """The names the runbook gives what it creates, derived from the spec."""

    iam_group: str  # also its inline policy's name
    efs_stack: str
    kms_alias: str
    key_file: str  # the key pair's private key, in $ASSETS


def aws_names(c: KubeAwsCluster) -> AwsNames:
    return AwsNames(f"{c.name}-kube-aws", f"{c.name}-efs", f"alias/{c.name}-kube-aws",
                    f"{c.key_name}.pem")


# AWS's limits on those names (and the file system's on a file name).
NAME_LIMITS = (
    ("iam_group", "the IAM group and policy name", 128, ("cluster", "name")),
    ("efs_stack", "the EFS stack name", 128, ("cluster", "name")),
    ("kms_alias", "the KMS alias", 256, ("cluster", "name")),
    ("key_file", "the private key's file name", 255, ("cluster", "keyName")),
)


@rule("aws-names", reads=("cluster.name", "cluster.keyName"))
def aws_name_limits(spec: KubeAwsSpec) -> Iterable[Violation]:
    """The names the runbook derives stay within AWS's limits (an IAM group or policy name 128
    characters, a stack name 128, a KMS alias 256), and the key pair's file <keyName>.pem is a
    file name of at most 255 bytes inside $ASSETS (no '/')."""
    names = aws_names(spec.cluster)
    for field, what, limit, path in NAME_LIMITS:
        name = getattr(names, field)
        if len(name.encode()) > limit:
            yield path, (f"{what} {name[:40]}... would have {len(name.encode())} characters, "
                         f"over the {limit} AWS takes; shorten {path[-1]} by "
                         f"{len(name.encode()) - limit}")
    if "/" in spec.cluster.key_name:
        yield ("cluster", "keyName"), (
            f"{spec.cluster.key_name!r} has a '/': the runbook saves the private key as "
            "$ASSETS/<keyName>.pem, which must stay in $ASSETS")


EFS_TEMPLATE = "aws/efs.cfn.yaml"
JOBS = ("training", "dataset")  # the spec sections of the profile's Jobs


@dataclass(frozen=True)
class KubeAwsPlan:
    meta: Meta
    cluster: KubeAwsCluster  # the spec's settings, with worker_count resolved
    names: AwsNames
    s3_bucket: str
    volume: EfsVolume | None  # the PersistentVolume of the file system; None while pending
    data: DataJob
    training: PserverTraining
    pending: tuple[FieldPath, ...]  # values the runbook makes that the spec does not hold yet


def derive(spec: KubeAwsSpec) -> KubeAwsPlan:
    name, namespace, t = spec.metadata.name, spec.metadata.namespace, spec.training
    tgt = target(spec)
    cluster = spec.cluster.model_copy(
        update={"worker_count": spec.cluster.worker_count or t.nodes})
    storage = spec.storage
    volume = None if storage.efs.dns_name is None else EfsVolume(
        f"{namespace}-{storage.claim_name}", storage.claim_name, storage.capacity,
        storage.request, storage.efs.dns_name)
    claim = seed_claim(storage.claim_name)
    data, training = claim_jobs(name, claim, spec.dataset, t, tgt.kube)
    return KubeAwsPlan(meta_of(spec, tgt, t.image), cluster, aws_names(cluster),
                       bucket_of(cluster.s3_uri), volume, data, training, pending_paths(spec))


def objects(plan: KubeAwsPlan) -> list[Object]:
    meta, training = plan.meta, plan.training
    if plan.pending or plan.volume is None:
        return []  # the cluster they run on needs the pending values first
    return [*namespace(meta), *plan.volume.objects(meta),
            *pod_reader(meta, training.pod_reader), *network_policy(meta, training.ports),
            data_job(meta, plan.data, plan.volume.claim), training_job(meta, training)]


def present(pairs: dict[str, Any]) -> dict[str, Any]:
    """The pairs whose value the spec sets (kube-aws's defaults stand for the others)."""
    return {key: value for key, value in pairs.items() if value is not None and value != {}}


def network(c: KubeAwsCluster) -> dict[str, Any]:
    return {"vpcCIDR": c.vpc_cidr, "instanceCIDR": c.instance_cidr, "podCIDR": c.pod_cidr,
            "serviceCIDR": c.service_cidr, "dnsServiceIP": c.dns_service_ip}


def cluster_yaml_v091(c: KubeAwsCluster) -> dict[str, Any]:
    """kube-aws v0.9.1's cluster.yaml: flat keys (config/config.go's Cluster struct)."""
    config = {
        "clusterName": c.name,
        "externalDNSName": c.external_dns_name,
        "keyName": c.key_name,
        "region": c.region,
        "availabilityZone": c.availability_zone,
        "kmsKeyArn": Quoted(c.kms_key_arn),
        "workerCount": c.worker_count,
    }
    return config | present({
        "controllerInstanceType": c.controller_instance_type,
        "controllerRootVolumeSize": c.controller_root_volume_size,
        "workerInstanceType": c.worker_instance_type,
        "workerRootVolumeSize": c.worker_root_volume_size,
        **network(c),
        "createRecordSet": c.create_record_set,
        "hostedZone": c.hosted_zone,
        "hostedZoneId": c.hosted_zone_id,
        "recordSetTTL": c.record_set_ttl,
    })


def cluster_yaml_v099(c: KubeAwsCluster) -> dict[str, Any]:
    """kube-aws v0.9.9's cluster.yaml: the API endpoint and the node pool as their own sections
    (it refuses workerCount and the other flat worker and controller keys, and ignores a
    top-level hostedZoneId next to apiEndpoints)."""
    if c.create_record_set:
        load_balancer = present({"hostedZone": {"id": c.hosted_zone_id},
                                 "recordSetTTL": c.record_set_ttl})
    else:
        load_balancer = {"recordSetManaged": False}
    pool = present({"name": "workers", "count": c.worker_count,
                    "instanceType": c.worker_instance_type,
                    "rootVolume": present({"size": c.worker_root_volume_size})})
    controller = present({"instanceType": c.controller_instance_type,
                          "rootVolume": present({"size": c.controller_root_volume_size})})
    return present({
        "clusterName": c.name,
        "keyName": c.key_name,
        "region": c.region,
        "availabilityZone": c.availability_zone,
        "kmsKeyArn": Quoted(c.kms_key_arn),
        "apiEndpoints": [{"name": "default", "dnsName": c.external_dns_name,
                          "loadBalancer": load_balancer}],
        "controller": controller,
        "worker": {"nodePools": [pool]},
        **network(c),
    })


CLUSTER_YAML = {"v0.9.1": cluster_yaml_v091, "v0.9.9": cluster_yaml_v099}


def iam_policy(plan: KubeAwsPlan) -> dict[str, Any]:
    """The inline policy for `aws iam put-user-policy`: KMS for TLS assets, the cluster's stack.

    v0.9.9 also validates its templates (ValidateTemplate has no resource-level permissions)
    and splits the cluster into nested stacks named <cluster>-<part>-<id>."""
    c = plan.cluster
    stacks = [f"arn:aws:cloudformation:{c.region}:{c.account_id}:stack/{c.name}/*"]
    statements = []
    if c.kube_aws_version == "v0.9.9":
        stacks.append(f"arn:aws:cloudformation:{c.region}:{c.account_id}:stack/{c.name}-*/*")
        statements.append({"Sid": "KubeAwsValidateTemplates", "Effect": "Allow",
                           "Action": ["cloudformation:ValidateTemplate"], "Resource": ["*"]})
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "KubeAwsKmsAssets",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:Encrypt"],
                "Resource": [c.kms_key_arn],  # the cluster's key, not every key of the account
            },
            {
                "Sid": "KubeAwsClusterStack",
                "Effect": "Allow",
                "Action": list(CLOUDFORMATION_ACTIONS),
                "Resource": stacks,
            },
            *statements,
        ],
    }


def files(plan: KubeAwsPlan) -> dict[str, str]:
    template = {EFS_TEMPLATE: to_yaml(efs.template(plan.cluster.name, plan.names.efs_stack))}
    if plan.pending:
        return template  # cluster.yaml and the policy name the key
    cluster = CLUSTER_YAML[plan.cluster.kube_aws_version](plan.cluster)
    return {"aws/cluster.yaml": to_yaml(cluster),
            "aws/iam-policy.json": to_json(iam_policy(plan)), **template}


def runbook(plan: KubeAwsPlan, manifest_paths: list[str]) -> str:
    """Steps 0 to 3 (the tools, IAM, and what only AWS knows), then, once the spec holds AWS's
    values, steps 4 to 9: the cluster, the job and the teardown."""
    return render(__package__, "kube-aws.md.j2", {
        "plan": plan, "manifest_paths": manifest_paths, "rb": rb, "aws_rb": aws_rb,
        "releases": KUBE_AWS_RELEASES, "calico": CALICO,
        "first_deploy": [f"{name}=" for name in efs.NETWORK_PARAMETERS],
        "worker_subnet": efs.WORKER_SUBNET, "data_mount": SEED_DATA_MOUNT,
        "volume_words": EfsVolume.words, "before_you_start": before_you_start(plan.cluster),
        "dotted": dotted, "s3_prefix": prefix_of})


# The instance types kube-aws gives a role the spec leaves unset (its `init`'s cluster.yaml).
DEFAULT_INSTANCE_TYPE = {"v0.9.1": "m3.medium", "v0.9.9": "t2.medium"}


def before_you_start(c: KubeAwsCluster) -> str:
    """What it costs, how long it takes and what it needs, before any block runs."""
    default = DEFAULT_INSTANCE_TYPE[c.kube_aws_version]
    nodes = {" (controller)": (c.controller_instance_type or default, 1),
             " (etcd)": (default, 1),
             " (workers)": (c.worker_instance_type or default, c.worker_count or 0)}
    costs = [cost.instances(c.region, kind, count, role)
             for role, (kind, count) in nodes.items()]
    quota: dict[str, int] = {}
    for kind, count in nodes.values():
        quota[kind] = quota.get(kind, 0) + count
    balancer = ", the API endpoint's load balancer" if c.kube_aws_version == "v0.9.9" else ""
    needs = ["a Linux x86_64 machine with bash, curl, tar and dig",
             "the AWS CLI v2 and paddlegen on PATH",
             "an IAM user with access keys, and an administrator's AWS CLI profile in "
             "`$ADMIN_PROFILE` for the two IAM blocks",
             cost.vcpu_quota(c.region, quota),
             "a shell in the directory of this file (`cd out/`): the blocks read `$PWD`"]
    return cost.before_you_start(
        c.region, costs,
        f"Data transfer, the nodes' EBS volumes{balancer} and storage",
        "It takes about 10 to 15 minutes for kube-aws to make the cluster's stack, a few "
        "minutes for the file system's stack, and about as long again to tear it all down, "
        "which removes what this runbook made.", needs)


def explain(plan: KubeAwsPlan) -> Explanation:
    return pserver_explanation(plan.meta, "kube-aws", plan.training, plan.data.out_dir)


PROFILE = Profile(
    name="kube-aws",
    summary="the 2016-2017 tutorial stack (seeds 001, 003), kept for fidelity: `aws/cluster.yaml` "
            "for kube-aws v0.9.1 or v0.9.9, "
            "`aws/iam-policy.json`, EFS PV and claim, data Job, training Job",
    model=KubeAwsSpec,
    rules=(port_range, gradient_servers, worker_capacity,
           kube_version(target, "; cluster.kubeAwsVersion chooses the release",
                        target_reads=TARGET_READS),
           launcher_release(target, target_reads=TARGET_READS),
           release_fields(target, JOBS, target_reads=TARGET_READS), resource_limits(JOBS),
           job_names, split_count,
           zone_in_region, pending_values, kms_key_arn, efs_region, storage_request,
           storage_positive(("capacity", "request")),
           kube_aws_network, record_set, iam_role_name, aws_name_limits, s3_bucket_name,
           training_image_tag, dataset_image_tag, system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain)
