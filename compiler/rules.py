"""Rules across fields: the values of the seeds that must agree with each other.

Each rule is a function of the validated spec yielding (path, message) for every violation, the
message ending in how to fix it; its code is its stable identifier and its docstring is the rule's
documentation (`paddlegen rules`). Warnings print but pass, unless --strict.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation

from paddlegen.compiler.loader import Path
from paddlegen.compiler.plan import bucket_of, region_of
from paddlegen.compiler.problems import Severity
from paddlegen.schema import TrainingSpec
from paddlegen.schema.models import KubeAwsSpec, LocalSpec
from paddlegen.schema.patterns import QUANTITY

Violation = tuple[Path, str]
Rule = Callable[[TrainingSpec], Iterator[Violation]]
RULES: dict[str, tuple[Rule, Severity]] = {}


def rule(code: str, severity: Severity = "error") -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        RULES[code] = (function, severity)
        return function
    return register


def check_rules(spec: TrainingSpec) -> list[tuple[Path, str, str, Severity]]:
    return [(path, code, message, severity) for code, (check, severity) in RULES.items()
            for path, message in check(spec)]


@rule("port-range")
def port_range(spec: TrainingSpec) -> Iterator[Violation]:
    """The pserver ports port ... port+portsNum+portsNumForSparse-1 all fit below 65536."""
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


@rule("kube-version")
def kube_version(spec: TrainingSpec) -> Iterator[Violation]:
    """kubeVersion is a Kubernetes release whose schemas are installed, to check the objects."""
    from paddlegen.compiler.kube_schema import supported_versions

    available = supported_versions()
    if spec.kube_version not in available:
        yield ("kubeVersion",), (
            f"no schemas for Kubernetes {spec.kube_version}; use one of {', '.join(available)}")


@rule("job-names")
def job_names(spec: TrainingSpec) -> Iterator[Violation]:
    """The data Job and the training Job have different names (one namespace holds both)."""
    if isinstance(spec, KubeAwsSpec) and spec.dataset.job_name == spec.metadata.name:
        yield ("metadata", "name"), (
            f"{spec.metadata.name!r} is also the data Job's name (dataset.jobName); "
            "rename the training job, or set dataset.jobName to another name")


@rule("zone-in-region")
def zone_in_region(spec: TrainingSpec) -> Iterator[Violation]:
    """availabilityZone lies in region (us-west-2a is in us-west-2)."""
    if isinstance(spec, LocalSpec) or spec.cluster.region is None:
        return
    zone, region = spec.cluster.availability_zone, spec.cluster.region
    if region_of(zone) != region:
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


# kube-aws v0.9.x's defaults for the settings its own checks compare.
KUBE_AWS_NETWORK_DEFAULTS = {"vpcCIDR": "10.0.0.0/16", "instanceCIDR": "10.0.0.0/24",
                             "podCIDR": "10.2.0.0/16", "serviceCIDR": "10.3.0.0/24",
                             "dnsServiceIP": "10.3.0.10"}


@rule("kube-aws-network")
def kube_aws_network(spec: TrainingSpec) -> Iterator[Violation]:
    """kube-aws's own network checks: vpcCIDR contains instanceCIDR; the VPC, pod and Service
    ranges do not overlap; dnsServiceIP lies in serviceCIDR and is neither its network address
    nor its first address (the kubernetes Service's). Unset values take kube-aws's defaults."""
    if not isinstance(spec, KubeAwsSpec):
        return
    given = spec.model_dump(by_alias=True)["cluster"]
    values = {key: given[key] or default for key, default in KUBE_AWS_NETWORK_DEFAULTS.items()}
    nets = {}
    for key in ("vpcCIDR", "instanceCIDR", "podCIDR", "serviceCIDR"):
        try:
            nets[key] = ipaddress.IPv4Network(values[key], strict=False)  # as Go's ParseCIDR
        except ValueError as error:
            yield ("cluster", key), f"{values[key]} is not a network: {error}"
    if len(nets) < 4:
        return
    if not nets["instanceCIDR"].subnet_of(nets["vpcCIDR"]):
        yield ("cluster", "instanceCIDR"), (
            f"{values['instanceCIDR']} is not inside vpcCIDR {values['vpcCIDR']}")
    for key, other in (("podCIDR", "vpcCIDR"), ("serviceCIDR", "vpcCIDR"),
                       ("serviceCIDR", "podCIDR")):
        if nets[key].overlaps(nets[other]):
            yield ("cluster", key), (
                f"{values[key]} overlaps {other} {values[other]}; pick a disjoint range")
    try:
        dns = ipaddress.IPv4Address(values["dnsServiceIP"])
    except ValueError as error:
        yield ("cluster", "dnsServiceIP"), str(error)
        return
    service = nets["serviceCIDR"]
    if dns not in service:
        yield ("cluster", "dnsServiceIP"), (
            f"{dns} is outside serviceCIDR {service}; use e.g. {service.network_address + 10}")
    elif dns in (service.network_address, service.network_address + 1):
        yield ("cluster", "dnsServiceIP"), (
            f"{dns} is reserved ({service.network_address + 1} is the kubernetes Service); "
            f"use e.g. {service.network_address + 10}")


@rule("record-set")
def record_set(spec: TrainingSpec) -> Iterator[Violation]:
    """createRecordSet needs exactly one of hostedZone and hostedZoneId (kube-aws's check)."""
    if not isinstance(spec, KubeAwsSpec) or not spec.cluster.create_record_set:
        return
    zones = [spec.cluster.hosted_zone, spec.cluster.hosted_zone_id]
    if zones.count(None) != 1:
        yield ("cluster", "createRecordSet"), (
            "createRecordSet needs exactly one of hostedZone and hostedZoneId; "
            f"{'both are' if None not in zones else 'neither is'} set")


@rule("s3-bucket-name")
def s3_bucket_name(spec: TrainingSpec) -> Iterator[Violation]:
    """The bucket of s3Uri is a valid S3 bucket name: 3-63 characters, no '..', not an IP
    address, no 'xn--' prefix or '-s3alias' suffix."""
    if isinstance(spec, LocalSpec):
        return
    bucket = bucket_of(spec.cluster.s3_uri)
    reasons = [reason for broken, reason in (
        (not 3 <= len(bucket) <= 63, "it must have 3 to 63 characters"),
        (".." in bucket or ".-" in bucket or "-." in bucket,
         "a '.' may not be next to another '.' or a '-'"),
        (bool(re.fullmatch(r"[0-9.]+", bucket)) and bucket.count(".") == 3,
         "it may not look like an IP address"),
        (bucket.startswith("xn--") or bucket.endswith("-s3alias"),
         "it may not start with 'xn--' or end with '-s3alias'"),
    ) if broken]
    for reason in reasons:
        yield ("cluster", "s3Uri"), f"{bucket!r} is not a valid bucket name: {reason}"


@rule("image-tag", severity="warning")
def image_tag(spec: TrainingSpec) -> Iterator[Violation]:
    """Images name a tag other than latest (or a digest): otherwise each node may run whatever
    the tag points to when it pulls."""
    images = [(("training", "image"), spec.training.image)]
    if isinstance(spec, KubeAwsSpec):
        images.append((("dataset", "image"), spec.dataset.image))
    for path, image in images:
        name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
        if "@" in image:
            continue
        if not tag or tag == "latest":
            yield path, (f"{image} {'has no tag' if not tag else 'uses :latest'}; "
                         f"pin a version tag or a digest ({name or image}:<version>)")


_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
           "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
           "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(text: str) -> Decimal:
    """The value of a Kubernetes quantity ("50Gi" -> 53687091200)."""
    if not re.match(QUANTITY.regex, text):
        raise ValueError(f"not a quantity: {text!r}")
    number, suffix = re.match(r"\+?([0-9.]+)(.*)", text).groups()  # type: ignore[union-attr]
    try:
        if suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():
            return Decimal(number + suffix)
        return Decimal(number) * Decimal(_SUFFIX[suffix])
    except (KeyError, InvalidOperation):
        raise ValueError(f"not a quantity: {text!r}") from None
