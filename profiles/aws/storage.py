"""EFS as the job's shared volume: through a PersistentVolume of its NFS server (kube-aws), or
of its CSI driver (eks). Both are bound to exactly one claim, which the pods mount under the
names seed 003's Jobs give it."""

from __future__ import annotations

from dataclasses import dataclass

from paddlegen.compiler.kube_objects import (
    Object,
    persistent_volume,
    persistent_volume_claim,
)
from paddlegen.compiler.plan import ClaimVolume, Meta

# Seed 003's Jobs call the volume efs, and its data Job mounts it at /efs.
SEED_VOLUME = "efs"
SEED_DATA_MOUNT = "/efs"
# From the seed's EFS mount command: the options AWS recommends for NFSv4.1 on EFS.
EFS_MOUNT_OPTIONS = ("nfsvers=4.1", "rsize=1048576", "wsize=1048576", "hard", "timeo=600",
                     "retrans=2")
EFS_CSI_DRIVER = "efs.csi.aws.com"


def seed_claim(claim_name: str) -> ClaimVolume:
    """How the pods mount the claim: under the names seed 003's Jobs give it."""
    return ClaimVolume(claim_name, SEED_VOLUME, SEED_DATA_MOUNT)


@dataclass(frozen=True)
class EfsClaim:
    """A claim bound to exactly one PersistentVolume of EFS, as the pods mount it."""

    volume_name: str  # PersistentVolumes are cluster-wide: named <namespace>-<claim>
    claim_name: str
    capacity: str
    request: str
    words = "EFS"

    @property
    def claim(self) -> ClaimVolume:
        return seed_claim(self.claim_name)

    def claim_object(self, meta: Meta) -> Object:
        return persistent_volume_claim(meta, self.claim_name, self.request, self.volume_name)


@dataclass(frozen=True)
class EfsVolume(EfsClaim):
    """EFS as a PersistentVolume of its NFS server."""

    server: str  # the file system's DNS name

    def objects(self, meta: Meta) -> list[Object]:
        nfs = {"nfs": {"server": self.server, "path": "/"}}
        return [persistent_volume(meta, self.volume_name, self.capacity, self.claim_name, nfs,
                                  mount_options=EFS_MOUNT_OPTIONS),
                self.claim_object(meta)]


@dataclass(frozen=True)
class EfsCsiVolume(EfsClaim):
    """EFS through its CSI driver; no volume until the file system's id is known."""

    file_system_id: str | None

    def objects(self, meta: Meta) -> list[Object]:
        """The file system's root, encrypted in transit, and the claim; only the claim until
        the file system's id is known."""
        claim = self.claim_object(meta)
        if self.file_system_id is None:
            return [claim]
        # encryption in transit by the attribute: the "tls" mount option is deprecated (the
        # driver warns on every mount; aws-efs-csi-driver's encryption_in_transit example)
        csi = {"csi": {"driver": EFS_CSI_DRIVER, "volumeHandle": self.file_system_id,
                       "volumeAttributes": {"encryptInTransit": "true"}}}
        return [persistent_volume(meta, self.volume_name, self.capacity, self.claim_name, csi,
                                  volume_mode="Filesystem"), claim]
