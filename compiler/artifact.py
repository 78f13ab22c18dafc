"""A file of the output tree, and the tree's fixed names (shared by the compiler and the writer,
which then need not import each other)."""

from __future__ import annotations

import re
from dataclasses import dataclass

MANIFEST = ".paddlegen-manifest"  # the spec out/ was built from, and the files paddlegen owns
# The manifest's first line: without it a .paddlegen-manifest is not one paddlegen wrote, and
# owns nothing (an empty or foreign file marks no tree).
MANIFEST_HEADER = ("# Files paddlegen wrote here and may replace or remove; it touches no other "
                   "file.")
K8S_DIR = "k8s"
KUSTOMIZATION = "kustomization.yaml"
# The manifest's line `# spec: <path>`: the spec the tree was built from, relative to out/.
SPEC_OPTION = "spec"

# The build options that change the output are recorded in the manifest, each as a comment line
# `# <name>: <value>` written only when the option was given, so that `check` rebuilds the tree
# as it was built. Today there is one: --kube-version.
KUBE_VERSION_OPTION = "kube-version"
KUBE_RELEASE = re.compile(r"1\.\d{1,3}\Z")  # the shape of a recorded --kube-version: 1.N


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the output directory, '/'-separated
    text: str
    executable: bool = False  # written with the execute bits (as the umask allows)


def option_line(name: str, value: str) -> str:
    """The manifest's line that records a build option."""
    return f"# {name}: {value}\n"


def option_values(lines: list[str], name: str) -> list[str]:
    """Every value the manifest's lines record for a build option, as written (untrusted)."""
    prefix = f"# {name}:"
    return [line[len(prefix):].strip() for line in lines if line.startswith(prefix)]
