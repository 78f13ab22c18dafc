"""Derived values, computed once from the validated spec; every emitter reads them from here."""

from __future__ import annotations

from dataclasses import dataclass

from paddlegen.schema import TrainingSpec
from paddlegen.schema.models import KubeAwsSpec, LocalSpec

# The data Job mounts the shared volume here and writes the split data to <DATA_MOUNT>/<job name>.
DATA_MOUNT = "/efs"
VOLUME_NAME = "efs"
# From the seed's EFS mount command: the options AWS recommends for NFSv4.1 on EFS.
EFS_MOUNT_OPTIONS = ("nfsvers=4.1", "rsize=1048576", "wsize=1048576", "hard", "timeo=600",
                     "retrans=2")


@dataclass(frozen=True)
class Port:
    name: str
    number: int


@dataclass(frozen=True)
class Plan:
    spec: TrainingSpec
    name: str
    namespace: str
    labels: dict[str, str]
    trainers: int  # trainer pods: parallelism = completions
    ports: tuple[Port, ...]  # one per pserver port, dense first, then sparse; () when local
    gradient_servers: int
    output_dir: str  # models and logs, as the trainer sees them
    job_dir: str  # the job's directory on the shared volume, as a trainer sees it
    data_out_dir: str | None  # where the data Job writes, as it sees it (kube-aws)
    service_account: str
    pod_reader_role: str
    volume_name: str | None  # the EFS PersistentVolume: cluster-wide, so named per namespace
    data_ready_dir: str | None  # the last data part: trainers start once it exists
    worker_count: int | None
    region: str | None
    s3_bucket: str | None
    trainer_flags: tuple[str, ...]  # `paddle train` flags from the spec (local profile)

    @property
    def split_count(self) -> int:
        """Data parts (SPLIT_COUNT): one per trainer, read by trainer id."""
        return self.trainers


def region_of(zone: str) -> str:
    """us-west-2a -> us-west-2"""
    return zone[:-1]


def bucket_of(s3_uri: str) -> str:
    """s3://bucket/prefix -> bucket"""
    return s3_uri.removeprefix("s3://").split("/")[0]


def derive(spec: TrainingSpec) -> Plan:
    name = spec.metadata.name
    common = {
        "spec": spec,
        "name": name,
        "namespace": spec.metadata.namespace,
        "labels": {"app.kubernetes.io/name": "paddle-training",
                   "app.kubernetes.io/instance": name,
                   "app.kubernetes.io/managed-by": "paddlegen"},
        "service_account": name,
        "pod_reader_role": f"{name}-pod-reader",
    }
    if isinstance(spec, LocalSpec):
        t = spec.training
        flags = {"config": t.config, "save_dir": t.save_dir, "trainer_count": t.trainer_count,
                 "log_period": t.log_period, "num_passes": t.num_passes, "use_gpu": t.use_gpu,
                 "show_parameter_stats_period": t.show_parameter_stats_period,
                 "test_all_data_in_one_period": t.test_all_data_in_one_period}
        return Plan(**common, trainers=1, ports=(), gradient_servers=1, volume_name=None,
                    data_ready_dir=None,
                    output_dir=t.save_dir, job_dir=t.work_dir, data_out_dir=None,
                    worker_count=None, region=None, s3_bucket=None,
                    trainer_flags=tuple(f"--{flag}={gflag(value)}"
                                        for flag, value in flags.items()))
    t, cluster = spec.training, spec.cluster
    job_dir = f"{t.job_path}/{name}"
    return Plan(
        **common,
        trainers=t.nodes,
        ports=tuple(Port(f"jobport{i}", t.port + i)
                    for i in range(t.ports_num + t.ports_num_for_sparse)),
        gradient_servers=t.gradient_servers or t.nodes,
        output_dir=f"{job_dir}/output",
        job_dir=job_dir,
        data_out_dir=f"{DATA_MOUNT}/{name}" if isinstance(spec, KubeAwsSpec) else None,
        volume_name=(f"{spec.metadata.namespace}-{spec.storage.claim_name}"
                     if isinstance(spec, KubeAwsSpec) else None),
        data_ready_dir=f"{job_dir}/{t.nodes - 1}/data",
        worker_count=cluster.worker_count or t.nodes,
        region=cluster.region or region_of(cluster.availability_zone),
        s3_bucket=bucket_of(cluster.s3_uri),
        trainer_flags=(),
    )


def gflag(value: object) -> str:
    """A flag value as gflags spells it: booleans as true/false."""
    return str(value).lower() if isinstance(value, bool) else str(value)
