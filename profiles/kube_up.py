"""Profile `kube-up` (seeds 000 and 002): a cluster started by kubernetes' cluster/kube-up.sh on
AWS, EFS mounted on every node and given to the trainers as a hostPath.

kube-up.sh dropped its AWS provider after Kubernetes 1.5, so this profile targets 1.5: no RBAC
(the API server authorizes every request), init containers as the pod.beta annotation, no
backoffLimit (the deadline ends a failed Job).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from shlex import quote as q
from typing import Annotated, Literal

from pydantic import Field

from paddlegen.compiler import efs
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import pserver_explanation
from paddlegen.compiler.kube_objects import (
    Object,
    namespace,
    network_policy,
    pod_reader,
    training_job,
)
from paddlegen.compiler.plan import (
    DataGate,
    HostVolume,
    Meta,
    PserverTraining,
    bucket_of,
    meta_of,
    pserver_training,
    region_of,
)
from paddlegen.compiler.profile import Explanation, Profile
from paddlegen.compiler.render import to_yaml
from paddlegen.compiler.rules import (
    gradient_servers,
    kube_version,
    launcher_release,
    port_range,
    release_fields,
    resource_limits,
    s3_bucket_name,
    system_namespace,
    training_image_tag,
    worker_capacity,
    zone_in_region,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.profiles.aws import cost
from paddlegen.schema import patterns as p
from paddlegen.schema.models import ClusterTraining, SpecBase, SpecModel, text

RELEASE = "1.5.8"  # v1.5.x are the last releases whose cluster/kube-up.sh has the AWS provider
TARGET = Target(f"cluster/kube-up.sh of Kubernetes v{RELEASE}", KubeRelease(RELEASE, "1.5"))
# Seed 000: the seeds' managed policies but the KMS one (kube-up.sh encrypts nothing).
MANAGED_POLICIES = tuple(name for name in rb.SEED_MANAGED_POLICIES
                         if name != "AWSKeyManagementServicePowerUser")


class KubeUpCluster(SpecModel):
    """A cluster started by kubernetes' cluster/kube-up.sh on AWS."""

    name: Annotated[
        str, text(p.STACK_NAME, "Instance name prefix (KUBE_AWS_INSTANCE_PREFIX), e.g. k8s.")
    ]
    availability_zone: Annotated[str, text(p.ZONE, "Zone of the cluster (KUBE_AWS_ZONE).")]
    region: Annotated[
        str | None, text(p.REGION, "Region of the zone; derived from availabilityZone if unset.")
    ] = None
    worker_count: Annotated[
        int | None, Field(ge=1, le=1000, description="Nodes (NUM_NODES); defaults to nodes.")
    ] = None
    controller_instance_type: Annotated[
        str, text(p.INSTANCE_TYPE, "EC2 instance type of the master (MASTER_SIZE).")
    ]
    worker_instance_type: Annotated[
        str, text(p.INSTANCE_TYPE, "EC2 instance type of the nodes (NODE_SIZE).")
    ]
    s3_uri: Annotated[
        str | None, text(p.S3_URI, "s3://bucket for the release tarballs (AWS_S3_BUCKET); "
                         "unset, kube-up.sh makes one named kubernetes-staging-<hash>.")
    ] = None


class HostPathStorage(SpecModel):
    """A directory of every node, mounted into the pods (kube-up: EFS mounted on each host)."""

    host_path: Annotated[
        str, text(p.ABSOLUTE_PATH, "Host directory mounted into the pods, e.g. /home/admin/efs.")
    ]


class KubeUpSpec(SpecBase):
    """Distributed training on a kube-up.sh cluster with EFS mounted on every node."""

    profile: Literal["kube-up"] = Field(description="Which way to run.")
    cluster: KubeUpCluster = Field(description="The kube-up.sh cluster.")
    storage: HostPathStorage = Field(description="The EFS mount on every node.")
    training: ClusterTraining = Field(description="The parameter-server training Job.")


def target(spec: KubeUpSpec) -> Target:
    return TARGET


@dataclass(frozen=True)
class KubeUpPlan:
    meta: Meta
    cluster: KubeUpCluster  # the spec's settings, with worker_count and region resolved
    host_path: str  # EFS on every node
    efs_stack: str
    training: PserverTraining


def derive(spec: KubeUpSpec) -> KubeUpPlan:
    c, name = spec.cluster, spec.metadata.name
    cluster = c.model_copy(update={"worker_count": c.worker_count or spec.training.nodes,
                                   "region": c.region or region_of(c.availability_zone)})
    job_dir = f"{spec.training.job_path}/{name}"
    # The parts are copied in by hand before the Job is created; the gate only keeps trainers
    # from starting on a volume without them.
    last_part = f"{job_dir}/{spec.training.nodes - 1}/data"
    data_ready = DataGate('[ -d "$1" ]', (last_part,), f"the directory {last_part}")
    training = pserver_training(name, spec.training, HostVolume(spec.storage.host_path),
                                data_ready, TARGET.kube)
    return KubeUpPlan(meta_of(spec, TARGET, spec.training.image), cluster,
                      spec.storage.host_path, f"{c.name}-efs", training)


