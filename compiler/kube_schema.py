"""Strict validation of Kubernetes objects against the schema of the release that serves them.

Schemas come from pluggable sources, each a directory of per-kind JSON Schema files with
additionalProperties false ("strict"):
- current releases: the official OpenAPI documents converted by the kubernetes-validate package
  (its files refer into one shared `_definitions.json` of 1.5 MB);
- old releases the profiles target (1.5, 1.8): vendored in paddlegen.schema/kubernetes, one
  self-contained file per kind we emit (origin in schema/kubernetes/ORIGIN.md).
Each release's registry and each kind's validator are built once per process; jsonschema is
imported only when first needed.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

# Pod templates of 1.4 and 1.5 carry init containers as JSON in this annotation.
INIT_CONTAINERS_ANNOTATION = "pod.beta.kubernetes.io/init-containers"


class UnsupportedVersion(ValueError):
    pass


class Violation(NamedTuple):
    path: tuple[str | int, ...]  # into the object
    message: str


@dataclass(frozen=True)
class SchemaSource:
    """A directory of per-kind strict schemas: `<kind>-<group-version>.json`."""

    directory: Any  # a Path or an importlib.resources Traversable
    origin: str  # for messages: where these schemas come from
    shared_definitions: bool = False  # files refer into _definitions.json beside them

    def file(self, api_version: str, kind: str) -> Any:
        # rbac.authorization.k8s.io/v1 -> rbac-v1; v1 -> v1
        group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        return self.directory / f"{kind.lower()}-{group_version}.json"


@cache
def _kubernetes_validate_root() -> Path | None:
    # The package's data only: importing kubernetes_validate itself would load its validator
    # and PyYAML (about 80 ms) for nothing.
    package = importlib.util.find_spec("kubernetes_validate")
    if package is None or not package.submodule_search_locations:
        return None
    return Path(package.submodule_search_locations[0]) / "kubernetes-json-schema"


def _vendored_root() -> Any:
    return resources.files("paddlegen.schema").joinpath("kubernetes")


VENDORED = {"1.5": "the Kubernetes 1.5.1 API (models of the kubernetes==1.0.2 client)",
            "1.8": "the Kubernetes 1.8.4 API (kubernetes-validate 1.11.0.2)"}


def _minor_key(version: str) -> tuple[int, ...]:
    return tuple(map(int, version.split(".")))


@cache
def supported_versions() -> list[str]:
    """Every release with schemas: the vendored ones and those kubernetes-validate bundles."""
    root = _kubernetes_validate_root()
    bundled = {m.group(1) for entry in (root.iterdir() if root and root.is_dir() else ())
               if (m := re.fullmatch(r"v(1\.\d+)\.0-local-strict", entry.name))}
    return sorted(bundled | set(VENDORED), key=_minor_key)


@cache
def source(version: str) -> SchemaSource:
    if version in VENDORED:
        return SchemaSource(_vendored_root().joinpath(f"v{version}"), VENDORED[version])
    root = _kubernetes_validate_root()
    directory = root / f"v{version}.0-local-strict" if root else None
    if directory is None or not directory.is_dir():
        raise UnsupportedVersion(
            f"no Kubernetes {version} schemas installed; "
            f"available: {', '.join(supported_versions())}")
    return SchemaSource(directory, f"the Kubernetes {version} API (kubernetes-validate)",
                        shared_definitions=True)


# Sources searched after the release's own, for kinds it does not define (vendored CRD schemas).
EXTRA_SOURCES: tuple[SchemaSource, ...] = ()


def sources(version: str) -> tuple[SchemaSource, ...]:
    return (source(version), *EXTRA_SOURCES)


@cache
def _registry(schemas: SchemaSource) -> Any:
    from referencing import Registry, Resource

    if not schemas.shared_definitions:
        return Registry()
    definitions = json.loads((schemas.directory / "_definitions.json").read_bytes())
    return Resource.from_contents(definitions) @ Registry()


@cache
def _validator(version: str, api_version: str, kind: str) -> Any:
    """The validator of the first source that defines the kind, or None."""
    from jsonschema import Draft202012Validator

    for schemas in sources(version):
        path = schemas.file(api_version, kind)
        if path.is_file():
            return Draft202012Validator(json.loads(path.read_bytes()),
                                        registry=_registry(schemas))
    return None


def violations(obj: dict[str, Any], version: str) -> list[Violation]:
    """Every way `obj` breaks its kind's strict schema in Kubernetes `version`, in path order.

    An object of a kind the release does not serve is one violation at its root."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    validator = _validator(version, str(api_version), str(kind))
    if validator is None:
        return [Violation((), f"Kubernetes {version} serves no {kind} in {api_version}")]
    found = [Violation(tuple(error.absolute_path), error.message)
             for error in validator.iter_errors(obj)]
    found += _init_container_violations(obj, version)
    return sorted(found, key=lambda v: (tuple(map(str, v.path)), v.message))


def _init_container_violations(obj: dict[str, Any], version: str) -> list[Violation]:
    """The containers inside the init-containers annotation, checked as containers."""
    template = obj.get("spec", {}).get("template", {})
    path: tuple[str | int, ...] = ("spec", "template", "metadata", "annotations",
                                   INIT_CONTAINERS_ANNOTATION)
    text = template.get("metadata", {}).get("annotations", {}).get(INIT_CONTAINERS_ANNOTATION)
    if text is None:
        return []
    try:
        containers = json.loads(text)
    except ValueError as error:
        return [Violation(path, f"not JSON: {error}")]
    if not isinstance(containers, list):
        return [Violation(path, "not a JSON list of containers")]
    validator = _validator(version, "v1", "Container")
    if validator is None:
        return [Violation(path, f"no Container schema for Kubernetes {version}")]
    return [Violation(path, f"[{index}]{_dotted(error.absolute_path)}: {error.message}")
            for index, container in enumerate(containers)
            for error in validator.iter_errors(container)]


def _dotted(path: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
