"""Strict validation of Kubernetes objects against the schema of the release that serves them.

Schemas come from pluggable sources, each a directory of per-kind JSON Schema files with
additionalProperties false ("strict"):
- vendored in paddlegen.schema/kubernetes (origin in schema/kubernetes/ORIGIN.md), one
  self-contained file per kind paddlegen emits: the old releases the profiles target (1.5, 1.8),
  and the current releases the profiles default to (1.33, 1.34, 1.35: kubernetes-validate's
  files, trimmed to what each kind reaches);
- every release kubernetes-validate bundles, for the other releases and kinds (its files refer
  into one shared `_definitions.json` of 1.5 MB).

Objects are almost always valid, so each is first put to a boolean validator of our own, which
answers only "valid or not", with jsonschema's Draft 2020-12 semantics, for the keywords these
schemas use. Only an object it does not accept goes through jsonschema, which words the errors;
a schema using a keyword the boolean validator lacks always goes through jsonschema. On the
success path jsonschema is never imported.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from paddlegen.compiler.boolean_schema import Check, boolean_validator, reject
from paddlegen.compiler.problems import FieldPath, Violation, dotted

# Pod templates of 1.4 and 1.5 carry init containers as JSON in this annotation.
INIT_CONTAINERS_ANNOTATION = "pod.beta.kubernetes.io/init-containers"


class UnsupportedVersion(ValueError):
    pass


def in_path_order(found: Iterable[Violation]) -> list[Violation]:
    """Violations sorted by path (its parts compared as text), then message."""
    return sorted(found, key=lambda v: (tuple(map(str, v[0])), v[1]))


@dataclass(frozen=True)
class SchemaSource:
    """A directory of per-kind strict schemas: `<kind>-<group-version>.json`."""

    directory: Any  # a Path, or an importlib.resources Traversable
    origin: str  # for messages: where these schemas come from
    shared_definitions: bool = False  # files refer into _definitions.json beside them

    def file(self, api_version: str, kind: str) -> Any:
        # rbac.authorization.k8s.io/v1 -> rbac-v1; v1 -> v1
        group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        return self.directory / f"{kind.lower()}-{group_version}.json"


def _package_directory(name: str) -> Path | None:
    # Found without importing the package, nor importlib.resources' readers (zipfile, tempfile):
    # both packages are installed as directories.
    package = importlib.util.find_spec(name)
    if package is None or not package.submodule_search_locations:
        return None
    return Path(package.submodule_search_locations[0])


@cache
def _kubernetes_validate_root() -> Path | None:
    # The package's data only: importing kubernetes_validate itself would load its validator
    # and PyYAML (about 80 ms) for nothing.
    package = _package_directory("kubernetes_validate")
    return package / "kubernetes-json-schema" if package else None


@cache
def schema_package() -> Path:
    """The directory of paddlegen.schema, which holds every vendored schema."""
    package = _package_directory("paddlegen.schema")
    assert package is not None, "paddlegen.schema is paddlegen's own package"
    return package


def _vendored_root() -> Path:
    return schema_package() / "kubernetes"


# Old releases, vendored from other sources than kubernetes-validate's current files.
VENDORED = {"1.5": "the Kubernetes 1.5.1 API (models of the kubernetes==1.0.2 client)",
            "1.8": "the Kubernetes 1.8.4 API (kubernetes-validate 1.11.0.2)"}


def _minor_key(version: str) -> tuple[int, ...]:
    return tuple(map(int, version.split(".")))


def _current_origin(version: str) -> str:
    # The same words whether the file is vendored or kubernetes-validate's own: it is the same
    # schema (scripts/vendor_kubernetes.py only trims it).
    return f"the Kubernetes {version} API (kubernetes-validate)"


@cache
def _vendored_current_versions() -> frozenset[str]:
    """The current releases scripts/vendor_kubernetes.py wrote a directory for."""
    found = {m.group(1) for entry in _vendored_root().iterdir()
             if (m := re.fullmatch(r"v(1\.\d+)", entry.name))}
    return frozenset(found - VENDORED.keys())


@cache
def _bundled_versions() -> frozenset[str]:
    """The releases whose strict schemas the installed kubernetes-validate bundles."""
    root = _kubernetes_validate_root()
    return frozenset(m.group(1) for entry in (root.iterdir() if root and root.is_dir() else ())
                     if (m := re.fullmatch(r"v(1\.\d+)\.0-local-strict", entry.name)))


@cache
def supported_versions() -> list[str]:
    """Every release with schemas: the vendored ones and those kubernetes-validate bundles."""
    return sorted(_bundled_versions() | _vendored_current_versions() | set(VENDORED),
                  key=_minor_key)


@cache
def _release_sources(version: str) -> tuple[SchemaSource, ...]:
    """The release's own sources, searched in order: vendored first, then kubernetes-validate's
    files (for the kinds not vendored)."""
    found: list[SchemaSource] = []
    if version in VENDORED or version in _vendored_current_versions():
        found.append(SchemaSource(_vendored_root().joinpath(f"v{version}"),
                                  VENDORED.get(version) or _current_origin(version)))
    root = _kubernetes_validate_root()
    if root is not None and version in _bundled_versions():
        found.append(SchemaSource(root / f"v{version}.0-local-strict", _current_origin(version),
                                  shared_definitions=True))
    if not found:
        raise UnsupportedVersion(
            f"no Kubernetes {version} schemas installed; "
            f"available: {', '.join(supported_versions())}")
    return tuple(found)


def source(version: str) -> SchemaSource:
    """The release's first source: the one its messages name."""
    return _release_sources(version)[0]


