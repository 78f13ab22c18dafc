"""The compiler core: spec bytes in, artifacts (path and text) out. No I/O here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paddlegen.compiler import aws, kube_objects, runbook
from paddlegen.compiler.plan import Plan, derive
from paddlegen.compiler.problems import Problem
from paddlegen.compiler.render import to_json, to_yaml, yaml_stream
from paddlegen.compiler.spec import load_spec

MANIFEST = ".paddlegen-manifest"
K8S_DIR = "k8s"
KUSTOMIZATION = "kustomization.yaml"

RBAC = (kube_objects.service_account, kube_objects.pod_reader_role,
        kube_objects.pod_reader_binding)


@dataclass(frozen=True)
class ProfileArtifacts:
    objects: tuple[Callable[[Plan], dict[str, Any]], ...]  # in the order they must be applied
    files: tuple[tuple[str, Callable[[Plan], str]], ...]  # the other files, by path
    runbook: Callable[[Plan, list[str]], str]  # Plan and manifest paths -> RUNBOOK.md


PROFILE_ARTIFACTS = {
    "kube-aws": ProfileArtifacts(
        objects=(kube_objects.persistent_volume, kube_objects.persistent_volume_claim, *RBAC,
                 kube_objects.data_job, kube_objects.training_job),
        files=(("aws/cluster.yaml", lambda plan: to_yaml(aws.cluster_yaml(plan))),
               ("aws/iam-policy.json", lambda plan: to_json(aws.iam_policy(plan)))),
        runbook=runbook.kube_aws_runbook,
    ),
    "kube-up": ProfileArtifacts(
        objects=(*RBAC, kube_objects.training_job),
        files=(("aws/kube-up.env", aws.kube_up_env),),
        runbook=runbook.kube_up_runbook,
    ),
    "local": ProfileArtifacts(
        objects=(kube_objects.local_training_job,), files=(), runbook=runbook.local_runbook),
}


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the output directory, '/'-separated
    text: str


@dataclass(frozen=True)
class Manifest:
    """A Kubernetes object with the file it goes to."""

    path: str
    obj: dict[str, Any]


class ManifestError(Exception):
    """A generated object breaks the Kubernetes schema: one line per violation."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Build:
    plan: Plan
    manifests: tuple[Manifest, ...]
    artifacts: tuple[Artifact, ...]  # every file of the output tree, sorted by path
    warnings: tuple[Problem, ...]

    def stream(self) -> str:
        """The Kubernetes objects as one multi-document YAML stream, in apply order."""
        text = {a.path: a.text for a in self.artifacts}
        return yaml_stream([text[m.path] for m in self.manifests])


def build(raw: bytes, filename: str, kube_version: str | None = None,
          strict: bool = False) -> Build:
    """Compile a spec file's bytes. Raises SpecError or ManifestError."""
    spec, warnings = load_spec(raw, filename, strict, kube_version)
    plan = derive(spec)
    manifests = tuple(manifest_files(plan))
    check_manifests(manifests, spec.kube_version)
    artifacts = tuple(sorted(emit(plan, manifests), key=lambda a: a.path))
    return Build(plan, manifests, artifacts, warnings)


def manifest_files(plan: Plan) -> list[Manifest]:
    objects = [builder(plan) for builder in PROFILE_ARTIFACTS[plan.spec.profile].objects]
    return [Manifest(f"{K8S_DIR}/{i:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml", obj)
            for i, obj in enumerate(objects, start=1)]


def check_manifests(manifests: tuple[Manifest, ...], kube_version: str) -> None:
    from paddlegen.compiler.kube_schema import UnsupportedVersion, violations

    try:
        lines = [f"{m.path}: {m.obj['kind']}/{m.obj['metadata']['name']}: {v} "
                 f"(Kubernetes {kube_version}, strict)"
                 for m in manifests for v in violations(m.obj, kube_version)]
    except UnsupportedVersion as error:
        lines = [str(error)]
    if lines:
        raise ManifestError(lines)


def emit(plan: Plan, manifests: tuple[Manifest, ...]) -> list[Artifact]:
    profile = PROFILE_ARTIFACTS[plan.spec.profile]
    paths = [m.path for m in manifests]
    artifacts = [Artifact(m.path, to_yaml(m.obj)) for m in manifests]
    artifacts.append(Artifact(KUSTOMIZATION, to_yaml(kustomization(paths))))
    artifacts += [Artifact(path, render(plan)) for path, render in profile.files]
    artifacts.append(Artifact("RUNBOOK.md", profile.runbook(plan, paths)))
    owned = sorted([a.path for a in artifacts] + [MANIFEST])
    artifacts.append(Artifact(MANIFEST, manifest_text(owned)))
    return artifacts


def kustomization(paths: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": paths}


def manifest_text(paths: list[str]) -> str:
    header = "# Files paddlegen wrote here and may replace or remove; it touches no other file.\n"
    return header + "".join(f"{path}\n" for path in paths)
