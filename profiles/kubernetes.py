"""Profile `kubernetes`: the cluster you already have (EKS or any other, run by a platform team).
The tree holds only the training: its objects, a claim on the storage that cluster has, the
kustomization and a runbook of kubectl commands. No cluster tool, no cloud account."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from paddlegen.compiler import collective
from paddlegen.compiler import phases as run_phases
from paddlegen.compiler import runbook as rb
from paddlegen.compiler.collective import CollectiveTraining
from paddlegen.compiler.kube_objects import (
    Object,
    persistent_volume_claim,
)
from paddlegen.compiler.phases import Phase
from paddlegen.compiler.plan import (
    ClaimVolume,
    DataJob,
    Meta,
    PserverTraining,
    meta_of,
)
from paddlegen.compiler.profile import Explanation, Profile
from paddlegen.compiler.rules import (
    Violation,
    gradient_servers,
    job_names,
    kube_version,
    launcher_release,
    port_range,
    release_fields,
    resource_limits,
    rule,
    split_count,
    storage_positive,
    system_namespace,
    training_image_tag,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.compiler.template import render
from paddlegen.profiles import workload
from paddlegen.profiles.workload import (
    OPERATOR_MANIFESTS,
    TRAINING_OPERATOR,
    WorkloadDataset,
    WorkloadSpec,
    WorkloadTraining,
    either,
    v1_only,
)
from paddlegen.schema import patterns as p
from paddlegen.schema.models import SpecBase, SpecModel, text

JOBS = ("training", "dataset")  # the spec sections of the profile's Jobs


class KubernetesStorage(SpecModel, title="Storage claim"):
    """A ReadWriteMany claim on the cluster's storage: one a StorageClass provisions, or one that
    exists already."""

    storage_class_name: Annotated[str | None, text(p.DNS_SUBDOMAIN, (
        "A StorageClass of the cluster that provisions ReadWriteMany volumes (NFS, EFS, "
        "Filestore, CephFS): the tree claims a volume of it."))] = None
    existing_claim: Annotated[str | None, text(p.DNS_SUBDOMAIN, (
        "A ReadWriteMany PersistentVolumeClaim that exists in the namespace: the pods mount it "
        "and the tree makes none."))] = None
    claim_name: Annotated[str, text(p.DNS_SUBDOMAIN, (
        "Name of the claim the tree makes, with storageClassName."))]
    request: Annotated[str, text(p.QUANTITY, "Storage the claim requests, e.g. 50Gi.")]


class KubernetesSpec(WorkloadSpec, SpecBase):
    """Distributed training on a cluster that exists, on storage it has."""

    profile: Literal["kubernetes"] = Field(description="Which way to run.")
    storage: KubernetesStorage = Field(description="The shared volume.")
    dataset: WorkloadDataset = Field(description="The data-preparation Job.")
    training: WorkloadTraining = Field(description="The training run.")


TARGET_READS = ("kubeVersion",)  # what target() reads of the spec
DEFAULT_KUBE_VERSION = "1.37"  # kubernetes.yaml sets it; a spec may choose


def target(spec: KubernetesSpec) -> Target:
    version = spec.kube_version or DEFAULT_KUBE_VERSION
    return Target("the cluster you have", KubeRelease(version, version))


@rule("storage-source", reads=("storage.storageClassName", "storage.existingClaim"))
def storage_source(spec: KubernetesSpec) -> Iterable[Violation]:
    """storage names one source: storageClassName (the tree claims a volume of that class) or
    existingClaim (the pods mount that claim), not both."""
    s = spec.storage
    if s.storage_class_name is None and s.existing_claim is None:
        yield ("storage",), ("name the storage: storageClassName (a class that provisions "
                             "ReadWriteMany volumes) or existingClaim (a claim that exists)")
    elif s.storage_class_name is not None and s.existing_claim is not None:
        yield ("storage", "existingClaim"), (
            "storageClassName is set too; keep one: the tree either claims a volume of the "
            "class or mounts the claim that exists")


def shared_claim(claim_name: str) -> ClaimVolume:
    """How the pods mount the claim: as the PaddlePaddle 3 pods mount the shared volume, the
    data Job too, so a data Job's <job>/data is the same path in every pod."""
    return ClaimVolume(claim_name, collective.SHARED_VOLUME, collective.SHARED_MOUNT)


@dataclass(frozen=True)
class NamedClaim:
    """A claim in the namespace, named by the spec, as the pods mount it."""

    claim_name: str

    @property
    def words(self) -> str:
        return f"the claim `{self.claim_name}`"

    @property
    def claim(self) -> ClaimVolume:
        return shared_claim(self.claim_name)


@dataclass(frozen=True)
class ProvisionedClaim(NamedClaim):
    """A claim the tree makes, which the StorageClass provisions a volume for."""

    storage_class_name: str
    request: str

    def objects(self, meta: Meta) -> list[Object]:
        return [persistent_volume_claim(meta, self.claim_name, self.request,
                                        storage_class_name=self.storage_class_name)]


@dataclass(frozen=True)
class ExistingClaim(NamedClaim):
    """A claim that exists in the namespace: the pods mount it, the tree makes nothing."""

    def objects(self, meta: Meta) -> list[Object]:
        return []


@dataclass(frozen=True)
class KubernetesPlan:
    meta: Meta
    volume: ProvisionedClaim | ExistingClaim
    data: DataJob | None  # paddle runs one only if the spec names its image
    training: PserverTraining | CollectiveTraining

    @property
    def launcher(self) -> str:
        return workload.launcher_of(self.training)


