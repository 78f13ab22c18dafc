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
from shlex import quote as q
from typing import Annotated, Any, Literal

from pydantic import Field

from paddlegen.compiler import efs
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import pserver_explanation
from paddlegen.compiler.kube_objects import (
    Object,
    data_job,
    namespace,
    network_policy,
    persistent_volume,
    persistent_volume_claim,
    pod_reader,
    training_job,
)
from paddlegen.compiler.loader import Path
from paddlegen.compiler.plan import (
    DataJob,
    EfsVolume,
    Meta,
    PserverTraining,
    bucket_of,
    claim_jobs,
    meta_of,
)
from paddlegen.compiler.problems import dotted
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
    s3_bucket_name,
    split_count,
    storage_request,
    system_namespace,
    training_image_tag,
    worker_capacity,
    zone_in_region,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.profiles.aws import cost
from paddlegen.schema import patterns as p
from paddlegen.schema.models import (
    INT32_MAX,
    ClusterTraining,
    DatasetSettings,
    EfsStorage,
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


class KubeAwsCluster(SpecModel):
    """AWS settings of a kube-aws cluster."""

    kube_aws_version: KubeAwsVersion = Field(description=(
        "The kube-aws release that builds the cluster: v0.9.1 (the tutorials'; Kubernetes 1.4.6) "
        "or v0.9.9 (Kubernetes 1.8.4, with RBAC); each reads its own cluster.yaml."))
    name: Annotated[str, text(p.STACK_NAME, "Cluster name; kube-aws uses it as the stack name.")]
    region: Annotated[str, text(p.REGION, "AWS region, e.g. us-west-2.")]
    availability_zone: Annotated[
        str, text(p.ZONE, "Availability zone inside `region`, e.g. us-west-2a.")
    ]
    account_id: Annotated[
        str, text(p.ACCOUNT_ID, "AWS account id: 12 digits, quoted so YAML keeps it a string.")
    ]
    key_name: Annotated[str, text(p.KEY_NAME, "Name of the EC2 key pair for SSH to the nodes.")]
    kms_key_arn: Annotated[
        str | None, text(p.KMS_KEY_ARN, (
            "ARN of the KMS key that encrypts the cluster's TLS assets. Leave it out of the "
            "first build: the runbook makes the key and prints it."))
    ] = None
    external_dns_name: Annotated[
        str, text(p.HOSTNAME, "DNS name of the API server (kube-aws externalDNSName).")
    ] = Field(alias="externalDNSName")
    s3_uri: Annotated[str, text(p.S3_URI, "s3://bucket/prefix for `kube-aws up --s3-uri`.")]
    worker_count: Annotated[
        int | None,
        Field(ge=1, le=1000, description="Worker nodes; defaults to training.nodes."),
    ] = None
    controller_instance_type: Annotated[
        str | None, text(p.INSTANCE_TYPE, "EC2 instance type of the controller.")
    ] = None
    controller_root_volume_size: Annotated[
        int | None, Field(ge=1, le=16384, description="Controller root disk, GiB.")
    ] = None
    worker_instance_type: Annotated[
        str | None, text(p.INSTANCE_TYPE, "EC2 instance type of the workers.")
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
        str | None, text(p.HOSTED_ZONE_ID, "Route 53 hosted zone id for createRecordSet.")
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


def target(spec: KubeAwsSpec) -> Target:
    return TARGETS[spec.cluster.kube_aws_version]


# kube-aws v0.9.x's defaults for the settings its own checks compare.
NETWORK_DEFAULTS = {"vpcCIDR": "10.0.0.0/16", "instanceCIDR": "10.0.0.0/24",
                    "podCIDR": "10.2.0.0/16", "serviceCIDR": "10.3.0.0/24",
                    "dnsServiceIP": "10.3.0.10"}


# The values only AWS knows, which the runbook makes and prints (its steps 2 and 3): a first
# build goes without them and writes only those steps.
PENDING: tuple[tuple[Path, str], ...] = (
    (("cluster", "kmsKeyArn"), "step 2 makes the KMS key and step 3 prints its ARN"),
    (("storage", "efs", "dnsName"), "step 2 makes the file system and step 3 prints its name"),
)


def pending_paths(spec: KubeAwsSpec) -> tuple[Path, ...]:
    values: dict[Path, str | None] = {("cluster", "kmsKeyArn"): spec.cluster.kms_key_arn,
              ("storage", "efs", "dnsName"): spec.storage.efs.dns_name}
    return tuple(path for path, _ in PENDING if values[path] is None)


@rule("pending", severity="warning")
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


@rule("kms-key-arn")
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


@rule("efs-region")
def efs_region(spec: KubeAwsSpec) -> Iterable[Violation]:
    """The EFS file system is in the cluster's region (NFS mounts do not cross regions)."""
    if spec.storage.efs.dns_name is None:
        return
    region = spec.storage.efs.dns_name.split(".")[2]
    if region != spec.cluster.region:
        yield ("storage", "efs", "dnsName"), (
            f"the file system is in {region} but the cluster in {spec.cluster.region}")


@rule("kube-aws-network")
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


@rule("record-set")
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


@rule("iam-role-name")
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


@rule("aws-names")
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
    pending: tuple[Path, ...]  # values the runbook makes that the spec does not hold yet


def derive(spec: KubeAwsSpec) -> KubeAwsPlan:
    name, namespace, t = spec.metadata.name, spec.metadata.namespace, spec.training
    tgt = target(spec)
    cluster = spec.cluster.model_copy(
        update={"worker_count": spec.cluster.worker_count or t.nodes})
    storage = spec.storage
    volume = None if storage.efs.dns_name is None else EfsVolume(
        f"{namespace}-{storage.claim_name}", storage.claim_name, storage.efs.dns_name,
        storage.capacity, storage.request)
    data, training = claim_jobs(name, storage.claim_name, spec.dataset, t, tgt.kube)
    return KubeAwsPlan(meta_of(spec, tgt, t.image), cluster, aws_names(cluster),
                       bucket_of(cluster.s3_uri), volume, data, training, pending_paths(spec))


def objects(plan: KubeAwsPlan) -> list[Object]:
    meta, training = plan.meta, plan.training
    if plan.pending or plan.volume is None:
        return []  # the cluster they run on needs the pending values first
    return [*namespace(meta), persistent_volume(meta, plan.volume),
            persistent_volume_claim(meta, plan.volume), *pod_reader(meta, training.pod_reader),
            *network_policy(meta, training.ports),
            data_job(meta, plan.data, plan.volume.claim_name), training_job(meta, training)]


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
    meta, c, names = plan.meta, plan.cluster, plan.names
    key, version, kube = q(c.key_name), c.kube_aws_version, meta.target.kube
    p = rb.preamble(c.name, {"KUBECONFIG": '"$ASSETS/kubeconfig"',
                             "AWS_DEFAULT_REGION": q(c.region),
                             "AWS_PROFILE": q(rb.user_profile(c.name))})
    vpc = (f"aws ec2 describe-vpcs --filters Name=tag:Name,Values={q(c.name + '-vpc')} "
           "--query 'Vpcs[0].VpcId' --output text")
    group_name, policies = names.iam_group, rb.SEED_MANAGED_POLICIES
    if plan.pending or c.kms_key_arn is None:
        fields = " and ".join(f"`{dotted(path)}`" for path in plan.pending)
        rebuild = (f"Put what it printed in the spec ({fields}),\nrebuild this tree, check it, "
                   "and go on at step 4 of the rebuilt RUNBOOK.md (this build has none yet):")
        rest = ""
    else:
        rebuild = ("If that printed a line, put that value in the spec, rebuild this tree, check "
                   "it, and go on with\nthe rebuilt RUNBOOK.md:")
        rest = runbook_rest(plan, manifest_paths, p, vpc, c.kms_key_arn)
    return rb.header(meta, "kube-aws") + before_you_start(c) + f"""
## 0. Tools: the AWS CLI, kube-aws {version}, kubectl {kube.version}, paddlegen

The cluster's assets (TLS keys, kubeconfig, the SSH key, the models at the end) are secrets:
they go to `$ASSETS`, out of this directory, which you commit.

```sh
{p}curl -fL {KUBE_AWS_RELEASES}/{version}/kube-aws-linux-amd64.tar.gz |
  tar xz -C "$ASSETS/bin" --strip-components=1 linux-amd64/kube-aws
curl -fLo "$ASSETS/bin/kubectl" https://dl.k8s.io/release/v{kube.version}/bin/linux/amd64/kubectl
chmod +x "$ASSETS/bin/kubectl"
```

## 1. IAM, as an administrator of the account: a group for the user that runs kube-aws

A group of its own holds the ten managed policies, so they do not count against the user's own
quota of ten.

```sh
{p}{rb.AS_ADMINISTRATOR}{rb.iam_group(group_name, policies, "kube-aws")}```

{rb.as_the_user(c.name)}

## 2. The key pair, the KMS key, the S3 bucket and the EFS file system ({c.region})

```sh
{p}aws ec2 describe-key-pairs --key-names {key} >/dev/null 2>&1 ||
  aws ec2 create-key-pair --key-name {key} --query KeyMaterial --output text \\
    > "$ASSETS/"{q(names.key_file)}
chmod 400 "$ASSETS/"{q(names.key_file)}
aws kms describe-key --key-id {q(names.kms_alias)} >/dev/null 2>&1 ||
  aws kms create-alias --alias-name {q(names.kms_alias)} --target-key-id "$(aws kms create-key \\
    --description {q('kube-aws assets of ' + c.name)} --query KeyMetadata.KeyId --output text)"
aws s3api head-bucket --bucket {q(plan.s3_bucket)} 2>/dev/null ||
  {{ aws s3 mb s3://{q(plan.s3_bucket)} && touch "$ASSETS/bucket-created"; }}
{rb.deploy_efs(names.efs_stack, [f"{name}=" for name in efs.NETWORK_PARAMETERS])}```

The first deploy of `aws/efs.cfn.yaml` makes the encrypted file system alone; step 6 gives it
the cluster's network.

## 3. The two values only AWS knows, into the spec

```sh
{p}KMS_KEY_ARN=$(aws kms describe-key --key-id {q(names.kms_alias)} --query KeyMetadata.Arn \\
  --output text)
EFS_DNS_NAME=$({rb.stack_output(names.efs_stack, "DnsName")})
{differs("$KMS_KEY_ARN", c.kms_key_arn, "cluster.kmsKeyArn")}
{differs("$EFS_DNS_NAME", plan.volume.server if plan.volume else None, "storage.efs.dnsName")}
```

{rebuild}

```sh
{p}{rb.REBUILD}```
{rest}"""


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


def differs(variable: str, value: str | None, field: str) -> str:
    """A line printing `field: <the value AWS has>`, unless the spec holds that value already."""
    show = f'echo "{field}: {variable}"'
    return show if value is None else f'[ "{variable}" = {q(value)} ] || {show}'


def runbook_rest(plan: KubeAwsPlan, manifest_paths: list[str], p: str, vpc: str,
                 kms_key_arn: str) -> str:
    """Steps 4 to 9: the cluster, the job and the teardown, once the spec has AWS's values."""
    meta, c, names, training, data = plan.meta, plan.cluster, plan.names, plan.training, plan.data
    *first, training_manifest = manifest_paths
    name, key, stack = q(c.name), q(c.key_name), q(names.efs_stack)
    version = c.kube_aws_version
    init_dns = ""
    if version == "v0.9.9":  # its init writes the API endpoint and wants the DNS choice made
        init_dns = (f" \\\n    --hosted-zone-id={q(c.hosted_zone_id)}"
                    if c.create_record_set and c.hosted_zone_id else " \\\n    --no-record-set")
    if c.create_record_set:
        dns = (f"kube-aws creates the record of `{c.external_dns_name}` in the hosted zone; "
               f"check that `kubectl get nodes` lists {c.worker_count} Ready workers.")
    else:
        dns = f"""```sh
{p}CONTROLLER_DNS=$(cd "$ASSETS" && kube-aws status |
  sed -n 's/^Controller DNS Names*:[[:space:]]*//p' | cut -d, -f1)
dig +short "$CONTROLLER_DNS"
```

Point `{c.external_dns_name}` at one of those addresses (an A record, or a line in `/etc/hosts`),
then check that `kubectl get nodes` lists {c.worker_count} Ready workers."""
    group_name, policies = names.iam_group, rb.SEED_MANAGED_POLICIES
    return f"""
## 4. The inline policy: the cluster's stacks and this KMS key only

```sh
{p}{rb.group_policy_put(names.iam_group)}```

## 5. The cluster ({c.worker_count} workers)

```sh
{p}(
  cd "$ASSETS"
  [ -f cluster.yaml ] || kube-aws init \\
    --cluster-name={name} \\
    --external-dns-name={q(c.external_dns_name)} \\
    --region={q(c.region)} \\
    --availability-zone={q(c.availability_zone)} \\
    --key-name={key} \\
    --kms-key-arn={q(kms_key_arn)}{init_dns}
  cp "$OUT/aws/cluster.yaml" cluster.yaml
  [ -d credentials ] || kube-aws render credentials --generate-ca
  kube-aws render stack
  kube-aws up --s3-uri {q(c.s3_uri)}
)
```

## 6. DNS, and the file system in the cluster's network

{dns}

```sh
{p}VPC_ID=$({vpc})
SUBNET_ID=$(aws ec2 describe-subnets --filters Name=vpc-id,Values="$VPC_ID" \\
  Name=availability-zone,Values={q(c.availability_zone)} --query 'Subnets[0].SubnetId' \\
  --output text)
WORKER_SG=$(aws ec2 describe-security-groups --filters Name=vpc-id,Values="$VPC_ID" \\
  Name=tag:Name,Values={q(c.name + "-sg-worker")} --query 'SecurityGroups[0].GroupId' \\
  --output text)
{rb.deploy_efs(names.efs_stack, ['VpcId="$VPC_ID"', 'WorkerSecurityGroupId="$WORKER_SG"',
                                f'{efs.WORKER_SUBNET}="$SUBNET_ID"'])}```

Its security group admits NFS (TCP 2049) from the workers' security group and nothing else.

## 7. Data and training

```sh
{p}{rb.creates(first)}{rb.after_job(meta, data.name, rb.creates([training_manifest])
                                   + rb.follow_trainers(meta, training))}```

{rb.data_parts(data, training)} {rb.failures(meta, training)}\
{rb.network_policy_note(meta, CALICO)}

## 8. The models, off EFS before anything is deleted

```sh
{p}{rb.copy_models(meta, training)}```

Go on only if it said the models are safe.

## 9. Teardown, in this order

```sh
{p}{rb.delete_objects(meta)}{rb.delete_load_balancers(vpc)}\
aws cloudformation delete-stack --stack-name {stack}
aws cloudformation wait stack-delete-complete --stack-name {stack}
(cd "$ASSETS" && kube-aws destroy)
aws cloudformation wait stack-delete-complete --stack-name {name}
aws s3 rm {q(c.s3_uri)} --recursive
if [ -f "$ASSETS/bucket-created" ] && [ -z "$(aws s3 ls s3://{q(plan.s3_bucket)})" ]; then
  aws s3 rb s3://{q(plan.s3_bucket)} && rm "$ASSETS/bucket-created"
fi
aws kms schedule-key-deletion --key-id "$(aws kms describe-key --key-id {q(names.kms_alias)} \\
  --query KeyMetadata.KeyId --output text)" --pending-window-in-days 7
aws kms delete-alias --alias-name {q(names.kms_alias)}
aws ec2 delete-key-pair --key-name {key} && rm -f "$ASSETS/"{q(names.key_file)}
{rb.group_policy_deleted(names.iam_group)}```

The Services' load balancers and the EFS stack go before the cluster's stack, which cannot delete
its VPC while they use it; the bucket goes only if this runbook made it and it is empty. Last, as
the administrator:

```sh
{p}{rb.AS_ADMINISTRATOR}{rb.iam_group_removed(group_name, policies)}```
"""


def explain(plan: KubeAwsPlan) -> Explanation:
    return pserver_explanation(plan.meta, "kube-aws", plan.training, plan.data.out_dir)


PROFILE = Profile(
    name="kube-aws",
    summary="the 2016-2017 tutorial stack (seeds 001, 003), kept for fidelity: `aws/cluster.yaml` "
            "for kube-aws v0.9.1 or v0.9.9, "
            "`aws/iam-policy.json`, EFS PV and claim, data Job, training Job",
    model=KubeAwsSpec,
    rules=(port_range, gradient_servers, worker_capacity,
           kube_version(target, "; cluster.kubeAwsVersion chooses the release"),
           launcher_release(target),
           release_fields(target, JOBS), resource_limits(JOBS), job_names, split_count,
           zone_in_region, pending_values, kms_key_arn, efs_region, storage_request,
           kube_aws_network, record_set, iam_role_name, aws_name_limits, s3_bucket_name,
           training_image_tag, dataset_image_tag, system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain)