def objects(plan: KubeUpPlan) -> list[Object]:
    return [*namespace(plan.meta), *pod_reader(plan.meta, plan.training.pod_reader),
            *network_policy(plan.meta, plan.training.ports),
            training_job(plan.meta, plan.training)]


def kube_up_env(plan: KubeUpPlan) -> str:
    """Variables for kubernetes' cluster/kube-up.sh (seed 000), to source before running it.

    AWS_S3_REGION is the region of the zone: the seed's `us-west-2a` there is a zone, which
    kube-up.sh passes on to `aws s3api create-bucket` as a region, and that fails.
    """
    c = plan.cluster
    variables = {
        "KUBERNETES_PROVIDER": "aws",
        "KUBE_AWS_ZONE": c.availability_zone,
        "NUM_NODES": c.worker_count,
        "MASTER_SIZE": c.controller_instance_type,
        "NODE_SIZE": c.worker_instance_type,
        "AWS_S3_REGION": c.region,
    }
    if c.s3_uri:
        variables["AWS_S3_BUCKET"] = bucket_of(c.s3_uri)
    variables["KUBE_AWS_INSTANCE_PREFIX"] = c.name
    header = ("# Generated by paddlegen. Source before cluster/kube-up.sh and kube-down.sh:\n"
              "#   . aws/kube-up.env\n")
    return header + "".join(f"export {name}={shlex.quote(str(value))}\n"
                            for name, value in variables.items())


def files(plan: KubeUpPlan) -> dict[str, str]:
    return {"aws/kube-up.env": kube_up_env(plan),
            "aws/efs.cfn.yaml": to_yaml(efs.template(plan.cluster.name, plan.efs_stack))}


# kube-up.sh's names (cluster/aws/util.sh, config-default.sh of v1.5): the key it makes the key
# pair of, the user of its Debian images, its nodes' security group and Name tag.
SSH_KEY = "$HOME/.ssh/kube_aws_rsa"
SSH_USER = "admin"


def before_you_start(c: KubeUpCluster) -> str:
    """What it costs, how long it takes and what it needs, before any block runs."""
    region, count = str(c.region), c.worker_count or 0
    costs = [cost.instances(region, c.controller_instance_type, 1, " (master)"),
             cost.instances(region, c.worker_instance_type, count, " (nodes)")]
    quota = {c.controller_instance_type: 1}
    quota[c.worker_instance_type] = quota.get(c.worker_instance_type, 0) + count
    needs = ["a Linux x86_64 machine with bash, curl, tar and ssh",
             "the AWS CLI v2 on PATH",
             "an IAM user with access keys, and an administrator's AWS CLI profile in "
             "`$ADMIN_PROFILE` for the two IAM blocks",
             cost.vcpu_quota(region, quota),
             "a shell in the directory of this file (`cd out/`): the blocks read `$PWD`"]
    return cost.before_you_start(
        region, costs, "Data transfer, the master's and nodes' EBS volumes and storage",
        "It takes about 10 minutes for kube-up.sh to make the cluster, a few minutes for the "
        "file system's stack, and about as long again to tear it all down, which removes what "
        "this runbook made.", needs)


