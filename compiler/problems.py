"""Problems found in a spec, each tied to a file position, and the exception that carries them."""

from __future__ import annotations

import difflib
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
# The rules of an output tree that `check` (or `build --check`) cannot compare with its spec,
# and of one that is not what its spec compiles to.
TREE_RULE = "output-tree"
DRIFT_RULE = "drift"
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


@dataclass(frozen=True)
class TreeProblem(Problem):
    """A problem of an output tree (TREE_RULE, DRIFT_RULE), placed at line 1 of its spec (or of
    the tree's manifest where the spec is not known) for the formats that need a file; printed
    as paddlegen's own line, the message alone."""

    @classmethod
    def at(cls, file: str, rule: str, message: str) -> TreeProblem:
        return cls(Position(file, 1, 1), "", rule, message)

    def __str__(self) -> str:
        return printable(f"paddlegen: {self.message}")


class SpecError(Exception):
    """The spec (or its YAML) is invalid; carries every problem found, in file order."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(problems, key=lambda p: (p.position, p.path)))
        super().__init__("\n".join(map(str, self.problems)))


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """'; did you mean 'x'?' for the choice closest to `word`, or '' if none is close."""
    text, names = str(word), list(choices)
    # difflib indexes every character of the word, tens of megabytes for a huge key; and a word
    # over 3 times as long as every choice has a ratio under 0.5 to each, so none is close
    if len(text) > 3 * max(map(len, names), default=0):
        return ""
    close = difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


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


def encodable(text: str) -> str:
    """`text` as any stream can encode it: bytes of a file name that were not UTF-8 (which
    Python keeps as lone surrogates) written as \\xNN, other lone surrogates as \\uNNNN.
    Everything else is kept: for data (JSON, YAML), which escapes what it must itself."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def printable(text: str) -> str:
    """`text` as a terminal shows it, character for character, on one line: what `encodable`
    escapes, and every character that is not printable (str.isprintable: C0 and C1 controls
    and DEL, so no escape sequence (CSI, OSC) reaches the terminal; line breaks, so no value
    makes a line of its own; format characters such as U+202E) as Python writes it in a
    string, \\x1b, \\n, \\x9b, \\u202e. Printable text, non-ASCII too (é, 中), is kept. The one
    escaping of every text output: problem lines, `explain`, messages, workflow commands."""
    text = encodable(text)
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def printable_lines(text: str) -> str:
    """Text of several lines (a diff) with each line printable, its line breaks kept."""
    return "\n".join(map(printable, text.split("\n")))