# The vendored schemas of custom resources, each directory with the ORIGIN.md that says where its
# files come from: directory, and the words messages use for them.
CUSTOM_RESOURCES = (
    ("kubeflow", "the PaddleJob CRD of Kubeflow's training operator v1.9.4, strict"),
    ("jobset", "the JobSet CRD of JobSet v0.12.0, strict"),
    ("trainer", "the TrainJob and (Cluster)TrainingRuntime CRDs of Kubeflow Trainer v2.3.0, "
                "strict"),
    ("kueue", "the ResourceFlavor, ClusterQueue and LocalQueue CRDs of Kueue v0.19.2, strict"),
)


@cache
def extra_sources() -> tuple[SchemaSource, ...]:
    """Searched after the release's own sources, for kinds it does not define: the vendored
    schemas of custom resources (schema/<directory>/ORIGIN.md). Their files' names carry the
    group's first label (jobset-jobset-v1alpha2.json), so no two directories hold the same."""
    return tuple(SchemaSource(schema_package() / directory, origin)
                 for directory, origin in CUSTOM_RESOURCES)


def sources(version: str) -> tuple[SchemaSource, ...]:
    return (*_release_sources(version), *extra_sources())


@dataclass(frozen=True)
class KindSchema:
    """A kind's strict schema in one release, where it was found, and its boolean validator."""

    schema: dict[str, Any]
    source: SchemaSource
    # True: valid. False: invalid, or a schema the boolean validator cannot decide.
    passes: Check


# What an apiVersion and a kind look like; anything else names no schema file.
_API_VERSION = re.compile(r"([a-z0-9][a-z0-9.-]{0,252}/)?v[0-9][a-z0-9]{0,15}")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")


def names_a_kind(api_version: str, kind: str) -> bool:
    return bool(_API_VERSION.fullmatch(api_version) and _KIND.fullmatch(kind))


@cache
def _kind_schema(version: str, api_version: str, kind: str) -> KindSchema | None:
    """The schema of the first source that defines the kind, or None."""
    if not names_a_kind(api_version, kind):
        return None
    for schemas in sources(version):
        path = schemas.file(api_version, kind)
        if path.is_file():
            schema = json.loads(path.read_bytes())
            return KindSchema(schema, schemas, boolean_validator(schema) or reject)
    return None


