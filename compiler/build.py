"""The compiler core: spec bytes in, artifacts (path and text) out. No I/O here.

The profile (paddlegen.profiles) does the work: derive its plan, build its objects and files,
write its runbook. This module names the objects' files, checks each against the schema of the
release the profile targets, and adds what every tree has: the kustomization and the manifest
(which records the spec the tree is built from, given by the caller: this module reads no file).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from paddlegen.compiler.artifact import (
    K8S_DIR,
    KUBE_RELEASE,
    KUBE_VERSION_OPTION,
    KUSTOMIZATION,
    MANIFEST,
    MANIFEST_HEADER,
    Artifact,
    option_line,
)
from paddlegen.compiler.loader import load_text
from paddlegen.compiler.ownership import spec_line
from paddlegen.compiler.phases import RUN_SCRIPT, run_script
from paddlegen.compiler.problems import SCHEMA_RULE, FieldPath, Position, Problem, dotted
from paddlegen.compiler.profile import Explanation, Profile
from paddlegen.compiler.render import to_yaml, yaml_stream
from paddlegen.compiler.spec import load_spec


@dataclass(frozen=True)
class Manifest:
    """A Kubernetes object with the file it goes to and that file's text."""

    path: str
    obj: dict[str, Any]

    @cached_property
    def text(self) -> str:
        return to_yaml(self.obj)  # only when asked for: validate writes no file


class ManifestError(Exception):
    """A generated object breaks its release's schema: one problem per violation, positioned in
    the generated file."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(map(str, problems)))


@dataclass(frozen=True)
class Build:
    profile: Profile[Any, Any]
    plan: Any
    manifests: tuple[Manifest, ...]
    artifacts: tuple[Artifact, ...]  # every file of the output tree, sorted by path
    warnings: tuple[Problem, ...]

    def stream(self) -> str:
        """The Kubernetes objects as one multi-document YAML stream, in apply order."""
        return yaml_stream([m.text for m in self.manifests])


def build(raw: bytes, filename: str, kube_version: str | None = None,
          strict: bool = False, spec_record: str | None = None) -> Build:
    """Compile a spec file's bytes. Raises SpecError or ManifestError. A `kube_version` (the
    command line's --kube-version) and a `spec_record` (the spec's path relative to the output
    directory, compiler/ownership.py) are recorded in the tree's manifest."""
    result = checked(raw, filename, kube_version, strict)
    artifacts = sorted(emit(result.profile, result.plan, result.manifests, kube_version,
                            spec_record), key=lambda a: a.path)
    return replace(result, artifacts=tuple(artifacts))


def validate(raw: bytes, filename: str, kube_version: str | None = None,
             strict: bool = False) -> tuple[Problem, ...]:
    """What build checks, without writing any file's text: the warnings. Raises SpecError or
    ManifestError."""
    return checked(raw, filename, kube_version, strict).warnings


def checked(raw: bytes, filename: str, kube_version: str | None, strict: bool) -> Build:
    """The spec's profile, plan and objects, the objects checked against their release; no
    artifacts yet."""
    profile, spec, warnings = load_spec(raw, filename, strict, kube_version)
    plan = profile.derive(spec)
    manifests = manifest_files(profile.objects(plan))
    check_manifests(manifests, plan.meta.target.kube.schema)
    found = profile.checks(plan)
    if found:
        raise ManifestError([violation_problem(Manifest(f.path, f.data), f.where, f.message)
                             for f in found])
    return Build(profile, plan, manifests, (), warnings)


def explain(raw: bytes, filename: str) -> Explanation:
    profile, spec, _ = load_spec(raw, filename)
    return profile.explain(profile.derive(spec))


