"""Profile `eks`: today's AWS. A cluster made by eksctl (a managed node group, EKS Pod Identity
for the EFS CSI driver, the VPC CNI enforcing NetworkPolicies), EFS through its CSI driver, the
data-preparation Job, and the parameter-server training Job run by one of three launchers: the
seed image's own start script, an Indexed Job with a launcher script (the default), or Kubeflow's
PaddleJob running the same script.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from shlex import quote as q
from typing import Annotated, Any, Literal

from pydantic import Field

from paddlegen.compiler import efs, eksctl
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import pserver_explanation
from paddlegen.compiler.kube_objects import (
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
    DataJob,
    EfsCsiVolume,
    Meta,
    PserverTraining,
    claim_jobs,
    meta_of,
    region_of,
)
from paddlegen.compiler.profile import Explanation, FileViolation, Profile
from paddlegen.compiler.render import to_json, to_yaml
from paddlegen.compiler.rules import (
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
from paddlegen.schema import patterns as p
from paddlegen.schema.models import (
    ClusterTraining,
    DatasetSettings,
    SpecBase,
    SpecModel,
    text,
)

EKSCTL = "v0.230.0"
EKSCTL_RELEASES = "https://github.com/eksctl-io/eksctl/releases/download"
# The releases eksctl v0.230.0 knows that paddlegen has schemas for; EKS itself decides, on the
# day, which it still runs (eksctl asks it).
EKS_VERSIONS = ("1.33", "1.34", "1.35")
DEFAULT_VERSION = "1.34"  # eksctl v0.230.0's
TRAINING_OPERATOR = "v1.9.4"  # Kubeflow's training operator, the last v1 (PaddleJob) release
OPERATOR_MANIFESTS = ("github.com/kubeflow/trainer.git/manifests/overlays/standalone"
                      f"?ref={TRAINING_OPERATOR}")
NODE_GROUP = "trainers"
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


class EksSpec(SpecBase):
    """Distributed training on an EKS cluster made by eksctl, EFS through its CSI driver."""

    profile: Literal["eks"] = Field(description="Which way to run.")
    cluster: EksCluster = Field(description="The EKS cluster.")
    storage: EksStorage = Field(description="The shared volume.")
    dataset: DatasetSettings = Field(description="The data-preparation Job.")
    training: ClusterTraining = Field(description="The parameter-server training.")


def target(spec: EksSpec) -> Target:
    version = spec.kube_version or DEFAULT_VERSION
    return Target(f"eksctl {EKSCTL}, EKS {version}", KubeRelease(version, version))


@rule("eks-version")
def eks_version(spec: EksSpec) -> Iterable[Violation]:
    """kubeVersion is a release EKS runs that paddlegen has schemas for (1.33, 1.34, 1.35: the
    ones eksctl v0.230.0 knows; 1.34, its default, if unset)."""
    if spec.kube_version is not None and spec.kube_version not in EKS_VERSIONS:
        yield ("kubeVersion",), (f"{spec.kube_version} is not an EKS release paddlegen targets; "
                                 f"use one of {', '.join(EKS_VERSIONS)}")


@rule("zones-in-region")
def zones_in_region(spec: EksSpec) -> Iterable[Violation]:
    """availabilityZones are distinct zones of region (eu-central-1a is in eu-central-1)."""
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


@dataclass(frozen=True)
class EksPlan:
    meta: Meta
    cluster: EksCluster  # the spec's settings, with worker_count resolved
    efs_stack: str
    iam_group: str  # also its inline policy's name
    volume: EfsCsiVolume
    data: DataJob
    training: PserverTraining


def derive(spec: EksSpec) -> EksPlan:
    name, namespace, t = spec.metadata.name, spec.metadata.namespace, spec.training
    tgt = target(spec)
    cluster = spec.cluster.model_copy(
        update={"worker_count": spec.cluster.worker_count or t.nodes})
    storage = spec.storage
    volume = EfsCsiVolume(f"{namespace}-{storage.claim_name}", storage.claim_name,
                          storage.efs.file_system_id, storage.capacity, storage.request)
    data, training = claim_jobs(name, storage.claim_name, spec.dataset, t, tgt.kube)
    return EksPlan(meta_of(spec, tgt, t.image), cluster, f"{cluster.name}-efs",
                   f"{cluster.name}-eksctl", volume, data, training)


def objects(plan: EksPlan) -> list[Object]:
    meta, training, launch = plan.meta, plan.training, plan.training.launch
    script = [launcher_config_map(meta, training, launcher_script(training))] \
        if launch.scripted else []
    service = [headless_service(meta, training)] if launch.service else []
    trainers = paddle_job(meta, training) if launch.operator else training_job(meta, training)
    return [*namespace(meta), *efs_csi_volume(meta, plan.volume),
            persistent_volume_claim(meta, plan.volume), *pod_reader(meta, training.pod_reader),
            *script, *service, *network_policy(meta, training.ports),
            *pod_disruption_budget(meta, training),
            data_job(meta, plan.data, plan.volume.claim_name), trainers]


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
        }],
        "addons": [
            {"name": "vpc-cni",
             "configurationValues": json.dumps({"enableNetworkPolicy": "true"})},
            {"name": "eks-pod-identity-agent"},
            {"name": "aws-efs-csi-driver", "podIdentityAssociations": [{
                "namespace": "kube-system", "serviceAccountName": "efs-csi-controller-sa",
                "permissionPolicyARNs": [EFS_CSI_ROLE_POLICY]}]},
        ],
        "cloudWatch": {"clusterLogging": {"enableTypes": ["api", "audit", "authenticator"]}},
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
            *iam_statements(c.account_id),
        ],
    }


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
    kube, operator = meta.target.kube, training.launch.operator
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
writes runs `aws eks get-token`). The cluster's kubeconfig and the models at the end go to
`$ASSETS`, out of this directory, which you commit.

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
{report}
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
    selector = "-l " + ",".join(f"{key}={q(value)}"
                                for key, value in trainer_selector(meta).items())
    sections += [
        ("Data and training", f"""\
