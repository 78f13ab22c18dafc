"""What a node of an EC2 instance type holds for trainer pods on an EKS cluster made by eksctl: the
EKS AMI kubelet's allocatable, less an allowance for the pods the cluster itself runs there, shared
by the trainer pods on the node; and which types PaddlePaddle's images cannot run on. Pure
arithmetic on the vendored instance table (profiles/aws/instance-types.json)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from paddlegen.compiler.collective import GPU_RESOURCE
from paddlegen.compiler.kueue import Quota

MIB = 2**20
MILLI = Decimal("0.001")


@dataclass(frozen=True)
class ClusterPod:
    """Pods the cluster runs for itself, and what each requests of its node."""

    name: str
    cpu_millicores: int
    memory_mib: int
    # A DaemonSet has one pod on every node it selects; a Deployment's replicas land where the
    # scheduler puts them, before the trainers exist, so every node keeps room for all of them.
    replicas: int = 1
    on: Literal["every", "gpu", "efa"] = "every"  # the nodes it runs on


# The cluster's own pods on a node of the one node group (aws/eksctl-cluster.yaml: eksctl
# v0.230.0, its default add-ons vpc-cni, kube-proxy, coredns and metrics-server, and the
# eks-pod-identity-agent and aws-efs-csi-driver add-ons), by their requests:
CLUSTER_PODS = (
    # amazon-vpc-cni-k8s chart v1.23.1 values.yaml: resources.requests.cpu 25m, which the
    # aws-node container and, by default, the network policy agent (aws-eks-nodeagent) each get
    # (eksctl v0.230.0 pkg/addons/default/assets/aws-node.yaml renders v1.23.0 the same way; its
    # init container's 25m runs before them)
    ClusterPod("aws-node", 50, 0),
    # EKS's own kube-proxy DaemonSet as eksctl v0.230.0 keeps a copy of it
    # (pkg/addons/default/testdata/sample-1.23.json): requests.cpu 100m
    ClusterPod("kube-proxy", 100, 0),
    # aws/eks-pod-identity-agent chart 1.2.0: resources {}
    ClusterPod("eks-pod-identity-agent", 0, 0),
    # kubernetes-sigs/aws-efs-csi-driver chart 4.4.1: node.resources {} and its sidecars' {}
    ClusterPod("efs-csi-node", 0, 0),
    # eksctl v0.230.0 pkg/addons/assets/nvidia-device-plugin.yaml (it installs it on NVIDIA
    # types): no resources
    ClusterPod("nvidia-device-plugin", 0, 0, on="gpu"),
    # eksctl v0.230.0 pkg/addons/assets/efa-device-plugin.yaml (with efaEnabled): 10m, 20Mi
    ClusterPod("aws-efa-k8s-device-plugin", 10, 20, on="efa"),
    # eksctl v0.230.0 pkg/addons/default/assets/coredns-1.35.json: 2 replicas of 100m, 70Mi
    ClusterPod("coredns", 100, 70, replicas=2),
    # kubernetes-sigs/metrics-server chart 3.13.1 values.yaml: 100m, 200Mi; EKS's community
    # add-on runs 2 replicas
    ClusterPod("metrics-server", 100, 200, replicas=2),
    # aws-efs-csi-driver chart 4.4.1: controller.replicaCount 2, controller.resources {} (they
    # take two of the pods the kubelet admits, nothing else)
    ClusterPod("efs-csi-controller", 0, 0, replicas=2),
)
# Memory those pods use beyond their requests: most request none, yet each of their processes
# holds tens of MiB, and memory cannot be throttled: a trainer sized to the last byte would be
# the one the kernel kills. A stated margin, not a measurement.
UNREQUESTED_MEMORY_MIB = 512


def cluster_pods(gpu: bool, efa: bool) -> tuple[ClusterPod, ...]:
    """The cluster's own pods on a node with GPUs or not, with EFA or not."""
    runs = {"every": True, "gpu": gpu, "efa": efa}
    return tuple(pod for pod in CLUSTER_PODS if runs[pod.on])


