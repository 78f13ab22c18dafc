"""The parts of a profile's plan that several profiles share, and the derivations behind them.

A plan is pure data, derived once from the validated spec; emitters read only the plan. Each
profile's plan (in paddlegen.profiles) is made of these parts and its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.schema.models import ClusterTraining

# The data Job mounts the shared volume here and writes the split data to <DATA_MOUNT>/<job name>.
DATA_MOUNT = "/efs"
VOLUME_NAME = "efs"
# From the seed's EFS mount command: the options AWS recommends for NFSv4.1 on EFS.
EFS_MOUNT_OPTIONS = ("nfsvers=4.1", "rsize=1048576", "wsize=1048576", "hard", "timeo=600",
                     "retrans=2")
LABEL_NAME = "paddle-training"


@dataclass(frozen=True)
class Meta:
    """Who the objects belong to: the job's name, its namespace and the common labels."""

    name: str
    namespace: str
    target: Target

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": LABEL_NAME, "app.kubernetes.io/instance": self.name,
                "app.kubernetes.io/managed-by": "paddlegen"}


@dataclass(frozen=True)
class Port:
    name: str
    number: int
    sparse: bool  # a port for sparse updates (--ports_num_for_sparse), else dense


def pserver_ports(first: int, dense: int, sparse: int) -> tuple[Port, ...]:
    """The ports every pserver listens on: `first` on, the dense ones, then the sparse ones."""
    return tuple(Port(f"jobport{i}", first + i, sparse=i >= dense) for i in range(dense + sparse))


@dataclass(frozen=True)
class ClaimVolume:
    """The shared volume through a PersistentVolumeClaim."""

    claim_name: str


@dataclass(frozen=True)
class HostVolume:
    """The shared volume as a directory every node has mounted (EFS on each host)."""

    path: str
    create: bool = False  # DirectoryOrCreate rather than Directory


SharedVolume = ClaimVolume | HostVolume


@dataclass(frozen=True)
class EfsVolume:
    """EFS as a PersistentVolume bound to exactly one claim."""

    volume_name: str  # PersistentVolumes are cluster-wide: named <namespace>-<claim>
    claim_name: str
    server: str  # the file system's DNS name
    capacity: str
    request: str


@dataclass(frozen=True)
class DataJob:
    """The data-preparation Job: downloads the data and splits it into one part per trainer."""

    name: str
    image: str
    out_dir: str  # where it writes, as it sees the volume (OUT_DIR)
    split_count: int  # SPLIT_COUNT
    deadline_seconds: int


@dataclass(frozen=True)
class PodReader:
    """A service account allowed to read pods, and the Role (and binding) that allow it."""

    account: str
    role: str


@dataclass(frozen=True)
class PserverTraining:
    """The seed's parameter-server training Job: one pserver and one trainer in every pod."""

    name: str  # the Job's, also its directory on the shared volume (JOB_NAME)
    image: str
    trainers: int  # parallelism = completions
    ports: tuple[Port, ...]
    gradient_servers: int
    trainer_count: int
    nic: str
    config_dir: str
    job_path: str  # where the shared volume is mounted in the trainer (JOB_PATH)
    volume: SharedVolume
    data_ready: str  # a shell test that holds once the last data part is complete
    data_ready_meaning: str  # the same, in words
    pod_reader: PodReader | None  # the seed launcher's account, where the target has RBAC
    deadline_seconds: int

    @property
    def job_dir(self) -> str:
        """The job's directory on the shared volume, as a trainer sees it."""
        return f"{self.job_path}/{self.name}"

    @property
    def output_dir(self) -> str:
        return f"{self.job_dir}/output"

    @property
    def dense_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if not p.sparse)

    @property
    def sparse_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.sparse)


def region_of(zone: str) -> str:
    """us-west-2a -> us-west-2"""
    return zone[:-1]


def bucket_of(s3_uri: str) -> str:
    """s3://bucket/prefix -> bucket"""
    return s3_uri.removeprefix("s3://").split("/")[0]


def gflag(value: object) -> str:
    """A flag value as gflags spells it: booleans as true/false."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def pserver_training(name: str, training: ClusterTraining, volume: SharedVolume,
                     data_ready: tuple[str, str], kube: KubeRelease) -> PserverTraining:
    """The training Job's plan; `data_ready` is the shell test the trainers wait on and what it
    means, in words."""
    return PserverTraining(
        name=name,
        image=training.image,
        trainers=training.nodes,
        ports=pserver_ports(training.port, training.ports_num, training.ports_num_for_sparse),
        gradient_servers=training.gradient_servers or training.nodes,
        trainer_count=training.trainer_count,
        nic=training.nic,
        config_dir=training.config_dir,
        job_path=training.job_path,
        volume=volume,
        data_ready=data_ready[0],
        data_ready_meaning=data_ready[1],
        # Without RBAC (1.4, 1.5) the API server allows every request: the default account
        # reads the pods.
        pod_reader=PodReader(name, f"{name}-pod-reader") if kube.rbac_v1 else None,
        deadline_seconds=training.active_deadline_seconds,
    )