# Each kind's rank, the first part of its file's name: `kubectl apply -f k8s/` reads the files in
# lexical order, so each object comes after what it needs on an empty cluster. A rank per kind,
# not a count, keeps every other file's name when an object is added or removed. The Namespace
# first; then objects that only need it; CRD-typed kinds (Kueue's queues, the runtimes) after
# the CRDs and every built-in kind; the workloads, which need all of it, last.
KIND_RANKS = {
    "Namespace": 0,
    "CustomResourceDefinition": 5,
    "ServiceAccount": 10, "ClusterRole": 11, "Role": 11, "ClusterRoleBinding": 12,
    "RoleBinding": 12,
    "PersistentVolume": 20, "PersistentVolumeClaim": 21,
    "ConfigMap": 30, "Secret": 30,
    "Service": 40, "NetworkPolicy": 41, "PodDisruptionBudget": 42,
    "ResourceFlavor": 60, "ClusterQueue": 61, "LocalQueue": 62,  # Kueue
    "TrainingRuntime": 70, "ClusterTrainingRuntime": 70,  # Kubeflow Trainer
    "Job": 90, "Pod": 90, "JobSet": 90, "TrainJob": 90, "PaddleJob": 90,  # workloads
}


def manifest_files(objects: list[dict[str, Any]]) -> tuple[Manifest, ...]:
    """Each object in its own file, `k8s/<rank of its kind>-<kind>-<name>.yaml`, kept in apply
    order (the runbook's and the kustomization's). Raises ValueError for a kind without a rank
    or two objects with one file name: a bug of the profile that made them."""
    manifests = tuple(Manifest(manifest_path(obj), obj) for obj in objects)
    paths = [m.path for m in manifests]
    if len(set(paths)) < len(paths):
        raise ValueError(f"two objects would share a file: {sorted(paths)}")
    return manifests


def manifest_path(obj: dict[str, Any]) -> str:
    kind, name = obj["kind"], obj["metadata"]["name"]
    if kind not in KIND_RANKS:
        raise ValueError(f"no apply rank for kind {kind}: add it to KIND_RANKS")
    return f"{K8S_DIR}/{KIND_RANKS[kind]:02d}-{kind.lower()}-{name}.yaml"


def check_manifests(manifests: tuple[Manifest, ...], schema: str) -> None:
    from paddlegen.compiler.kube_schema import UnsupportedVersion, source, violations

    try:
        origin = source(schema).origin
        found = [(m, v) for m in manifests for v in violations(m.obj, schema)]
    except UnsupportedVersion as error:
        raise ManifestError([Problem(Position("", 1, 1), "", SCHEMA_RULE, str(error))]) from None
    if found:
        raise ManifestError([violation_problem(m, path, f"{message} ({origin}, strict)")
                             for m, (path, message) in found])


def violation_problem(manifest: Manifest, path: FieldPath, message: str) -> Problem:
    """A violation positioned in the generated file (parsed again only on this failure path)."""
    position = load_text(manifest.text.encode(), manifest.path).position(path)
    kind = f"{manifest.obj['kind']}/{manifest.obj['metadata']['name']}"
    return Problem(position, dotted(path) or kind, SCHEMA_RULE, f"{kind}: {message}")


def emit(profile: Profile[Any, Any], plan: Any, manifests: tuple[Manifest, ...],
         kube_version: str | None = None, spec_record: str | None = None) -> list[Artifact]:
    paths = [m.path for m in manifests]
    artifacts = [Artifact(m.path, m.text) for m in manifests]
    artifacts.append(Artifact(KUSTOMIZATION, to_yaml(kustomization(paths))))
    artifacts += [Artifact(path, text) for path, text in profile.files(plan).items()]
    runbook = profile.runbook(plan, paths)
    artifacts.append(Artifact("RUNBOOK.md", runbook))
    if profile.phases:
        artifacts.append(Artifact(RUN_SCRIPT, run_script(plan.meta.name, profile.phases(plan),
                                                         runbook), executable=True))
    owned = sorted([a.path for a in artifacts] + [MANIFEST])
    artifacts.append(Artifact(MANIFEST, manifest_text(owned, kube_version, spec_record)))
    return artifacts


def kustomization(paths: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": paths}


def manifest_text(paths: list[str], kube_version: str | None = None,
                  spec_record: str | None = None) -> str:
    """The header, the spec the tree is built from, the build options that made it (only those
    given), then the files the tree owns."""
    options = "" if spec_record is None else spec_line(spec_record)
    if kube_version:
        if not KUBE_RELEASE.match(kube_version):  # load_spec refused it already
            raise ValueError(f"not a Kubernetes release: {kube_version!r}")
        options += option_line(KUBE_VERSION_OPTION, kube_version)
    return f"{MANIFEST_HEADER}\n" + options + "".join(f"{path}\n" for path in paths)
