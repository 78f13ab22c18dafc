"""Kueue's queue objects (Kueue v0.19.2, kueue.x-k8s.io/v1beta2, its storage version; v1beta1 is
served but deprecated): a ResourceFlavor for a set of nodes, a ClusterQueue holding one flavor's
quota, and the LocalQueue a job names by its label kueue.x-k8s.io/queue-name. Plain data from a
`Queues` the profile's plan carries; nothing of a cloud."""

from __future__ import annotations

from dataclasses import dataclass

from paddlegen.compiler.kube_objects import Object, metadata
from paddlegen.compiler.plan import Meta

KUEUE_API = "kueue.x-k8s.io/v1beta2"
COMPONENT = "queue"


@dataclass(frozen=True)
class Quota:
    """One resource's nominal quota, in its unit: CPU in millicores ("m"), memory in MiB
    ("Mi"), devices as a count ("")."""

    resource: str  # as pods request it: cpu, memory, nvidia.com/gpu, ...
    amount: int
    unit: str

    @property
    def quantity(self) -> str:
        return f"{self.amount}{self.unit}"


@dataclass(frozen=True)
class Queues:
    """A job's queues: the flavor of the nodes it runs on, the ClusterQueue that holds their
    quota, and the job's LocalQueue in its namespace."""

    flavor: str  # the ResourceFlavor's name
    node_labels: tuple[tuple[str, str], ...]  # the flavor's nodes
    cluster_queue: str
    local_queue: str
    quota: tuple[Quota, ...]  # the ClusterQueue's, in the order of its coveredResources


def resource_flavor(meta: Meta, queues: Queues) -> Object:
    """The flavor of the nodes: Kueue adds its nodeLabels to the nodeSelector of every pod it
    admits with this flavor (pkg/podset/podset.go), so the pods land where the quota is."""
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
            "metadata": metadata(meta, queues.flavor, namespaced=False, component=COMPONENT),
            "spec": {"nodeLabels": dict(queues.node_labels)}}


def cluster_queue(meta: Meta, queues: Queues) -> Object:
    """One resource group of one flavor. Every resource a pod requests must be covered: Kueue
    leaves a workload that requests another one unadmitted ("resource ... unavailable in
    ClusterQueue", pkg/scheduler/flavorassigner/flavorassigner.go). `namespaceSelector: {}`
    admits workloads of every namespace (absent, none)."""
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue",
            "metadata": metadata(meta, queues.cluster_queue, namespaced=False,
                                 component=COMPONENT),
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": [quota.resource for quota in queues.quota],
                "flavors": [{"name": queues.flavor, "resources": [
                    {"name": quota.resource, "nominalQuota": quota.quantity}
                    for quota in queues.quota]}]}]}}


def local_queue(meta: Meta, queues: Queues) -> Object:
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue",
            "metadata": metadata(meta, queues.local_queue, component=COMPONENT),
            "spec": {"clusterQueue": queues.cluster_queue}}


def objects(meta: Meta, queues: Queues) -> list[Object]:
    """In apply order: the flavor the ClusterQueue names, the ClusterQueue the LocalQueue
    names, the LocalQueue."""
    return [resource_flavor(meta, queues), cluster_queue(meta, queues),
            local_queue(meta, queues)]
