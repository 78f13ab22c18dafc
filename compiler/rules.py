"""Rules across fields: the values of the seeds that must agree with each other.

Each rule is a function of the validated spec yielding (path, message) for every violation; its
code is its stable identifier and its docstring is the rule's documentation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation

from paddlegen.compiler.loader import Path
from paddlegen.schema import TrainingSpec
from paddlegen.schema.models import KubeAwsSpec, LocalSpec

Violation = tuple[Path, str]
Rule = Callable[[TrainingSpec], Iterator[Violation]]
RULES: dict[str, Rule] = {}


def rule(code: str) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        RULES[code] = function
        return function
    return register


def check_rules(spec: TrainingSpec) -> list[tuple[Path, str, str]]:
    return [(path, code, message) for code, check in RULES.items() for path, message in check(spec)]


@rule("port-range")
def port_range(spec: TrainingSpec) -> Iterator[Violation]:
    """The pserver ports port … port+portsNum+portsNumForSparse-1 all fit below 65536."""
    if isinstance(spec, LocalSpec):
        return
    t = spec.training
    last = t.port + t.ports_num + t.ports_num_for_sparse - 1
    if last > 65535:
        yield ("training", "port"), (
            f"ports {t.port}-{last} run past 65535; lower port to at most "
            f"{65536 - t.ports_num - t.ports_num_for_sparse}")


@rule("gradient-servers")
def gradient_servers(spec: TrainingSpec) -> Iterator[Violation]:
    """gradientServers (--num_gradient_servers) counts trainers, so it is at most nodes."""
    if isinstance(spec, LocalSpec):
        return
    t = spec.training
    if t.gradient_servers is not None and t.gradient_servers > t.nodes:
        yield ("training", "gradientServers"), (
            f"{t.gradient_servers} gradient servers but only {t.nodes} trainer nodes; "
            f"set it to at most {t.nodes} or leave it out")


@rule("worker-capacity")
def worker_capacity(spec: TrainingSpec) -> Iterator[Violation]:
    """hostPorts allow one trainer pod per node: workerCount must be at least training.nodes."""
    if isinstance(spec, LocalSpec):
        return
    workers, nodes = spec.cluster.worker_count, spec.training.nodes
    if workers is not None and workers < nodes:
        yield ("cluster", "workerCount"), (
            f"{workers} workers cannot host {nodes} trainer pods (each binds the same hostPorts, "
            f"so one per node; the rest stay Pending); raise workerCount to {nodes}")


@rule("zone-in-region")
def zone_in_region(spec: TrainingSpec) -> Iterator[Violation]:
    """availabilityZone lies in region (us-west-2a is in us-west-2)."""
    if isinstance(spec, LocalSpec) or spec.cluster.region is None:
        return
    zone, region = spec.cluster.availability_zone, spec.cluster.region
    if zone[:-1] != region:
        yield ("cluster", "availabilityZone"), (
            f"{zone} is not in region {region}; use a zone such as {region}a")


@rule("kms-key-arn")
def kms_key_arn(spec: TrainingSpec) -> Iterator[Violation]:
    """kmsKeyArn names the cluster's region and account (KMS keys are regional)."""
    if not isinstance(spec, KubeAwsSpec):
        return
    cluster = spec.cluster
    _, _, _, region, account, _ = cluster.kms_key_arn.split(":", 5)
    if region != cluster.region:
        yield ("cluster", "kmsKeyArn"), (
            f"the key is in {region} but the cluster in {cluster.region}; "
            f"create the key with `aws kms --region={cluster.region} create-key`")
    if account != cluster.account_id:
        yield ("cluster", "kmsKeyArn"), (
            f"the key belongs to account {account}, not accountId {cluster.account_id}")


@rule("efs-region")
def efs_region(spec: TrainingSpec) -> Iterator[Violation]:
    """The EFS file system is in the cluster's region (NFS mounts do not cross regions)."""
    if not isinstance(spec, KubeAwsSpec):
        return
    region = spec.storage.efs.dns_name.split(".")[2]
    if region != spec.cluster.region:
        yield ("storage", "efs", "dnsName"), (
            f"the file system is in {region} but the cluster in {spec.cluster.region}")


@rule("storage-request")
def storage_request(spec: TrainingSpec) -> Iterator[Violation]:
    """storage.request fits in storage.capacity, or the claim never binds to the volume."""
    if not isinstance(spec, KubeAwsSpec):
        return
    storage = spec.storage
    if quantity(storage.request) > quantity(storage.capacity):
        yield ("storage", "request"), (
            f"{storage.request} is more than the volume's capacity {storage.capacity}; "
            "the claim would never bind")


_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
           "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
           "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([a-zA-Z]*|[eE][+-]?[0-9]+)$")


def quantity(text: str) -> Decimal:
    """The value of a Kubernetes quantity ("50Gi" -> 53687091200)."""
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    number, suffix = match.groups()
    try:
        if suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():
            return Decimal(number + suffix)
        return Decimal(number) * Decimal(_SUFFIX[suffix])
    except (KeyError, InvalidOperation):
        raise ValueError(f"not a quantity: {text!r}") from None
