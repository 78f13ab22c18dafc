"""Rules of the AWS profiles, and the AWS names they derive (a zone's region, an S3 URI's
bucket)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from paddlegen.compiler.problems import quoted
from paddlegen.compiler.rules import Violation, rule


def region_of(zone: str) -> str:
    """us-west-2a -> us-west-2"""
    return zone[:-1]


def bucket_of(s3_uri: str) -> str:
    """s3://bucket/prefix -> bucket"""
    return s3_uri.removeprefix("s3://").split("/")[0]


def prefix_of(s3_uri: str) -> str:
    """s3://bucket/prefix -> prefix/ (the keys below it); s3://bucket -> '' (all its keys)"""
    prefix = s3_uri.removeprefix("s3://").partition("/")[2].strip("/")
    return f"{prefix}/" if prefix else ""


# The parts of a spec these rules read.
class ZonedCluster(Protocol):
    @property
    def availability_zone(self) -> str: ...
    @property
    def region(self) -> str | None: ...


class WithZone(Protocol):
    @property
    def cluster(self) -> ZonedCluster: ...


class BucketCluster(Protocol):
    @property
    def s3_uri(self) -> str | None: ...


class WithBucket(Protocol):
    @property
    def cluster(self) -> BucketCluster: ...


@rule("zone-in-region", reads=("cluster.availabilityZone", "cluster.region"))
def zone_in_region(spec: WithZone) -> Iterable[Violation]:
    """availabilityZone lies in region (us-west-2a is in us-west-2)."""
    zone, region = spec.cluster.availability_zone, spec.cluster.region
    if region is not None and region_of(zone) != region:
        yield ("cluster", "availabilityZone"), (
            f"{zone} is not in region {region}; use a zone such as {region}a")


@rule("s3-bucket-name", reads=("cluster.s3Uri",))
def s3_bucket_name(spec: WithBucket) -> Iterable[Violation]:
    """The bucket of s3Uri is a valid S3 bucket name: 3-63 characters, no '..', not an IP
    address, no 'xn--' prefix or '-s3alias' suffix."""
    if spec.cluster.s3_uri is None:
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
        yield ("cluster", "s3Uri"), f"{quoted(bucket)} is not a valid bucket name: {reason}"
