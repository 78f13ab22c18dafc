"""A file of the output tree, and the tree's fixed names (shared by the compiler and the writer,
which then need not import each other)."""

from __future__ import annotations

from dataclasses import dataclass

MANIFEST = ".paddlegen-manifest"  # the files paddlegen owns in out/
K8S_DIR = "k8s"
KUSTOMIZATION = "kustomization.yaml"


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the output directory, '/'-separated
    text: str