def shared_volume(spec: KubernetesSpec) -> ProvisionedClaim | ExistingClaim:
    s = spec.storage
    if s.existing_claim is not None:
        return ExistingClaim(s.existing_claim)
    assert s.storage_class_name is not None  # rule storage-source
    return ProvisionedClaim(s.claim_name, s.storage_class_name, s.request)


def derive(spec: KubernetesSpec) -> KubernetesPlan:
    tgt = target(spec)
    volume = shared_volume(spec)
    data, training = workload.derive_training(spec, volume, tgt.kube)
    return KubernetesPlan(meta_of(spec, tgt, training.image), volume, data, training)


def objects(plan: KubernetesPlan) -> list[Object]:
    # the namespace is the cluster's, there already: the tree neither makes nor deletes it
    return workload.objects(plan.meta, plan.volume, plan.data, plan.training,
                            own_namespace=False)


def files(plan: KubernetesPlan) -> dict[str, str]:
    return {}


def plural(kind: str) -> str:
    return f"{kind[:-1]}ies" if kind.endswith("y") else f"{kind}s"


def rights(plan: KubernetesPlan) -> str:
    """The kinds of the tree's objects, which the runbook's user creates, in the tree's order."""
    kinds = dict.fromkeys(plural(obj["kind"]) for obj in objects(plan))
    return ", ".join(kinds)


def reads(plan: KubernetesPlan) -> str:
    """What the runbook's waits read beside what the tree makes: the JobSet Trainer makes of a
    TrainJob (its restarts), and with a queue Kueue's Workloads and the LocalQueue."""
    training = plan.training
    if not isinstance(training, CollectiveTraining):
        return ""
    kinds = (["JobSets"] if training.launcher == "trainjob" else []) + (
        ["Kueue's Workloads and LocalQueues"] if training.queue else [])
    return " and ".join(kinds)


def runbook(plan: KubernetesPlan, manifest_paths: list[str]) -> str:
    """What the cluster must have (and, for a cluster the user administers, how to install
    what the launcher and a queue need), the data, the run, its status, log and stop, the
    output, the teardown: profiles/kubernetes.md.j2, filled from the plan."""
    meta, training, data = plan.meta, plan.training, plan.data
    collective_run = isinstance(training, CollectiveTraining)
    return render(__package__, "kubernetes.md.j2", {
        "rb": rb, "ph": run_phases, "phases": phases(plan), "meta": meta,
        "kube": meta.target.kube, "volume": plan.volume, "training": training, "data": data,
        "logs": workload.pod_log_dir(training), "collective": collective_run,
        "rights": rights(plan), "reads": reads(plan),
        "gang": plan.launcher in collective.GANG_LAUNCHERS,
        "controllers": rb.needed_controllers(training),
        "existing": isinstance(plan.volume, ExistingClaim),
        "operator": plan.launcher == "kubeflow", "operator_release": TRAINING_OPERATOR,
        "operator_manifests": OPERATOR_MANIFESTS, "p": rb.preamble(meta.name),
        "shared_mount": collective.SHARED_MOUNT,
        "manifests": rb.tree_manifests(manifest_paths, data),
        "reader_pod": rb.reader_pod(meta, training)})


def phases(plan: KubernetesPlan) -> list[Phase]:
    """The runbook's phases, in order. The cluster is the user's: none starts a bill, but a run
    holds its nodes until it ends."""
    installs = plan.launcher == "kubeflow" or bool(rb.needed_controllers(plan.training))
    return [
        Phase("check", "what the run needs of the cluster: kubectl, storage, GPUs"),
        *([Phase("controllers", "as the cluster's admin: the launcher's controllers, where "
                                "missing")] if installs else []),
        *([Phase("data", "the data Job, afresh if it failed")] if plan.data else []),
        rb.train_phase(plan.training),
        Phase("status", "whether a run is on, and how the last one ended"),
        Phase("logs", "the first trainer's log, followed"),
        Phase("stop", "the run ended; the rest stays"),
        Phase("output", "the run's output copied into $ASSETS"),
        Phase("down", "the output copied, then the tree's objects deleted"),
    ]


def explain(plan: KubernetesPlan) -> Explanation:
    return workload.explanation(plan.meta, "kubernetes", plan.data, plan.training)


PROFILE = Profile(
    name="kubernetes",
    summary="the cluster you already have: PaddlePaddle 3 (or the tutorial's v1) as an Indexed "
            "Job or a PaddleJob, on a claim of the cluster's storage; kubectl only",
    model=KubernetesSpec,
    rules=(workload.framework_fields, v1_only(port_range), v1_only(gradient_servers),
           kube_version(target, target_reads=TARGET_READS),
           either(launcher_release(target, target_reads=TARGET_READS)), workload.kubeflow_names,
           workload.indexed_names, workload.jobset_names,
           workload.trainjob_names, workload.restarts, workload.grace_period,
           workload.legacy_operator,
           either(release_fields(target, JOBS, target_reads=TARGET_READS)),
           either(resource_limits(JOBS)),
           either(job_names), v1_only(split_count), storage_source,
           storage_positive(("request",)),
           either(training_image_tag),
           workload.data_image_tag,
           system_namespace),
    target=target, derive=derive, objects=objects, files=files, runbook=runbook,
    explain=explain, phases=phases)