def allowance(gpu: bool, efa: bool) -> tuple[int, int]:
    """What a node keeps for the cluster's own pods: millicores and MiB."""
    pods = cluster_pods(gpu, efa)
    return (sum(pod.cpu_millicores * pod.replicas for pod in pods),
            sum(pod.memory_mib * pod.replicas for pod in pods) + UNREQUESTED_MEMORY_MIB)


def allocatable(facts: dict[str, Any]) -> tuple[Decimal, int]:
    """What a node of the type gives pods (CPU cores, memory MiB), as the EKS-optimised AMI's
    kubelet reserves (amazon-eks-ami's bootstrap: 6% of the first core, 1% of the second, 0.5%
    of the next two, 0.25% of the rest; 11 MiB per pod the type can run and 255 MiB, and the
    100 MiB eviction threshold)."""
    cores = facts["vcpu"]
    reserved_cpu = (Decimal("0.06") + Decimal("0.01") * min(max(cores - 1, 0), 1)
                    + Decimal("0.005") * min(max(cores - 2, 0), 2)
                    + Decimal("0.0025") * max(cores - 4, 0))
    reserved_mib = 11 * facts["maxPods"] + 255 + 100
    return cores - reserved_cpu, facts["memoryMiB"] - reserved_mib


@dataclass(frozen=True)
class Node:
    """One node of an instance type paddlegen knows, as the trainer pods see it."""

    kind: str
    gpus: int
    efa_adapters: int  # the adapters the pods get: the type's with cluster.efa, else none
    allocatable_millicores: int  # what the kubelet gives pods
    allocatable_mib: int
    millicores: int  # what is left for trainer pods, after the cluster's own
    mib: int
    pod_slots: int  # the pods the kubelet admits (maxPods), less the cluster's own

    def pods_by_gpus(self, gpus_per_node: int) -> int:
        """How many trainer pods of `gpus_per_node` GPUs share the node: one on CPU."""
        return self.gpus // gpus_per_node if gpus_per_node else 1

    def efa_per_pod(self, gpus_per_node: int) -> int:
        """Each pod's share of the adapters (0: fewer adapters than pods, or no pod fits)."""
        pods = self.pods_by_gpus(gpus_per_node)
        return self.efa_adapters // pods if pods else 0


def node(kind: str, facts: dict[str, Any], efa: bool) -> Node:
    adapters = facts["efaInterfaces"] if efa else 0
    cpu, mib = allocatable(facts)
    gpu = facts["gpus"] > 0
    kept_millicores, kept_mib = allowance(gpu, adapters > 0)
    kept_pods = sum(pod.replicas for pod in cluster_pods(gpu, adapters > 0))
    millicores = int(cpu / MILLI)  # the kubelet counts whole millicores
    return Node(kind, facts["gpus"], adapters, millicores, mib,
                max(millicores - kept_millicores, 0), max(mib - kept_mib, 0),
                max(facts["maxPods"] - kept_pods, 0))


# The adapters a pod gets: the resource of the EFA device plugin, aws-efa-k8s-device-plugin, which
# eksctl v0.230.0 installs with efaEnabled (pkg/addons/assets/efa-device-plugin.yaml).
EFA_RESOURCE = "vpc.amazonaws.com/efa"


def node_group_quota(node: Node, nodes: int) -> tuple[Quota, ...]:
    """What `nodes` nodes of the type leave trainer pods, resource by resource: the sum of
    the numbers each node's pods are sized and fitted by (CPU and memory after the allowance
    for the cluster's own pods; every GPU and, with EFA, every adapter), for Kueue's quota."""
    found = [Quota("cpu", nodes * node.millicores, "m"), Quota("memory", nodes * node.mib, "Mi")]
    if node.gpus:
        found.append(Quota(GPU_RESOURCE, nodes * node.gpus, ""))
    if node.efa_adapters:
        found.append(Quota(EFA_RESOURCE, nodes * node.efa_adapters, ""))
    return tuple(found)


def share(node: Node, pods: int) -> tuple[int, int]:
    """Each of `pods` trainer pods' equal part of what the node leaves them: millicores, MiB."""
    return node.millicores // pods, node.mib // pods


