"""What a profile is: one unit of model, defaults, rules, target, derivation, builders, runbook
and explanation. Each profile is a module of paddlegen.profiles; the registry there lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from paddlegen.compiler.kube_objects import Object
from paddlegen.compiler.phases import Phase
from paddlegen.compiler.plan import Meta
from paddlegen.compiler.problems import FieldPath
from paddlegen.compiler.rules import Rule
from paddlegen.compiler.targets import Target
from paddlegen.schema.models import SpecBase


class Plan(Protocol):
    """Every profile's plan names its objects' owner and target."""

    @property
    def meta(self) -> Meta: ...


S = TypeVar("S", bound=SpecBase)
P = TypeVar("P", bound=Plan)


@dataclass(frozen=True)
class Explanation:
    """What `explain` prints: facts as data (--format json), summary rows and notes for text."""

    facts: dict[str, Any]  # includes "processes": what each pod runs
    rows: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileViolation:
    """Where a generated file (not a Kubernetes object) breaks the schema of the tool that
    reads it: its path in the tree, its data, and the path into the data and the message."""

    path: str
    data: dict[str, Any]
    where: FieldPath
    message: str


def no_checks(plan: Any) -> list[FileViolation]:
    return []


@dataclass(frozen=True)
class Profile(Generic[S, P]):
    name: str
    summary: str  # one line: what it deploys, from which seeds
    model: type[S]  # the spec after merging onto the defaults (profiles/<name>.yaml)
    rules: tuple[Rule[S], ...]  # cross-field rules, in report order
    target: Callable[[S], Target]  # the releases the spec deploys with
    derive: Callable[[S], P]
    objects: Callable[[P], list[Object]]  # Kubernetes objects, in apply order
    files: Callable[[P], dict[str, str]]  # the other files (the cluster tool's), by path
    runbook: Callable[[P, list[str]], str]  # plan and manifest paths -> RUNBOOK.md
    explain: Callable[[P], Explanation]
    checks: Callable[[P], list[FileViolation]] = no_checks  # files other tools validate
    # the runbook's phases, which run.sh runs by name; none: a runbook of blocks to paste
    phases: Callable[[P], list[Phase]] | None = None

    @property
    def defaults_file(self) -> str:
        return f"{self.name}.yaml"
