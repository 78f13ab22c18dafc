"""Rules across fields: the values of the seeds that must agree with each other.

A rule is a function of the validated spec yielding (path, message) for every violation, the
message ending in how to fix it. It is typed by the parts of a spec it reads (a protocol), and a
profile lists the rules it applies, so no rule asks which profile it is in. Its name is its
stable identifier and its docstring its documentation (`paddlegen rules`). Warnings print but
pass, unless --strict. Rules of one profile only live in that profile's module.

A rule also names the fields it reads (`reads`): on a spec with schema errors, whose invalid
fields are missing, it runs only if none of those fields has an error.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property
from typing import Any, Generic, Protocol, TypeVar

from paddlegen.compiler.plan import pserver_ports
from paddlegen.compiler.problems import FieldPath, Severity, elided, quoted
from paddlegen.compiler.problems import Violation as Violation
from paddlegen.compiler.targets import Target
from paddlegen.schema.models import (
    ClusterTraining,
    DatasetSettings,
    Metadata,
    Scheduling,
)
from paddlegen.schema.patterns import QUANTITY

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)
# What a rule that does not say reads: the whole spec (so it runs on valid specs only).
WHOLE_SPEC = ("",)


@dataclass(frozen=True)
class Rule(Generic[S_contra]):
    name: str
    check: Callable[[S_contra], Iterable[Violation]]
    severity: Severity = "error"
    # The fields `check` reads, dotted as the spec writes them: "training.port", a section
    # ("training") for all of it, "" for the whole spec.
    reads: tuple[str, ...] = WHOLE_SPEC

    @property
    def doc(self) -> str:
        return self.check.__doc__ or ""

    @cached_property
    def read_paths(self) -> tuple[FieldPath, ...]:
        return tuple(tuple(field.split(".")) if field else () for field in self.reads)

    def reads_any(self, paths: Iterable[FieldPath]) -> bool:
        """Whether the rule reads one of `paths`, or a part or a whole of one."""
        return any(path[:len(read)] == read or read[:len(path)] == path
                   for path in paths for read in self.read_paths)


def rule(name: str, severity: Severity = "error", *, reads: Iterable[str] = WHOLE_SPEC
         ) -> Callable[[Callable[[S], Iterable[Violation]]], Rule[S]]:
    """A rule of the function below; `reads` names the fields it reads (see Rule)."""
    def make(check: Callable[[S], Iterable[Violation]]) -> Rule[S]:
        return Rule(name, check, severity, tuple(reads))
    return make


# The parts of a spec the shared rules read.
class WithPserverTraining(Protocol):
    @property
    def training(self) -> ClusterTraining: ...


class WorkerCluster(Protocol):
    @property
    def worker_count(self) -> int | None: ...


class WithWorkers(WithPserverTraining, Protocol):
    @property
    def cluster(self) -> WorkerCluster: ...


class SizedStorage(Protocol):
    @property
    def capacity(self) -> str: ...
    @property
    def request(self) -> str: ...


class WithSizedStorage(Protocol):
    @property
    def storage(self) -> SizedStorage: ...


class WithMetadata(Protocol):
    @property
    def metadata(self) -> Metadata: ...


class WithDataset(WithMetadata, Protocol):
    @property
    def dataset(self) -> DatasetSettings: ...


class WithDataTraining(WithDataset, WithPserverTraining, Protocol):
    pass


class Imaged(Protocol):
    @property
    def image(self) -> str: ...


class WithTrainingImage(Protocol):
    @property
    def training(self) -> Imaged: ...


class WithKubeVersion(Protocol):
    @property
    def kube_version(self) -> str | None: ...
    @property
    def scheduling(self) -> Scheduling: ...


@rule("port-range", reads=("training.port", "training.portsNum", "training.portsNumForSparse"))
def port_range(spec: WithPserverTraining) -> Iterable[Violation]:
    """The pserver ports port ... port+portsNum+portsNumForSparse-1 all fit below 65536."""
    t = spec.training
    ports = pserver_ports(t.port, t.ports_num, t.ports_num_for_sparse)
    if ports[-1].number > 65535:
        yield ("training", "port"), (
            f"ports {t.port}-{ports[-1].number} run past 65535; lower port to at most "
            f"{65536 - len(ports)}")


@rule("gradient-servers", reads=("training.gradientServers", "training.nodes"))
def gradient_servers(spec: WithPserverTraining) -> Iterable[Violation]:
    """gradientServers (--num_gradient_servers) counts trainers, so it is at most nodes."""
    t = spec.training
    if t.gradient_servers is not None and t.gradient_servers > t.nodes:
        yield ("training", "gradientServers"), (
            f"{t.gradient_servers} gradient servers but only {t.nodes} trainer nodes; "
            f"set it to at most {t.nodes} or leave it out")


@rule("worker-capacity", reads=("cluster.workerCount", "training.nodes", "training.launcher"))
def worker_capacity(spec: WithWorkers) -> Iterable[Violation]:
    """The seed launcher's hostPorts allow one trainer pod per node: workerCount must be at
    least training.nodes."""
    workers, nodes = spec.cluster.worker_count, spec.training.nodes
    if spec.training.launcher == "seed" and workers is not None and workers < nodes:
        yield ("cluster", "workerCount"), (
            f"{workers} workers cannot host {nodes} trainer pods (each binds the same hostPorts, "
            f"so one per node; the rest stay Pending); raise workerCount to {nodes}")


KUBE_VERSION_DOC = """kubeVersion is the Kubernetes release the profile deploys (a profile whose
    cluster tool fixes the release derives it from the tool's: leave it out there), and one
    whose schemas are installed, to check the objects against."""


K = TypeVar("K", bound=WithKubeVersion)


def kube_version(target_of: Callable[[K], Target], alternatives: str = "", *,
                 target_reads: Iterable[str] = WHOLE_SPEC) -> Rule[K]:
    """The kube-version rule of a profile whose target is `target_of(spec)`, which reads the
    fields `target_reads`; `alternatives` says how the spec could choose another release."""
    from paddlegen.compiler.kube_schema import supported_versions

    def check(spec: K) -> Iterable[Violation]:
        given = spec.kube_version
        target = target_of(spec)
        if given is not None and given != target.kube.minor:
            yield ("kubeVersion",), (
                f"{target.tool} deploys Kubernetes {target.kube.version}, not {given}; leave "
                f"kubeVersion out or set it to {target.kube.minor!r}{alternatives}")
        elif target.kube.schema not in supported_versions():
            yield ("kubeVersion",), (
                f"no schemas for Kubernetes {target.kube.schema}; use one of "
                f"{', '.join(supported_versions())}")

    check.__doc__ = KUBE_VERSION_DOC
    return Rule("kube-version", check, reads=("kubeVersion", *target_reads))


SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


@rule("system-namespace", severity="warning", reads=("metadata.namespace",))
def system_namespace(spec: WithMetadata) -> Iterable[Violation]:
    """The namespace is not one of Kubernetes' own (kube-system, kube-public, kube-node-lease):
    the job's objects would mix with the cluster's, under its policies."""
    if spec.metadata.namespace in SYSTEM_NAMESPACES:
        yield ("metadata", "namespace"), (
            f"{spec.metadata.namespace} belongs to Kubernetes itself; use a namespace of the "
            "job's own, such as default or paddle")


RELEASE_FIELDS_DOC = """The fields the spec sets are ones the target release serves:
    scheduling.tolerations (Kubernetes 1.6), scheduling.priorityClassName (1.11),
    ttlSecondsAfterFinished (1.21)."""


def release_fields(target_of: Callable[[K], Target], jobs: tuple[str, ...], *,
                   target_reads: Iterable[str] = WHOLE_SPEC) -> Rule[K]:
    """The release-fields rule of a profile whose target is `target_of(spec)`, which reads the
    fields `target_reads`, and whose Jobs are the spec sections `jobs`."""

    def check(spec: K) -> Iterable[Violation]:
        target = target_of(spec)
        kube = target.kube
        scheduling = spec.scheduling
        wanted: list[tuple[FieldPath, bool, bool, str]] = [
            (("scheduling", "tolerations"), bool(scheduling.tolerations),
             kube.tolerations_field, "1.6"),
            (("scheduling", "priorityClassName"), scheduling.priority_class_name is not None,
             kube.priority_class_field, "1.11")]
        wanted += [((job, "ttlSecondsAfterFinished"),
                    getattr(spec, job).ttl_seconds_after_finished is not None,
                    kube.ttl_after_finished_field, "1.21") for job in jobs]
        for path, given, served, since in wanted:
            if given and not served:
                yield path, (f"{target.tool} runs Kubernetes {kube.version}, which has no "
                             f"{path[-1]} (Kubernetes {since} has); leave it out")

    check.__doc__ = RELEASE_FIELDS_DOC
    reads = ("scheduling.tolerations", "scheduling.priorityClassName",
             *(f"{job}.ttlSecondsAfterFinished" for job in jobs), *target_reads)
    return Rule("release-fields", check, reads=reads)


LAUNCHER_DOC = """training.launcher is one the target release can run: indexed needs Indexed
    Jobs (Kubernetes 1.24), kubeflow a cluster that runs Kubeflow's training operator v1.9,
    jobset JobSet v0.12.0 and trainjob Kubeflow Trainer v2.3.0 (each a current one); the
    2016-2017 tutorial stacks' clusters predate them all."""
LAUNCHER_NEEDS = {"indexed": "Indexed Jobs (Kubernetes 1.24 has)",
                  "kubeflow": "Kubeflow's training operator v1.9 (a current Kubernetes runs it)",
                  "jobset": "JobSet v0.12.0 (a current Kubernetes runs it)",
                  "trainjob": "Kubeflow Trainer v2.3.0 (a current Kubernetes runs it)"}


class WithLauncher(WithKubeVersion, WithPserverTraining, Protocol):
    pass


L = TypeVar("L", bound=WithLauncher)


def launcher_release(target_of: Callable[[L], Target], *,
                     target_reads: Iterable[str] = WHOLE_SPEC) -> Rule[L]:
    """The launcher rule of a profile whose target is `target_of(spec)`, which reads the fields
    `target_reads`."""

    def check(spec: L) -> Iterable[Violation]:
        launcher = spec.training.launcher
        target = target_of(spec)
        if launcher != "seed" and not target.kube.indexed_job:
            # the seed launcher runs the tutorial image's own script: PaddlePaddle v1 only
            v1 = getattr(spec.training, "framework", "paddle-v1") == "paddle-v1"
            yield ("training", "launcher"), (
                f"{target.tool} runs Kubernetes {target.kube.version}, too old for "
                f"{LAUNCHER_NEEDS[launcher]}, which the {launcher} launcher needs; "
                f"{'use seed' if v1 else 'target a current Kubernetes release'}")

    check.__doc__ = LAUNCHER_DOC
    return Rule("launcher", check, reads=("training.launcher", *target_reads))


RESOURCES_DOC = """Each container's resource requests are at most its limits (a pod asking for more
    than it may use is refused)."""


def resource_limits(jobs: tuple[str, ...]) -> Rule[Any]:
    """The resources rule for the spec sections `jobs`."""

    def check(spec: Any) -> Iterable[Violation]:
        for job in jobs:
            resources = getattr(spec, job).resources
            if resources is None:  # unset: the profile sizes the pods, requests = limits
                continue
            for kind in ("cpu", "memory"):
                request = getattr(resources.requests, kind)
                limit = getattr(resources.limits, kind)
                if request is not None and limit is not None and \
                        quantity(request) > quantity(limit):
                    yield (job, "resources", "requests", kind), (
                        f"{request} is more than the limit {limit}; raise the limit or lower "
                        "the request")

    check.__doc__ = RESOURCES_DOC
    return Rule("resources", check, reads=tuple(f"{job}.resources" for job in jobs))


@rule("job-names", reads=("dataset.jobName", "metadata.name"))
def job_names(spec: WithDataset) -> Iterable[Violation]:
    """The data Job and the training Job have different names (one namespace holds both)."""
    if spec.dataset.job_name == spec.metadata.name:
        yield ("metadata", "name"), (
            f"{quoted(spec.metadata.name)} is also the data Job's name (dataset.jobName); "
            "rename the training job, or set dataset.jobName to another name")


TUTORIAL_DATA_IMAGE = "paddlepaddle/paddle-tutorial:k8s_data"


@rule("split-count", reads=("dataset.image", "training.nodes"))
def split_count(spec: WithDataTraining) -> Iterable[Violation]:
    """With PaddlePaddle's tutorial data image, training.nodes is at least 2: its get_data.sh
    computes the last part with `expr $SPLIT_COUNT - 1`, which exits 1 for 0, so under `set -e`
    a single part fails the data Job although the data is complete."""
    if spec.dataset.image == TUTORIAL_DATA_IMAGE and spec.training.nodes < 2:
        yield ("training", "nodes"), (
            f"{TUTORIAL_DATA_IMAGE} fails to split the data into 1 part (its get_data.sh exits 1 "
            "on `expr 1 - 1`); use at least 2 nodes, or a data image of your own")


@rule("storage-request", reads=("storage.request", "storage.capacity"))
def storage_request(spec: WithSizedStorage) -> Iterable[Violation]:
    """storage.request fits in storage.capacity, or the claim never binds to the volume."""
    storage = spec.storage
    if quantity(storage.request) > quantity(storage.capacity):
        yield ("storage", "request"), (
            f"{storage.request} is more than the volume's capacity {storage.capacity}; "
            "the claim would never bind")


STORAGE_POSITIVE_DOC = """storage.request, and storage.capacity where the profile makes the
    volume, are more than zero: the API server refuses a claim or a volume of no size
    (Kubernetes' ValidatePersistentVolumeClaimSpec and ValidatePersistentVolumeSpec: "must be
    greater than zero")."""
STORAGE_SIZE_WORDS = {
    "capacity": "the API server refuses a volume of no capacity (must be greater than zero); "
                "give the file system's size, such as 100Gi",
    "request": "the API server refuses a claim that requests no storage (must be greater than "
               "zero); request what the job needs, such as 50Gi",
}


def storage_positive(sizes: tuple[str, ...]) -> Rule[Any]:
    """The storage-positive rule of a profile whose storage has the quantities `sizes`
    (request; capacity where it makes the volume)."""

    def check(spec: Any) -> Iterable[Violation]:
        for size in sizes:
            value = getattr(spec.storage, size)
            if quantity(value) <= 0:
                yield ("storage", size), f"{value} is zero: {STORAGE_SIZE_WORDS[size]}"

    check.__doc__ = STORAGE_POSITIVE_DOC
    return Rule("storage-positive", check, reads=tuple(f"storage.{size}" for size in sizes))


class HostStorage(Protocol):
    @property
    def host_path(self) -> str: ...


class WithHostStorage(Protocol):
    @property
    def storage(self) -> HostStorage: ...


# The node's directories that a pod running as root takes over through a hostPath, and what each
# holds. Those in NODE_SUBTREES are the node's at any depth too (/etc/kubernetes, /root/.ssh).
NODE_DIRECTORIES = {
    "/": "the node's whole file system",
    "/etc": "the node's configuration (its users and sudoers, the kubelet's settings)",
    "/proc": "the node's processes and kernel settings",
    "/sys": "the node's kernel and devices",
    "/dev": "the node's devices, its disks among them",
    "/run": "the node's runtime sockets (the container runtime's: every container of the node)",
    "/var/run": "the node's runtime sockets (the container runtime's: every container of the "
                "node)",
    "/var/lib/kubelet": "the kubelet's state (every pod's volumes and secrets)",
    "/root": "root's home (its SSH keys and shell start-up files)",
    "/root/.ssh": "root's SSH keys (authorized_keys: a login to the node)",
    "/home": "every user's home (their SSH keys and shell start-up files)",
}
NODE_SUBTREES = ("/etc", "/proc", "/sys", "/dev", "/run", "/var/run", "/var/lib/kubelet",
                 "/root")


def node_path(path: str) -> str:
    """`path` as the node reads it, lexically: //etc, /etc/, /./etc and /etc/../etc are /etc."""
    return "/" + posixpath.normpath("/" + path).lstrip("/")


def node_exposure(path: str) -> str | None:
    """What of the node a hostPath of `path` hands its pods, or None for a directory of its own."""
    path = node_path(path)
    if path in NODE_DIRECTORIES:
        return NODE_DIRECTORIES[path]
    inside = next((d for d in NODE_SUBTREES if path.startswith(f"{d}/")), None)
    if inside is not None:
        return f"inside {inside}, {NODE_DIRECTORIES[inside]}"
    holds = next((d for d in NODE_DIRECTORIES if d.startswith(f"{path}/")), None)
    if holds is not None:
        return f"the parent of {holds}, {NODE_DIRECTORIES[holds]}"
    return None


@rule("host-path", severity="warning", reads=("storage.hostPath",))
def host_path(spec: WithHostStorage) -> Iterable[Violation]:
    """storage.hostPath is not one of the node's system directories: /, /etc, /proc, /sys,
    /dev, /run, /var/run, /var/lib/kubelet, /root, /home, anything under the first eight, or a
    parent of one (/var). The pods run as root (the tutorial images need it), so the node's
    directory is theirs to read and rewrite."""
    exposed = node_exposure(spec.storage.host_path)
    if exposed is not None:
        yield ("storage", "hostPath"), (
            f"{elided(spec.storage.host_path)} is {exposed}: mounted into pods that run as "
            "root, it is theirs to read and rewrite; use a directory of the job's own, such as "
            "/home/work/paddle_output")


IMAGE_TAG_DOC = """Images name a tag other than latest (or a digest): otherwise each node may run
    whatever the tag points to when it pulls."""


def _untagged(path: FieldPath, image: str) -> Iterable[Violation]:
    if "@" in image:
        return
    last = image.rsplit("/", 1)[-1]
    name, _, tag = image.rpartition(":") if ":" in last else (image, "", "")
    if not tag or tag == "latest":
        yield path, (f"{elided(image)} {'has no tag' if not tag else 'uses :latest'}; "
                     f"pin a version tag or a digest ({elided(name or image)}:<version>)")


@rule("image-tag", severity="warning", reads=("training.image",))
def training_image_tag(spec: WithTrainingImage) -> Iterable[Violation]:
    return _untagged(("training", "image"), spec.training.image)


@rule("image-tag", severity="warning", reads=("dataset.image",))
def dataset_image_tag(spec: WithDataset) -> Iterable[Violation]:
    return _untagged(("dataset", "image"), spec.dataset.image)


training_image_tag.check.__doc__ = dataset_image_tag.check.__doc__ = IMAGE_TAG_DOC

_SUFFIX: dict[str, int | Decimal] = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(text: str) -> Decimal:
    """The value of a Kubernetes quantity ("50Gi" -> 53687091200)."""
    if not re.match(QUANTITY.regex, text):
        raise ValueError(f"not a quantity: {quoted(text)}")
    number, suffix = re.match(r"\+?([0-9.]+)(.*)", text).groups()  # type: ignore[union-attr]
    try:
        if suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():
            return Decimal(number + suffix)
        return Decimal(number) * Decimal(_SUFFIX[suffix])
    except (KeyError, InvalidOperation):
        raise ValueError(f"not a quantity: {quoted(text)}") from None
