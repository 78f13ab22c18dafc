"""Problems found in a spec, each tied to a file position, and the exception that carries them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning"]
# The rule of a generated object that breaks its release's schema (compiler/build.py).
SCHEMA_RULE = "kube-schema"


@dataclass(frozen=True, order=True)
class Position:
    file: str
    line: int
    column: int


@dataclass(frozen=True)
class Problem:
    position: Position
    path: str  # dotted spec path such as "training.port"; empty for the whole file
    rule: str  # stable identifier of the broken rule
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.position.file}:{self.position.line}:{self.position.column}"
        what = f"{self.path}: {self.message}" if self.path else self.message
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{where}: {prefix}{what} [{self.rule}]"

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self.position), "path": self.path, "rule": self.rule,
                "severity": self.severity, "message": self.message}


class SpecError(Exception):
    """The spec (or its YAML) is invalid; carries every problem found, in file order."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(problems, key=lambda p: (p.position, p.path)))
        super().__init__("\n".join(map(str, self.problems)))


def dotted(path: tuple[str | int, ...]) -> str:
    """("training", "port") -> "training.port"; list indices as [i]."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
