"""The training spec (apiVersion paddlegen/v1) as pydantic models.

The models describe the spec *after* it is merged onto its profile's defaults, so every field the
emitters need is required here; `json_schema.user_schema` relaxes what the profiles fill in.
Validation is strict: YAML `"7164"` is not a port and `123456789012` is not an account id.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from paddlegen.schema import patterns as p

PROFILES = ("kube-aws", "kube-up", "local")
Profile = Literal["kube-aws", "kube-up", "local"]


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


class ClusterSettings(SpecModel):
    """AWS and cluster settings (kube-aws and kube-up profiles)."""

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


class EfsSettings(SpecModel):
    """The EFS file system that holds data, configs and output."""

    dns_name: Annotated[
        str, text(p.EFS_DNS_NAME, "fs-<id>.efs.<region>.amazonaws.com of the file system.")
    ]


class StorageSettings(SpecModel):
    """Shared storage for the data and training Jobs."""

    efs: EfsSettings | None = Field(default=None, description="EFS (kube-aws profile).")
    claim_name: Annotated[
        str, text(p.DNS_SUBDOMAIN, "Name of the PersistentVolumeClaim (and of its volume).")
    ]
    capacity: Annotated[str, text(p.QUANTITY, "Capacity of the PersistentVolume, e.g. 100Gi.")]
    request: Annotated[str, text(p.QUANTITY, "Storage the claim requests, e.g. 50Gi.")]


class DatasetSettings(SpecModel):
    """The data-preparation Job: downloads the data and splits it, one part per trainer."""

    image: Annotated[str, text(p.IMAGE, "Image of the data-preparation Job.")]
    job_name: Annotated[str, text(p.JOB_NAME, "Name of the data-preparation Job.")]


class TrainingSettings(SpecModel):
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


class TrainingSpec(SpecModel):
    """A paddlegen training spec: one file in, every artifact to run the training out."""

    api_version: Literal["paddlegen/v1"] = Field(description="Always paddlegen/v1.")
    kind: Literal["TrainingJob"] = Field(description="Always TrainingJob.")
    metadata: Metadata = Field(description="Name and namespace of the training job.")
    profile: Profile = Field(description="Which way to run: kube-aws, kube-up or local.")
    kube_version: Annotated[
        str, text(p.KUBE_VERSION, "Kubernetes minor release the manifests are checked against.")
    ]
    cluster: ClusterSettings | None = Field(
        default=None, description="AWS and cluster settings (kube-aws and kube-up profiles).")
    storage: StorageSettings = Field(description="Shared storage for data, configs and output.")
    dataset: DatasetSettings | None = Field(
        default=None, description="The data-preparation Job (kube-aws profile).")
    training: TrainingSettings = Field(description="The parameter-server training Job.")
