"""Spec parts of the AWS profiles that more than one profile could share."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from paddlegen.profiles.aws import formats as aws_p
from paddlegen.schema import patterns as p
from paddlegen.schema.models import SpecModel, text


class EfsSettings(SpecModel, title="EFS file system"):
    """The EFS file system that holds data, configs and output."""

    dns_name: Annotated[
        str | None, text(aws_p.EFS_DNS_NAME, (
            "fs-<id>.efs.<region>.amazonaws.com of the file system. Leave it out of the first "
            "build: the runbook makes the file system and prints it."))
    ] = None


class EfsStorage(SpecModel, title="EFS volume"):
    """EFS as a PersistentVolume, bound to one claim that the Jobs mount."""

    efs: EfsSettings = Field(default_factory=EfsSettings, description="The EFS file system.")
    claim_name: Annotated[
        str, text(p.DNS_LABEL, "Name of the PersistentVolumeClaim; its volume is "
                  "<namespace>-<claimName>.")
    ]
    capacity: Annotated[str, text(p.QUANTITY, "Capacity of the PersistentVolume, e.g. 100Gi.")]
    request: Annotated[str, text(p.QUANTITY, "Storage the claim requests, e.g. 50Gi.")]
