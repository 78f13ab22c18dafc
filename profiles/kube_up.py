"""Profile `kube-up` (seeds 000 and 002): a cluster started by kubernetes' cluster/kube-up.sh on
AWS, EFS mounted on every node and given to the trainers as a hostPath.

kube-up.sh dropped its AWS provider after Kubernetes 1.5, so this profile targets 1.5: no RBAC
(the API server authorizes every request), init containers as the pod.beta annotation, no
backoffLimit (the deadline ends a failed Job).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

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
    meta_of,
    pserver_training,
)
from paddlegen.compiler.profile import Explanation, Profile
from paddlegen.compiler.render import to_yaml
from paddlegen.compiler.rules import (
    gradient_servers,
    host_path,
    kube_version,
    launcher_release,
    port_range,
    release_fields,
    resource_limits,
    system_namespace,
    training_image_tag,
    worker_capacity,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.compiler.template import render
from paddlegen.profiles.aws import cost, efs
from paddlegen.profiles.aws import formats as aws_p
from paddlegen.profiles.aws import runbook as aws_rb
from paddlegen.profiles.aws.rules import bucket_of, region_of, s3_bucket_name, zone_in_region
from paddlegen.profiles.aws.storage import SEED_VOLUME
from paddlegen.schema import patterns as p
from paddlegen.schema.models import ClusterTraining, SpecBase, SpecModel, text

RELEASE = "1.5.8"  # v1.5.x are the last releases whose cluster/kube-up.sh has the AWS provider
TARGET = Target(f"cluster/kube-up.sh of Kubernetes v{RELEASE}", KubeRelease(RELEASE, "1.5"))
# Seed 000: the seeds' managed policies but the KMS one (kube-up.sh encrypts nothing).
MANAGED_POLICIES = tuple(name for name in aws_rb.SEED_MANAGED_POLICIES
                         if name != "AWSKeyManagementServicePowerUser")


class KubeUpCluster(SpecModel, title="kube-up cluster"):
    """A cluster started by kubernetes' cluster/kube-up.sh on AWS."""

    name: Annotated[
        str, text(aws_p.STACK_NAME, "Instance name prefix (KUBE_AWS_INSTANCE_PREFIX), e.g. k8s.")
    ]
    availability_zone: Annotated[str, text(aws_p.ZONE, "Zone of the cluster (KUBE_AWS_ZONE).")]
    region: Annotated[
        str | None,
        text(aws_p.REGION, "Region of the zone; derived from availabilityZone if unset."),
    ] = None
    worker_count: Annotated[
        int | None, Field(ge=1, le=1000, description="Nodes (NUM_NODES); defaults to nodes.")
    ] = None
    controller_instance_type: Annotated[
        str, text(aws_p.INSTANCE_TYPE, "EC2 instance type of the master (MASTER_SIZE).")
    ]
    worker_instance_type: Annotated[
        str, text(aws_p.INSTANCE_TYPE, "EC2 instance type of the nodes (NODE_SIZE).")
    ]
    s3_uri: Annotated[
        str | None, text(aws_p.S3_URI, "s3://bucket for the release tarballs (AWS_S3_BUCKET); "
                         "unset, kube-up.sh makes one named kubernetes-staging-<hash>.")
    ] = None


class HostPathStorage(SpecModel, title="Host directory"):
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
    volume = HostVolume(spec.storage.host_path, SEED_VOLUME)
    training = pserver_training(name, spec.training, volume, data_ready, TARGET.kube)
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
    return render(__package__, "kube-up.md.j2", {
        "plan": plan, "manifest_paths": manifest_paths, "rb": rb, "aws_rb": aws_rb,
        "release": RELEASE, "policies": MANAGED_POLICIES, "worker_subnet": efs.WORKER_SUBNET,
        "before_you_start": before_you_start(plan.cluster), "bucket_of": bucket_of})


def explain(plan: KubeUpPlan) -> Explanation:
    return pserver_explanation(plan.meta, "kube-up", plan.training, None)


PROFILE = Profile(
    name="kube-up",
    summary="the 2016-2017 tutorial stack (seeds 000, 002), kept for fidelity: `aws/kube-up.env` "
            "for cluster/kube-up.sh, the training Job on "
            "the hosts' EFS mount",
    model=KubeUpSpec,
    rules=(port_range, gradient_servers, worker_capacity, kube_version(target, target_reads=()),
           launcher_release(target, target_reads=()),
           release_fields(target, ("training",), target_reads=()), resource_limits(("training",)),
           zone_in_region, s3_bucket_name, training_image_tag, system_namespace, host_path),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain)
