"""Derived values, computed once from the validated spec; every emitter reads them from here."""

from __future__ import annotations

from dataclasses import dataclass

from paddlegen.schema import TrainingSpec
from paddlegen.schema.models import ClusterSettings

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
    ports: tuple[Port, ...]  # one per pserver port, dense first, then sparse
    gradient_servers: int
    split_count: int  # data parts, one per trainer
    data_out_dir: str  # where the data Job writes, seen from its own mount
    job_dir: str  # the same directory, seen from a trainer
    output_dir: str  # trainers' save_dir and logs (output/node_N/{train,server}.log)
    service_account: str
    pod_reader_role: str
    worker_count: int | None
    s3_bucket: str | None
    labels: dict[str, str]

    @property
    def cluster(self) -> ClusterSettings:
        assert self.spec.cluster is not None  # the profile-fields rule guarantees it
        return self.spec.cluster


def derive(spec: TrainingSpec) -> Plan:
    t = spec.training
    name = spec.metadata.name
    first, count = t.port, t.ports_num + t.ports_num_for_sparse
    job_dir = f"{t.job_path}/{name}"
    return Plan(
        spec=spec,
        name=name,
        namespace=spec.metadata.namespace,
        ports=tuple(Port(f"jobport{i}", first + i) for i in range(count)),
        gradient_servers=t.gradient_servers or t.nodes,
        split_count=t.nodes,
        data_out_dir=f"{DATA_MOUNT}/{name}",
        job_dir=job_dir,
        output_dir=f"{job_dir}/output",
        service_account=name,
        pod_reader_role=f"{name}-pod-reader",
        worker_count=(spec.cluster.worker_count or t.nodes) if spec.cluster else None,
        s3_bucket=spec.cluster.s3_uri.removeprefix("s3://").split("/")[0] if spec.cluster else None,
        labels={"app.kubernetes.io/name": "paddle-training",
                "app.kubernetes.io/instance": name,
                "app.kubernetes.io/managed-by": "paddlegen"},
    )
