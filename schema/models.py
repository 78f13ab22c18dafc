"""The training spec (apiVersion paddlegen/v1) as pydantic models, one spec model per profile.

The models describe the spec *after* it is merged onto its profile's defaults, so every field the
emitters need is required here; `json_schema.user_schema` relaxes what the profiles fill in.
Validation is strict: YAML `"7164"` is not a port and `123456789012` is not an account id.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from paddlegen.schema import patterns as p


def text(pattern: p.Pattern, description: str) -> object:
    """A string field that must match `pattern`; the meaning feeds error messages."""
    return Field(description=description, pattern=pattern.regex)


class SpecModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        regex_engine="python-re",  # the grammars use look-aheads
    )


class Metadata(SpecModel):
    """Names the training job."""

    name: Annotated[str, text(p.JOB_NAME, "Job name; also the EFS job directory and labels.")]
    namespace: Annotated[str, text(p.DNS_LABEL, "Namespace of every namespaced object.")]


class KubeAwsCluster(SpecModel):
    """AWS settings of a kube-aws cluster (seeds 001 and 003)."""

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
        str, text(p.KMS_KEY_ARN, "ARN of the KMS key that encrypts the cluster's TLS assets.")
    ]
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
        int | None, Field(ge=1, description="TTL of the record set, seconds.")
    ] = Field(default=None, alias="recordSetTTL")


class KubeUpCluster(SpecModel):
    """A cluster started by kubernetes' cluster/kube-up.sh on AWS (seeds 000 and 002)."""

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
        str, text(p.S3_URI, "s3://bucket for the release tarballs (AWS_S3_BUCKET).")
    ]


class EfsSettings(SpecModel):
    """The EFS file system that holds data, configs and output."""

    dns_name: Annotated[
        str, text(p.EFS_DNS_NAME, "fs-<id>.efs.<region>.amazonaws.com of the file system.")
    ]


class EfsStorage(SpecModel):
    """EFS as a PersistentVolume, bound to one claim that the Jobs mount."""

    efs: EfsSettings = Field(description="The EFS file system.")
    claim_name: Annotated[
        str, text(p.DNS_LABEL, "Name of the PersistentVolumeClaim; its volume is "
                  "<namespace>-<claimName>.")
    ]
    capacity: Annotated[str, text(p.QUANTITY, "Capacity of the PersistentVolume, e.g. 100Gi.")]
    request: Annotated[str, text(p.QUANTITY, "Storage the claim requests, e.g. 50Gi.")]


class HostPathStorage(SpecModel):
    """A directory of every node, mounted into the pods (kube-up: EFS mounted on each host)."""

    host_path: Annotated[
        str, text(p.ABSOLUTE_PATH, "Host directory mounted into the pods, e.g. /home/admin/efs.")
    ]


class LocalStorage(SpecModel):
    """Where the single trainer's output lands on the machine."""

    host_path: Annotated[
        str, text(p.ABSOLUTE_PATH, "Host directory for the models, e.g. /home/work/paddle_output.")
    ]


class LocalTraining(SpecModel):
    """`paddle train` on one machine (seed 004): the trainer flags, straight from the spec."""

    image: Annotated[str, text(p.IMAGE, "Image with Paddle, the demo and its data.")]
    work_dir: Annotated[
        str, text(p.ABSOLUTE_PATH, "Directory the trainer runs in (holds the config).")
    ]
    config: Annotated[str, text(p.PATH_SEGMENT, "Trainer config file (--config).")]
    save_dir: Annotated[
        str, text(p.ABSOLUTE_PATH, "Where models go (--save_dir); the host path is mounted here.")
    ]
    trainer_count: Annotated[
        int, Field(ge=1, le=1024, description="Trainer threads (--trainer_count).")
    ]
    log_period: Annotated[int, Field(ge=1, description="Batches between logs (--log_period).")]
    num_passes: Annotated[int, Field(ge=1, description="Passes over the data (--num_passes).")]
    use_gpu: bool = Field(description="Train on a GPU (--use_gpu).")
    show_parameter_stats_period: Annotated[
        int, Field(ge=0, description="Batches between parameter statistics "
                   "(--show_parameter_stats_period).")
    ]
    test_all_data_in_one_period: bool = Field(
        description="Test on all test data each period (--test_all_data_in_one_period).")


