"""A file of the output tree, and the tree's fixed names (shared by the compiler and the writer,
which then need not import each other)."""

from __future__ import annotations

import re
from dataclasses import dataclass

MANIFEST = ".paddlegen-manifest"  # the files paddlegen owns in out/
K8S_DIR = "k8s"
KUSTOMIZATION = "kustomization.yaml"

# The build options that change the output are recorded in the manifest, each as a comment line
# `# <name>: <value>` written only when the option was given, so that `check` rebuilds the tree
# as it was built. Today there is one: --kube-version.
KUBE_VERSION_OPTION = "kube-version"
KUBE_RELEASE = re.compile(r"1\.\d{1,3}\Z")  # the shape of a recorded --kube-version: 1.N


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the output directory, '/'-separated
    text: str


def option_line(name: str, value: str) -> str:
    """The manifest's line that records a build option."""
    return f"# {name}: {value}\n"


def option_values(lines: list[str], name: str) -> list[str]:
    """Every value the manifest's lines record for a build option, as written (untrusted)."""
    prefix = f"# {name}:"
    return [line[len(prefix):].strip() for line in lines if line.startswith(prefix)]