@cache
def _registry(schemas: SchemaSource) -> Any:
    from referencing import Registry, Resource

    if not schemas.shared_definitions:
        return Registry()
    definitions = json.loads((schemas.directory / "_definitions.json").read_bytes())
    return Resource.from_contents(definitions) @ Registry()


@cache
def _validator(version: str, api_version: str, kind: str) -> Any:
    """jsonschema's validator of the kind, or None: only for objects to be worded as errors."""
    from jsonschema import Draft202012Validator

    found = _kind_schema(version, api_version, kind)
    if found is None:
        return None
    return Draft202012Validator(found.schema, registry=_registry(found.source))


def fast_valid(obj: dict[str, Any], version: str) -> bool:
    """Whether the boolean validator finds `obj` valid in Kubernetes `version`, the containers
    of its init-containers annotation included. False also where it cannot decide: an object it
    accepts is one jsonschema accepts."""
    schema = _kind_schema(version, str(obj.get("apiVersion")), str(obj.get("kind")))
    return schema is not None and schema.passes(obj) and _init_containers_pass(obj, version)


def violations(obj: dict[str, Any], version: str) -> list[Violation]:
    """Every way `obj` breaks its kind's strict schema in Kubernetes `version`, in path order.

    An object of a kind the release does not serve is one violation at its root."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if _kind_schema(version, str(api_version), str(kind)) is None:
        return [((), f"Kubernetes {version} serves no {kind} in {api_version}")]
    if fast_valid(obj, version):
        return []
    # Invalid, or not decidable by the boolean validator: jsonschema finds and words the errors.
    validator = _validator(version, str(api_version), str(kind))
    found: list[Violation] = [(tuple(error.absolute_path), error.message)
                              for error in validator.iter_errors(obj)]
    found += _init_container_violations(obj, version)
    return in_path_order(found)


def _init_containers_text(obj: dict[str, Any]) -> Any:
    """The value of the init-containers annotation of the object's pod template, or None."""
    node: Any = obj
    for key in ("spec", "template", "metadata", "annotations"):
        node = node.get(key) if isinstance(node, dict) else None
    return node.get(INIT_CONTAINERS_ANNOTATION) if isinstance(node, dict) else None


def _init_containers(obj: dict[str, Any]) -> list[Any] | str | None:
    """The containers of the object's init-containers annotation: None without the annotation,
    why not where it holds no JSON list."""
    text = _init_containers_text(obj)
    if text is None:
        return None
    try:
        containers = json.loads(text)
    except (TypeError, ValueError) as error:  # TypeError: not a string (the schema says so too)
        return f"not JSON: {error}"
    if not isinstance(containers, list):
        return "not a JSON list of containers"
    return containers


def _init_containers_pass(obj: dict[str, Any], version: str) -> bool:
    """Whether the boolean validator finds every container of the annotation (if any) valid."""
    containers = _init_containers(obj)
    if containers is None:
        return True
    container = _kind_schema(version, "v1", "Container")
    return (container is not None and isinstance(containers, list)
            and all(map(container.passes, containers)))


def _init_container_violations(obj: dict[str, Any], version: str) -> list[Violation]:
    """The containers inside the init-containers annotation, checked as containers."""
    path: FieldPath = ("spec", "template", "metadata", "annotations", INIT_CONTAINERS_ANNOTATION)
    containers = _init_containers(obj)
    if containers is None:
        return []
    if isinstance(containers, str):
        return [(path, containers)]
    validator = _validator(version, "v1", "Container")
    if validator is None:
        return [(path, f"no Container schema for Kubernetes {version}")]
    return [(path, f"{dotted((index, *error.absolute_path))}: {error.message}")
            for index, container in enumerate(containers)
            for error in validator.iter_errors(container)]