def fitting_pods(node: Node, gpus_per_node: int, millicores: Decimal | None,
                 mib: Decimal | None) -> int:
    """How many trainer pods one node holds: by the pods the kubelet admits, GPUs, CPU and
    memory requests (None: not requested), and each pod's EFA adapters."""
    fits = [node.pod_slots, node.pods_by_gpus(gpus_per_node) if gpus_per_node else None,
            node.millicores // millicores if millicores else None,
            node.mib // mib if mib else None]
    if node.efa_adapters:
        per_pod = node.efa_per_pod(gpus_per_node)
        fits.append(node.efa_adapters // per_pod if per_pod else 0)
    return min(int(fit) for fit in fits if fit is not None)


# Families whose hardware PaddlePaddle's images do not serve: they are built for NVIDIA GPUs and
# for CPUs, on x86_64.
ACCELERATORS = (
    ("trn", "AWS Trainium accelerators (the Neuron SDK)"),
    ("inf", "AWS Inferentia accelerators (the Neuron SDK)"),
    ("dl1", "Intel Gaudi accelerators (Habana SynapseAI)"),
    ("dl2q", "Qualcomm Cloud AI 100 accelerators"),
    ("g4ad", "AMD Radeon Pro V520 GPUs (ROCm)"),
    ("f1", "Xilinx FPGAs"), ("f2", "AMD Xilinx FPGAs"),
    ("vt1", "Xilinx U30 video transcoding accelerators"),
    ("mac", "Apple Mac hardware (macOS, which EKS nodes do not run)"),
    ("p6e-gb", "NVIDIA Grace Blackwell superchips, whose Grace CPUs are arm64"),
)
# Graviton, arm64: a "g" right after the generation digit (m6g, c7gn, g5g, t4g, x2gd, im4gn), and
# the first generation's a1.
GRAVITON = re.compile(r"^(a1|[a-z]+[0-9]+g[a-z-]*)$")
GRAVITON_WORDS = "AWS Graviton processors (arm64)"


def unsupported(kind: str) -> str | None:
    """What a type has that PaddlePaddle's images do not serve, if anything."""
    family = kind.split(".")[0]
    if GRAVITON.match(family):
        return GRAVITON_WORDS
    return next((words for prefix, words in ACCELERATORS
                 if family == prefix or (family.startswith(prefix) and
                                         family[len(prefix):][:1].isdigit())), None)


def x86_sibling(kind: str, table: dict[str, Any]) -> str | None:
    """The x86_64 type of a Graviton type's size and generation, if paddlegen knows one
    (m6g.xlarge -> m6i.xlarge, g5g.xlarge -> g5.xlarge)."""
    family, _, size = kind.partition(".")
    match = re.match(r"^([a-z]+[0-9]+)g", family)
    if not match:
        return None
    return next((name for suffix in ("i", "a", "") if
                 (name := f"{match[1]}{suffix}.{size}") in table), None)


# The size part of an EC2 type's name (m5.large, g5.12xlarge, c5.metal, m7i.metal-24xl).
SIZE = re.compile(r"^(nano|micro|small|medium|large|[0-9]*xlarge|metal(-[0-9]+xl)?)$")


def looks_real(kind: str, known: Iterable[str]) -> bool:
    """Whether a type paddlegen does not know is of a family it knows, with a size EC2 has: no
    typo (t3.small, of the table's t3)."""
    family, _, size = kind.partition(".")
    return bool(SIZE.match(size)) and any(name.split(".")[0] == family for name in known)


def allowance_words() -> str:
    """The allowance in a sentence, with where its numbers come from."""
    cpu, memory = allowance(gpu=True, efa=False)
    efa_cpu, efa_memory = allowance(gpu=True, efa=True)
    daemons = ", ".join(pod.name for pod in CLUSTER_PODS if pod.replicas == 1)
    deployments = " and ".join(f"{pod.replicas} {pod.name}" for pod in CLUSTER_PODS
                               if pod.replicas > 1 and (pod.cpu_millicores or pod.memory_mib))
    return (f"{cpu}m CPU and {memory}Mi memory ({efa_cpu}m and {efa_memory}Mi with EFA) for the "
            f"cluster's own pods: the DaemonSets' requests ({daemons}; the device plugins on GPU "
            f"and EFA nodes only), room for {deployments} replicas, and "
            f"{UNREQUESTED_MEMORY_MIB}Mi for the memory they use unrequested; the sources are in "
            "profiles/aws/capacity.py")