```sh
{pre}{rb.creates(first)}{rb.wait_for_job(meta, data.name)}{rb.creates([training_manifest])}\
{rb.follow_trainers(meta, training, selector)}```

{rb.data_parts(data, training)} {failures(meta, training)}

The job's NetworkPolicy admits traffic to its pods only from its trainers, and only to the
pserver ports; the VPC CNI's network policy agent enforces it."""),
        ("The models, off EFS before anything is deleted", f"""\
```sh
{pre}{rb.copy_models(meta, training)}```

Go on only if it said the models are safe."""),
        ("Teardown, in this order", f"""\
```sh
{pre}{rb.delete_objects(meta)}{operator_removed}\
FILE_SYSTEM_ID=$({file_system_of_stack})
OWNER=$({owner_of_file_system})
aws cloudformation delete-stack --stack-name {stack}
aws cloudformation wait stack-delete-complete --stack-name {stack}
if [ "$OWNER" = {stack} ]; then aws efs delete-file-system --file-system-id "$FILE_SYSTEM_ID"; fi
eksctl delete cluster -f {config} --wait
```

The EFS stack goes before eksctl's, whose exports it uses and whose VPC its mount targets are in.
The file system goes only if this runbook's stack made it (its `{efs.OWNER_TAG}` tag); one you
brought stays. Last, as the administrator:

```sh
{pre}{rb.AS_ADMINISTRATOR}{rb.group_policy_deleted(plan.iam_group)}\
{rb.iam_group_removed(plan.iam_group, MANAGED_POLICIES)}```"""),
    ]
    return rb.header(meta, "eks") + numbered(sections)


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
    return pserver_explanation(plan.meta, "eks", plan.training, plan.data.out_dir)


PROFILE = Profile(
    name="eks",
    summary="today's AWS: `aws/eksctl-cluster.yaml` for eksctl, EFS through its CSI driver, the "
            "data Job and the training run (seed, indexed or kubeflow launcher)",
    model=EksSpec,
    rules=(port_range, gradient_servers, worker_capacity, eks_version, launcher_release(target),
           kubeflow_names, release_fields(target, JOBS), resource_limits(JOBS), job_names,
           split_count, zones_in_region, storage_request, efs_file_system, training_image_tag,
           dataset_image_tag, system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain, checks=checks)
