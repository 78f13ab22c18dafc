"""The parts of a profile's plan that several profiles share, and the derivations behind them.

A plan is pure data, derived once from the validated spec; emitters read only the plan. Each
profile's plan (in paddlegen.profiles) is made of these parts and its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.schema.models import (
    ClusterTraining,
    DatasetSettings,
    Launcher,
    Resources,
    Scheduling,
    Security,
    SpecBase,
)

LABEL_NAME = "paddle-training"


@dataclass(frozen=True)
class PodPolicy:
    """What every pod of the job shares: where it runs and how its containers run."""

    priority_class_name: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[tuple[tuple[str, Any], ...], ...] = ()  # each in Kubernetes' form
    run_as_non_root: bool = False
    run_as_user: int | None = None
    read_only_root_filesystem: bool = False


def pod_policy(scheduling: Scheduling, security: Security) -> PodPolicy:
    return PodPolicy(
        priority_class_name=scheduling.priority_class_name,
        node_selector=tuple(sorted(scheduling.node_selector.items())),
        tolerations=tuple(tuple(t.model_dump(by_alias=True, exclude_none=True).items())
                          for t in scheduling.tolerations),
        run_as_non_root=security.run_as_non_root, run_as_user=security.run_as_user,
        read_only_root_filesystem=security.read_only_root_filesystem)


@dataclass(frozen=True)
class Meta:
    """Who the objects belong to (the job's name, namespace and labels), what they target and
    what all their pods share."""

    name: str
    namespace: str
    target: Target
    version: str  # app.kubernetes.io/version: the training image's tag or digest
    pods: PodPolicy = PodPolicy()

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": LABEL_NAME, "app.kubernetes.io/instance": self.name,
                "app.kubernetes.io/version": self.version,
                "app.kubernetes.io/part-of": self.name,
                "app.kubernetes.io/managed-by": "paddlegen"}


def meta_of(spec: SpecBase, target: Target, image: str) -> Meta:
    return Meta(spec.metadata.name, spec.metadata.namespace, target, image_version(image),
                pod_policy(spec.scheduling, spec.security))


def image_version(image: str) -> str:
    """An image's tag, or the start of its digest, as a label value ("latest" for neither)."""
    if "@sha256:" in image:
        return image.rsplit(":", 1)[1][:12]
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    return tag[:63].strip("-_.") or "latest"


def resources_of(resources: Resources) -> dict[str, dict[str, str]]:
    """A container's resources as Kubernetes writes them, without what is unset."""
    found = {}
    for kind in ("requests", "limits"):
        values = getattr(resources, kind).model_dump(exclude_none=True)
        if values:
            found[kind] = values
    return found


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
    """The shared volume through a PersistentVolumeClaim: the pods' name for it, and where the
    data Job mounts it (it writes the parts under <data_mount>/<job name>)."""

    claim_name: str
    name: str
    data_mount: str


@dataclass(frozen=True)
class HostVolume:
    """The shared volume as a directory every node has mounted."""

    path: str
    name: str  # the pods' name for it
    create: bool = False  # DirectoryOrCreate rather than Directory


PodVolume = ClaimVolume | HostVolume


class SharedVolume(Protocol):
    """Storage that every pod of the job mounts, as a profile provides it: the objects that make
    it (a PersistentVolume, if any, and the claim), how the pods mount it, and the words a
    runbook uses for it."""

    @property
    def claim(self) -> ClaimVolume: ...

    @property
    def words(self) -> str: ...  # what the data is "on", in a runbook's prose

    def objects(self, meta: Meta) -> list[dict[str, Any]]: ...  # in apply order


@dataclass(frozen=True)
class DataJob:
    """The data-preparation Job: downloads the data and splits it into one part per trainer."""

    name: str
    image: str
    out_dir: str  # where it writes, as it sees the volume (OUT_DIR)
    split_count: int  # SPLIT_COUNT
    deadline_seconds: int
    resources: dict[str, dict[str, str]] = field(default_factory=dict)
    ttl_seconds: int | None = None


@dataclass(frozen=True)
class DataGate:
    """What the trainers wait for: a shell test over its arguments ($1, $2, ...; short lines
    in any YAML), and what it means in words."""

    test: str
    args: tuple[str, ...]
    meaning: str


def data_ready(job_dir: str, parts: int) -> DataGate:
    """The shell test that holds once the data image's get_data.sh has finished the last part,
    and its meaning.

    get_data.sh (PaddlePaddle's k8s_data image) unpacks the data into 0/data, splits train.txt
    into train.00000 ... train.<N-1>, renames train.00000 to train.txt, then for each part i
    copies 0/data/* into i/data and renames i/data/train.<i> to train.txt. That copy brings
    part 0's train.txt along first, so train.txt alone proves nothing: the last part is done
    when its train.txt exists and its train.<N-1> is gone. With one part the rename in 0/data is
    the last step; the archive is gone once the unpacking is over.
    """
    last = f"{job_dir}/{parts - 1}/data"
    shard = f"train.{parts - 1:05d}"
    test = '[ -f "$1/train.txt" ] && [ ! -e "$1/$2" ]'
    if parts == 1:
        test += ' && [ ! -e "$1/preprocessed_data.tar.gz" ]'
    return DataGate(test, (last, shard), f"{last}/train.txt, with {last}/{shard} renamed to it")


@dataclass(frozen=True)
class PodReader:
    """A service account allowed to read pods, and the Role (and binding) that allow it."""

    account: str
    role: str


@dataclass(frozen=True)
class Launch:
    """How the trainers learn their ids and their peers (training.launcher)."""

    launcher: Launcher
    peers: tuple[str, ...] = ()  # each trainer's stable DNS name, by trainer id (not for seed)
    service: str | None = None  # indexed: the headless Service that is the pods' subdomain
    index_field: str = ""  # the pod field that holds its trainer id (downward API)

    @property
    def scripted(self) -> bool:
        """The launcher script runs the trainer (indexed, kubeflow), not the image's entry
        point (seed)."""
        return self.launcher != "seed"

    @property
    def operator(self) -> bool:
        """Kubeflow's training operator runs the pods (a PaddleJob), not the Job controller."""
        return self.launcher == "kubeflow"

    @property
    def pservers(self) -> str:
        """Every trainer's --pservers: the same list in the same order (Paddle assigns the
        parameter blocks to the servers by their position in it)."""
        return ",".join(self.peers)


# How long the launcher script waits for its peers' pservers to answer.
PEER_WAIT_SECONDS = 600
# The launcher script's variable that holds the pod's index: its trainer id.
TRAINER_ID_VARIABLE = "TRAINER_ID"
# Where each launcher's pod finds its index: the Job controller's annotation (1.24), and the
# training operator's replica-index label.
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
REPLICA_INDEX = "metadata.labels['training.kubeflow.org/replica-index']"


def launch_of(name: str, launcher: Launcher, trainers: int) -> Launch:
    """Indexed Job pods are <job>-<i>, in the subdomain of a headless Service named as the Job;
    the training operator names each worker <job>-worker-<i>, with a headless Service each."""
    if launcher == "indexed":
        return Launch("indexed", tuple(f"{name}-{i}.{name}" for i in range(trainers)), name,
                      COMPLETION_INDEX)
    if launcher == "kubeflow":
        return Launch("kubeflow", tuple(f"{name}-worker-{i}" for i in range(trainers)),
                      index_field=REPLICA_INDEX)
    return Launch("seed")


@dataclass(frozen=True)
class PserverTraining:
    """The parameter-server training: one pserver and one trainer in every pod."""

    name: str  # the Job's, also its directory on the shared volume (JOB_NAME)
    image: str
    trainers: int  # parallelism = completions
    ports: tuple[Port, ...]
    gradient_servers: int
    trainer_count: int
    nic: str
    config_dir: str
    job_path: str  # where the shared volume is mounted in the trainer (JOB_PATH)
    volume: PodVolume
    data_ready: DataGate  # holds once the last data part is complete
    pod_reader: PodReader | None  # the seed launcher's account, where the target has RBAC
    launch: Launch
    deadline_seconds: int
    resources: dict[str, dict[str, str]] = field(default_factory=dict)
    ttl_seconds: int | None = None

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


def gflag(value: object) -> str:
    """A flag value as gflags spells it: booleans as true/false."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def pserver_training(name: str, training: ClusterTraining, volume: PodVolume,
                     data_ready: DataGate, kube: KubeRelease) -> PserverTraining:
    """The training Job's plan; the trainers wait for `data_ready`."""
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
        data_ready=data_ready,
        # Without RBAC (1.4, 1.5) the API server allows every request: the default account
        # reads the pods. The other launchers never call the API.
        pod_reader=(PodReader(name, f"{name}-pod-reader")
                    if kube.rbac_v1 and training.launcher == "seed" else None),
        launch=launch_of(name, training.launcher, training.nodes),
        deadline_seconds=training.active_deadline_seconds,
        resources=resources_of(training.resources),
        ttl_seconds=training.ttl_seconds_after_finished,
    )


def claim_jobs(name: str, claim: ClaimVolume, dataset: DatasetSettings,
               training: ClusterTraining, kube: KubeRelease) -> tuple[DataJob, PserverTraining]:
    """The data Job and the training of a profile whose data Job writes the parts onto the
    claim the trainers mount: each sees the parts at its own mount of the job's directory."""
    data = DataJob(dataset.job_name, dataset.image, f"{claim.data_mount}/{name}", training.nodes,
                   dataset.active_deadline_seconds, resources_of(dataset.resources),
                   dataset.ttl_seconds_after_finished)
    return data, pserver_training(name, training, claim,
                                  data_ready(f"{training.job_path}/{name}", training.nodes), kube)
