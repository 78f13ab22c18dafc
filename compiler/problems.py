"""Problems found in a spec, each tied to a file position, and the exception that carries them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning"]
# A path into a document (a spec, a generated object): mapping keys and list indices.
FieldPath = tuple[str | int, ...]
# What a check found, before it is placed in a file: where in the document, and what is wrong
# there (a rule's finding in a spec, a schema's in a generated object).
Violation = tuple[FieldPath, str]
# The rule of a generated object that breaks its release's schema (compiler/build.py).
SCHEMA_RULE = "kube-schema"
# The most of a value a message quotes: one spec of huge values must not print megabytes.
QUOTE_LIMIT = 100


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
        # a file name (or key) that is not UTF-8 would not encode on any stream
        return printable(f"{where}: {prefix}{what} [{self.rule}]")

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self.position), "path": self.path, "rule": self.rule,
                "severity": self.severity, "message": self.message}


class SpecError(Exception):
    """The spec (or its YAML) is invalid; carries every problem found, in file order."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(problems, key=lambda p: (p.position, p.path)))
        super().__init__("\n".join(map(str, self.problems)))


def dotted(path: FieldPath) -> str:
    """("training", "port") -> "training.port"; list indices as [i], long keys elided."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (
            f".{elided(part)}" if out else elided(part))
    return out


def elided(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text`, or its first and last characters around '…' when longer than `limit`."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return f"{text[:half]}…{text[-half:]}"


def quoted(value: object) -> str:
    """A value of the user's as a message quotes it: its repr, elided if long."""
    return elided(repr(value))


def printable(text: str) -> str:
    """`text` as any stream can print it: bytes of a file name that were not UTF-8 (which Python
    keeps as lone surrogates) written as \\xNN, other lone surrogates as \\uNNNN."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
