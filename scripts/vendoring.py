"""What the vendoring scripts beside this file share (maintainer tools, kept out of the package):
the pin check of a source file, the walk over a schema's subschemas, the definitions a root
reaches, the compact JSON they write, and the comparison behind their --check mode.

scripts/vendor_kubernetes.py writes schema/kubernetes/, scripts/vendor_kubeflow.py
schema/kubeflow/; each directory's ORIGIN.md says where its files come from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
# paddlegen.schema's directory, which holds the vendored data.
SCHEMA = ROOT / "schema"

Schema = dict[str, Any]


class VendorError(Exception):
    """A source that cannot be vendored as it is. Nothing is written."""


# --- pins -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """A source file, pinned by its content."""

    name: str  # what the file is: a requirement, or a file of a release
    sha256: str


def check_pin(path: Path, pin: Pin, *, accept_other: bool = False) -> str:
    """The file's sha256, which must be the pinned one unless `accept_other` (a refresh)."""
    # Another file under the same name would silently vendor another schema.
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pin.sha256 and not accept_other:
        raise VendorError(f"{path.name}: sha256 {digest}, not the pinned {pin.sha256} of "
                          f"{pin.name}")
    return digest


# --- walking a schema's subschemas -----------------------------------------------------------


@dataclass(frozen=True)
class Keywords:
    """The keywords a source's schemas may hold: where their subschemas sit, and which hold
    none. A keyword in neither stops the walk, as it might hold subschemas that would be
    copied without being changed."""

    one: frozenset[str]  # the value is a subschema
    listed: frozenset[str]  # a list of subschemas
    named: frozenset[str]  # name -> subschema; the names are no schemas (a field may be called
    # description)
    plain: frozenset[str]  # no subschema
    annotation_prefix: str  # keywords with this prefix hold none either: "x-", "x-kubernetes-"


# JSON Schema's applicators that the vendored sources use.
ONE_SUBSCHEMA = frozenset({"items", "additionalProperties", "not"})
LIST_OF_SUBSCHEMAS = frozenset({"allOf", "anyOf", "oneOf"})


def map_schemas(schema: Any, change: Callable[[Schema, str], Schema], keywords: Keywords,
                where: str = "#") -> Any:
    """`schema` with `change` applied to each of its subschemas, deepest first, and then to
    itself. `change` gets each one rebuilt from its changed subschemas, and its JSON pointer
    (for messages); boolean schemas stay as they are."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict):
        raise VendorError(f"{where}: a schema that is neither an object nor a boolean")
    mapped: Schema = {}
    for keyword, value in schema.items():
        at = f"{where}/{keyword}"
        if keyword in keywords.one:
            value = map_schemas(value, change, keywords, at)
        elif keyword in keywords.listed:
            value = [map_schemas(item, change, keywords, f"{at}/{index}")
                     for index, item in enumerate(value)]
        elif keyword in keywords.named:
            value = {name: map_schemas(item, change, keywords, f"{at}/{name}")
                     for name, item in value.items()}
        elif keyword not in keywords.plain and not keyword.startswith(keywords.annotation_prefix):
            raise VendorError(f"{where}: unknown keyword {keyword!r}: say in the script whether "
                              "it holds subschemas")
        mapped[keyword] = value
    return change(mapped, where)


def without(*dropped: str) -> Callable[[Schema, str], Schema]:
    """A change for map_schemas that removes these keywords from every schema (never property
    names)."""
    def change(schema: Schema, where: str) -> Schema:
        return {keyword: value for keyword, value in schema.items() if keyword not in dropped}
    return change


# --- the definitions a root reaches ----------------------------------------------------------


def refs(node: Any, prefix: str) -> Iterator[str]:
    """The definition names referred to anywhere in a schema fragment, each ref being
    `prefix` + name."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        # A property may be *named* "$ref" (apiextensions' JSONSchemaProps): its value is a dict.
        if isinstance(ref, str):
            if not ref.startswith(prefix):
                raise VendorError(f"not a local definition: {ref}")
            yield ref.removeprefix(prefix)
        for value in node.values():
            yield from refs(value, prefix)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item, prefix)


def reached(definitions: Schema, names: Iterable[str], prefix: str) -> set[str]:
    """The named definitions and every definition they reach."""
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        if name not in definitions:
            raise VendorError(f"{name} is referred to but not defined")
        seen.add(name)
        pending.extend(refs(definitions[name], prefix))
    return seen


# --- output ---------------------------------------------------------------------------------


def checked(schema: Schema) -> Schema:
    """The schema, valid under Draft 2020-12 (which paddlegen validates with) and with a root
    that resolves (a bad pointer only fails on first use)."""
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).is_valid({})
    return schema


def compact(schema: Schema) -> str:
    """The text of a vendored file: compact, sorted, ASCII, with a final newline."""
    return json.dumps(schema, separators=(",", ":"), sort_keys=True, ensure_ascii=True) + "\n"


def out_of_date(expected: Mapping[Path, str], present: Iterable[Path]) -> list[str]:
    """How the files on disk differ from what a script would write: each file missing or not
    byte for byte the same, and each file present that it would remove."""
    problems = []
    for path, text in sorted(expected.items()):
        if not path.is_file():
            problems.append(f"{_shown(path)}: missing")
        elif path.read_bytes() != text.encode("utf-8"):
            problems.append(f"{_shown(path)}: differs")
    problems.extend(f"{_shown(path)}: would be removed"
                    for path in sorted(set(present) - expected.keys()))
    return problems


def report(problems: list[str], checked_files: int) -> int:
    """The exit status of a --check run, after saying what it found."""
    for problem in problems:
        print(problem)
    if problems:
        print(f"out of date: {len(problems)} difference(s); run the script without --check")
        return 1
    print(f"up to date ({checked_files} checked)")
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
