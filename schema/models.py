"""The parts of the training spec (apiVersion paddlegen/v1) that several profiles share.

Each profile (paddlegen.profiles) composes its spec model from these parts and its own. The
models describe the spec *after* it is merged onto its profile's defaults, so every field the
emitters need is required here; `json_schema.user_schema` relaxes what the profiles fill in.
Validation is strict: YAML `"7164"` is not a port and `123456789012` is not an account id.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from paddlegen.schema import patterns as p


def text(pattern: p.Pattern, description: str | None = None) -> object:
    """A string field that must match `pattern`; the meaning feeds error messages. Its length
    is checked first, so that the regex only ever reads a bounded value."""
    field = Field(description=description, pattern=pattern.regex)
    # Field() takes no validator, but its metadata may hold one; a before-validator wraps the
    # string schema, pattern included, so it runs first (and leaves the JSON Schema as it is).
    field.metadata.append(BeforeValidator(partial(refuse_too_long, pattern)))
    return field


def refuse_too_long(pattern: p.Pattern, value: object) -> object:
    if isinstance(value, str) and len(value) > pattern.max_length:
        # the pattern lets messages name the grammar, as for a value that does not match it
        raise PydanticCustomError(
            "string_too_long", "String should have at most {max_length} characters",
            {"max_length": pattern.max_length, "pattern": pattern.regex})
    return value


# Kubernetes keeps durations in int64 seconds; a year bounds any training run of these demos.
MAX_DEADLINE_SECONDS = 366 * 24 * 3600
INT32_MAX = 2**31 - 1  # what gflags' int32 flags and Kubernetes' int32 fields take


def deadline(job: str) -> object:
    return Field(ge=1, le=MAX_DEADLINE_SECONDS, description=(
        f"Seconds {job} may run before Kubernetes stops it (activeDeadlineSeconds)."))


class SpecModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        regex_engine="python-re",  # the grammars use look-aheads
        defer_build=True,  # built when first used: only the chosen profile's models
    )


class Metadata(SpecModel, title="Metadata"):
    """Names the training job."""

    name: Annotated[str, text(p.JOB_NAME, "Job name; also its directory on the shared volume and "
                              "its labels.")]
    namespace: Annotated[str, text(p.DNS_LABEL, "Namespace of every namespaced object.")]


def ttl(job: str) -> object:
    return Field(ge=0, le=INT32_MAX, description=(
        f"Seconds after {job} finishes that Kubernetes deletes it (ttlSecondsAfterFinished, "
        "Kubernetes 1.21 and later); unset, it stays."))


class Quantities(SpecModel, title="CPU and memory"):
    """CPU and memory, as Kubernetes quantities."""

    cpu: Annotated[str | None, text(p.QUANTITY, "CPU in cores, such as 2 or 500m.")] = None
    memory: Annotated[str | None, text(p.QUANTITY, "Memory, such as 4Gi or 512Mi.")] = None


class Resources(SpecModel, title="Resources"):
    """What each container asks the scheduler for, and the most it may use."""

    requests: Quantities = Field(default_factory=Quantities,
                                 description="Reserved on the node for the container.")
    limits: Quantities = Field(default_factory=Quantities,
                               description="The most the container may use.")


class Toleration(SpecModel, title="Toleration"):
    """A taint the job's pods tolerate (Kubernetes 1.6 and later)."""

    key: Annotated[str | None, text(p.LABEL_KEY, "The taint's key; unset with Exists: all.")
                   ] = None
    operator: Literal["Exists", "Equal"] = Field(
        default="Equal", description="Equal: the taint's value is `value`; Exists: any.")
    value: Annotated[str | None, text(p.LABEL_VALUE, "The taint's value, with Equal.")] = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="The taint's effect; unset: every effect.")
    toleration_seconds: Annotated[
        int | None, Field(ge=0, le=INT32_MAX, description="How long a NoExecute taint is "
                          "tolerated before the pod is evicted.")
    ] = None


class Scheduling(SpecModel, title="Scheduling"):
    """Where every pod of the job runs."""

    priority_class_name: Annotated[
        str | None, text(p.DNS_SUBDOMAIN, "A PriorityClass of the cluster for every pod "
                         "(Kubernetes 1.11 and later).")
    ] = None
    node_selector: dict[Annotated[str, text(p.LABEL_KEY)],
                        Annotated[str, text(p.LABEL_VALUE)]] = Field(
        default_factory=dict, description="Node labels every pod's node must have.")
    tolerations: list[Toleration] = Field(default_factory=list,
                                          description="Taints every pod tolerates.")


class Security(SpecModel, title="Security"):
    """How every container runs. The tutorial images run as root and write to /root, so both
    switches stay off for them; turn them on for images that can."""

    run_as_non_root: bool = Field(default=False, description=(
        "Refuse to start a container whose user is root (runAsNonRoot)."))
    run_as_user: Annotated[
        int | None, Field(ge=1, le=INT32_MAX, description="The user id the containers run as.")
    ] = None
    read_only_root_filesystem: bool = Field(default=False, description=(
        "Mount every container's root filesystem read-only."))


class DatasetSettings(SpecModel, title="Data preparation"):
    """The data-preparation Job: downloads the data and splits it, one part per trainer."""

    image: Annotated[str, text(p.IMAGE, "Image of the data-preparation Job.")]
    job_name: Annotated[str, text(p.JOB_NAME, "Name of the data-preparation Job.")]
    resources: Resources = Field(description="CPU and memory of the data-preparation Job.")
    active_deadline_seconds: Annotated[int, deadline("the data-preparation Job")]
    ttl_seconds_after_finished: Annotated[int | None, ttl("the data-preparation Job")] = None


Launcher = Literal["seed", "indexed", "kubeflow"]


class ClusterTraining(SpecModel, title="Parameter-server training"):
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
    resources: Resources = Field(description="CPU and memory of each trainer pod.")
    active_deadline_seconds: Annotated[int, deadline("the training Job")]
    ttl_seconds_after_finished: Annotated[int | None, ttl("the training Job")] = None
    launcher: Launcher = Field(description=(
        "How the trainers learn their ids and their peers: seed (the image's own start script: "
        "ranks from the sorted pod IPs, read through the API server), indexed (an Indexed Job "
        "and a headless Service: ranks are completion indexes, peers stable DNS names) or "
        "kubeflow (Kubeflow's PaddleJob, with the same launcher script as indexed)."))


class SpecBase(SpecModel):
    api_version: Literal["paddlegen/v1"] = Field(description="Always paddlegen/v1.")
    kind: Literal["TrainingJob"] = Field(description="Always TrainingJob.")
    metadata: Metadata = Field(description="Name and namespace of the training job.")
    kube_version: Annotated[
        str | None, text(p.KUBE_VERSION, "Kubernetes minor release the objects are for and "
                         "checked against; derived where the profile deploys the cluster.")
    ] = None
    # The defaults as constructed, not validated: importing the models builds no validator.
    scheduling: Scheduling = Field(default=Scheduling.model_construct(), description=(
        "Node selector, tolerations and priority class of every pod."))
    security: Security = Field(default=Security.model_construct(), description=(
        "User and filesystem settings of every container."))


