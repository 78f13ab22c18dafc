"""aws/eksctl-cluster.yaml checked against eksctl's own JSON Schema (vendored from eksctl
v0.230.0, schema/eksctl/ORIGIN.md): draft-07, every struct closed, so a misspelt key is refused.
As for Kubernetes objects, the boolean validator decides; jsonschema words what it refuses."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from paddlegen.compiler.boolean_schema import Check, boolean_validator, reject
from paddlegen.compiler.kube_schema import in_path_order, schema_package
from paddlegen.compiler.problems import Violation

SCHEMA = "clusterconfig-v1alpha5.json"
ORIGIN = "eksctl v0.230.0's ClusterConfig schema"


@cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (schema_package() / "eksctl" / SCHEMA).read_bytes())
    return schema


@cache
def _passes() -> Check:
    return boolean_validator(_schema()) or reject


def violations(config: dict[str, Any]) -> list[Violation]:
    """Every way `config` breaks eksctl's ClusterConfig schema, in path order."""
    if _passes()(config):
        return []
    from jsonschema import Draft7Validator
    from referencing import Registry

    # An empty registry: every ref is inside the file, and nothing is fetched.
    validator = Draft7Validator(_schema(), registry=Registry())
    found: list[Violation] = [(tuple(error.absolute_path), f"{error.message} ({ORIGIN})")
                              for error in validator.iter_errors(config)]
    return in_path_order(found)