class DatasetSettings(SpecModel):
    """The data-preparation Job: downloads the data and splits it, one part per trainer."""

    image: Annotated[str, text(p.IMAGE, "Image of the data-preparation Job.")]
    job_name: Annotated[str, text(p.JOB_NAME, "Name of the data-preparation Job.")]


class ClusterTraining(SpecModel):
    """The parameter-server training Job: one pserver and one trainer per pod."""

    image: Annotated[str, text(p.IMAGE, "Image of the training Job.")]
    nodes: Annotated[
        int, Field(ge=1, le=1000, description="Trainer pods; parallelism = completions = nodes.")
    ]
    port: Annotated[int, Field(ge=1, le=65535, description="First pserver port (--port).")]
    ports_num: Annotated[
        int, Field(ge=1, le=100, description="Ports for dense updates (--ports_num).")
    ]
    ports_num_for_sparse: Annotated[
        int, Field(ge=0, le=100, description="Ports for sparse updates (--ports_num_for_sparse).")
    ]
    gradient_servers: Annotated[
        int | None,
        Field(ge=1, le=1000, description="--num_gradient_servers; defaults to nodes."),
    ] = None
    trainer_count: Annotated[
        int, Field(ge=1, le=1024, description="Trainer threads per pod (TRAINER_COUNT).")
    ]
    nic: Annotated[str, text(p.NIC, "Network interface the pservers bind (--nics).")]
    config_dir: Annotated[
        str, text(p.PATH_SEGMENT, "Directory of the trainer config under the job directory.")
    ]
    job_path: Annotated[
        str, text(p.ABSOLUTE_PATH, "Where the shared volume is mounted in the trainer (JOB_PATH).")
    ]


class SpecBase(SpecModel):
    api_version: Literal["paddlegen/v1"] = Field(description="Always paddlegen/v1.")
    kind: Literal["TrainingJob"] = Field(description="Always TrainingJob.")
    metadata: Metadata = Field(description="Name and namespace of the training job.")
    kube_version: Annotated[
        str, text(p.KUBE_VERSION, "Kubernetes minor release the manifests are checked against.")
    ]


class KubeAwsSpec(SpecBase):
    """Distributed training on a kube-aws cluster with EFS (seeds 001 and 003)."""

    profile: Literal["kube-aws"] = Field(description="Which way to run.")
    cluster: KubeAwsCluster = Field(description="The kube-aws cluster.")
    storage: EfsStorage = Field(description="EFS for data, configs and output.")
    dataset: DatasetSettings = Field(description="The data-preparation Job.")
    training: ClusterTraining = Field(description="The parameter-server training Job.")


class KubeUpSpec(SpecBase):
    """Distributed training on a kube-up.sh cluster with EFS mounted on every node (seed 000)."""

    profile: Literal["kube-up"] = Field(description="Which way to run.")
    cluster: KubeUpCluster = Field(description="The kube-up.sh cluster.")
    storage: HostPathStorage = Field(description="The EFS mount on every node.")
    training: ClusterTraining = Field(description="The parameter-server training Job.")


class LocalSpec(SpecBase):
    """One trainer on one machine, no AWS (seed 004)."""

    profile: Literal["local"] = Field(description="Which way to run.")
    storage: LocalStorage = Field(description="Where the output lands.")
    training: LocalTraining = Field(description="The trainer and its flags.")


TrainingSpec = Union[KubeAwsSpec, KubeUpSpec, LocalSpec]  # noqa: UP007 (a runtime alias)
SPEC_MODELS: dict[str, type[SpecBase]] = {
    "kube-aws": KubeAwsSpec, "kube-up": KubeUpSpec, "local": LocalSpec}
PROFILES = tuple(SPEC_MODELS)