def runbook(plan: KubeUpPlan, manifest_paths: list[str]) -> str:
    meta, c, training = plan.meta, plan.cluster, plan.training
    host_job_dir = f"{plan.host_path}/{training.name}"
    stack = q(plan.efs_stack)
    p = rb.preamble(c.name, {"AWS_DEFAULT_REGION": q(str(c.region)),
                             "AWS_PROFILE": q(rb.user_profile(c.name))})
    vpc = (f"aws ec2 describe-vpcs --filters Name=tag:KubernetesCluster,Values={q(c.name)} "
           "--query 'Vpcs[0].VpcId' --output text")
    nodes = (f"aws ec2 describe-instances --filters Name=tag:Name,Values={q(c.name + '-minion')} "
             "Name=instance-state-name,Values=running "
             "--query 'Reservations[].Instances[].PublicIpAddress' --output text")
    ssh = f'ssh -i "{SSH_KEY}" -o StrictHostKeyChecking=accept-new {SSH_USER}@"$ip"'
    efs_dns = rb.stack_output(plan.efs_stack, "DnsName")
    mount = rb.mount_command('"$EFS_DNS_NAME"', q(plan.host_path))
    group_name, policies = f"{c.name}-kube-up", MANAGED_POLICIES
    bucket = (f"aws s3 rm s3://{q(bucket_of(c.s3_uri))}/devel --recursive\n" if c.s3_uri else "")
    unpack = f"sudo mkdir -p {host_job_dir} && sudo tar -C {host_job_dir} -xzf -"
    return rb.header(meta, "kube-up") + before_you_start(c) + f"""
## 0. Tools: the AWS CLI, and Kubernetes v{RELEASE}

Its `cluster/kube-up.sh` is one of the last with the AWS provider, and its kubectl matches the
cluster. `$ASSETS` keeps the release and what only this runbook knows, out of this directory.

```sh
{p}curl -fL https://dl.k8s.io/v{RELEASE}/kubernetes.tar.gz | tar xz -C "$ASSETS"
ln -sf "$ASSETS/kubernetes/platforms/linux/amd64/kubectl" "$ASSETS/bin/kubectl"
```

## 1. IAM, as an administrator of the account: a group for the user that runs kube-up.sh

```sh
{p}{rb.AS_ADMINISTRATOR}{rb.iam_group(group_name, policies, "kube-up.sh")}```

{rb.as_the_user(c.name)}

## 2. The cluster ({c.worker_count} nodes in {c.availability_zone})

```sh
{p}. "$OUT/aws/kube-up.env"
"$ASSETS/kubernetes/cluster/kube-up.sh"
kubectl get nodes
```

## 3. EFS in the cluster's network, mounted on every node at `{plan.host_path}`

```sh
{p}VPC_ID=$({vpc})
SUBNET_ID=$(aws ec2 describe-subnets --filters Name=vpc-id,Values="$VPC_ID" \\
  --query 'Subnets[0].SubnetId' --output text)
NODE_SG=$(aws ec2 describe-security-groups --filters Name=vpc-id,Values="$VPC_ID" \\
  Name=group-name,Values={q("kubernetes-minion-" + c.name)} --query 'SecurityGroups[0].GroupId' \\
  --output text)
{rb.deploy_efs(plan.efs_stack, ['VpcId="$VPC_ID"', 'WorkerSecurityGroupId="$NODE_SG"',
                                            f'{efs.WORKER_SUBNET}="$SUBNET_ID"'])}EFS_DNS_NAME=$({efs_dns})
for ip in $({nodes}); do
  {ssh} \\
    {q("sudo apt-get install -y nfs-common && ")}"{mount}"
done
```

The file system's security group admits NFS (TCP 2049) from the nodes' security group and
nothing else. A node that the auto-scaling group replaces comes up without the mount: run this
block again.

## 4. The trainer config and the data

Put the trainer config in `{host_job_dir}/{training.config_dir}/` and data part N in
`{host_job_dir}/N/data/`, for N from 0 to {training.trainers - 1}; the trainers wait for the
last part. From a local directory laid out that way, through one node:

```sh
{p}DATA_DIR="${{DATA_DIR:?set DATA_DIR to a directory holding {training.config_dir}/ and N/data/}}"
ip=$({nodes} | cut -f1)
tar -C "$DATA_DIR" -czf - . | {ssh} {q(unpack)}
```

## 5. Training

```sh
{p}{rb.creates(manifest_paths)}{rb.follow_trainers(meta, training)}```

{rb.outputs(training, f"on the nodes: `{host_job_dir}/output/`")} {rb.failures(meta, training)}

## 6. The models, off EFS before anything is deleted

```sh
{p}{rb.copy_models(meta, training)}```

Go on only if it said the models are safe.

## 7. Teardown, in this order

```sh
{p}{rb.delete_objects(meta)}{rb.delete_load_balancers(vpc)}\
for ip in $({nodes}); do
  {ssh} {q(f"sudo umount -l {plan.host_path}")}
done
aws cloudformation delete-stack --stack-name {stack}
aws cloudformation wait stack-delete-complete --stack-name {stack}
. "$OUT/aws/kube-up.env" && "$ASSETS/kubernetes/cluster/kube-down.sh"
{bucket}```

Last, as the administrator:

```sh
{p}{rb.AS_ADMINISTRATOR}{rb.iam_group_removed(group_name, policies)}```
"""


def explain(plan: KubeUpPlan) -> Explanation:
    return pserver_explanation(plan.meta, "kube-up", plan.training, None)


PROFILE = Profile(
    name="kube-up",
    summary="the 2016-2017 tutorial stack (seeds 000, 002), kept for fidelity: `aws/kube-up.env` "
            "for cluster/kube-up.sh, the training Job on "
            "the hosts' EFS mount",
    model=KubeUpSpec,
    rules=(port_range, gradient_servers, worker_capacity, kube_version(target),
           launcher_release(target),
           release_fields(target, ("training",)), resource_limits(("training",)),
           zone_in_region, s3_bucket_name, training_image_tag, system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain)
