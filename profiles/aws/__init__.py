"""What the AWS profiles share: the vendored AWS data (instance types, regions, the EKS release
calendar, prices; each file's _origin says where it comes from) and the pieces built from it."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def data(name: str) -> Any:
    """A data file vendored in this package, by file name."""
    return json.loads(resources.files(__name__).joinpath(name).read_text())


def instance_types() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = data("instance-types.json")
    return table
