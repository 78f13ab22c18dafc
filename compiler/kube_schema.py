"""Strict validation of Kubernetes objects against the official OpenAPI schemas.

The schemas are the Kubernetes OpenAPI documents of each release, converted to JSON Schema with
additionalProperties false ("strict"), as bundled by the kubernetes-validate package. Its own
`validate()` re-reads the 1.5 MB definitions file on every call; here each release's registry and
each kind's validator are built once per process. jsonschema is imported only when first needed.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any


class UnsupportedVersion(ValueError):
    pass


@cache
def _schema_root() -> Path:
    # The package's data only: importing kubernetes_validate itself would load its validator
    # and PyYAML (about 80 ms) for nothing.
    package = importlib.util.find_spec("kubernetes_validate")
    if package is None or not package.submodule_search_locations:
        raise UnsupportedVersion("the kubernetes-validate package (the schemas) is not installed")
    return Path(package.submodule_search_locations[0]) / "kubernetes-json-schema"


@cache
def supported_versions() -> list[str]:
    found = {m.group(1) for entry in _schema_root().iterdir()
             if (m := re.fullmatch(r"v(1\.\d+)\.0-local-strict", entry.name))}
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def _schema_dir(kube_version: str) -> Path:
    directory = _schema_root() / f"v{kube_version}.0-local-strict"
    if not directory.is_dir():
        raise UnsupportedVersion(
            f"no Kubernetes {kube_version} schemas installed; "
            f"available: {', '.join(supported_versions())}")
    return directory


@cache
def _registry(kube_version: str) -> Any:
    from referencing import Registry, Resource

    definitions = json.loads((_schema_dir(kube_version) / "_definitions.json").read_bytes())
    return Resource.from_contents(definitions) @ Registry()


@cache
def _validator(kube_version: str, api_version: str, kind: str) -> Any:
    from jsonschema import Draft202012Validator

    # rbac.authorization.k8s.io/v1 -> rbac-v1; v1 -> v1
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir(kube_version) / f"{kind.lower()}-{group_version}.json"
    schema = json.loads(path.read_bytes())
    return Draft202012Validator(schema, registry=_registry(kube_version))


def violations(obj: dict[str, Any], kube_version: str) -> list[str]:
    """Every way `obj` breaks its kind's strict schema, as "path: message", in path order."""
    validator = _validator(kube_version, obj["apiVersion"], obj["kind"])
    found = []
    for error in validator.iter_errors(obj):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        found.append(f"{path.lstrip('.') or '(root)'}: {error.message}")
    return sorted(found)
