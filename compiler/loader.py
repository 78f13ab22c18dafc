"""Safe YAML loading that remembers where every key and value came from.

ruamel.yaml only *composes* the node graph here; this module builds plain dicts, lists and scalars
from it itself, so no tag can construct an object, duplicate keys and alias bombs are caught, and
each value's file:line:column is kept for error messages.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from paddlegen.compiler.problems import Position, Problem, SpecError, dotted

MAX_BYTES = 1 << 20  # a spec is a few kilobytes; refuse multi-megabyte input before parsing it
MAX_NODES = 10_000  # nodes after alias expansion: stops "billion laughs" long before it hurts
MAX_DEPTH = 64

Path = tuple[str | int, ...]

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null")}


@dataclass(frozen=True)
class Document:
    """A YAML mapping as plain data, with the position of each value and each mapping key."""

    data: dict[str, Any]
    values: dict[Path, Position] = field(default_factory=dict)
    keys: dict[Path, Position] = field(default_factory=dict)

    def position(self, path: Path) -> Position:
        """Where `path` was written, or its closest written ancestor."""
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None:
                return found
        return Position(next(iter(self.values.values())).file, 1, 1)

    def key_position(self, path: Path) -> Position:
        return self.keys.get(path) or self.position(path)


def load_text(raw: bytes, filename: str) -> Document:
    """Parse one YAML document whose root is a mapping; raise SpecError on anything else."""
    start = Position(filename, 1, 1)
    if len(raw) > MAX_BYTES:
        fail(start, "yaml-size", f"file is {len(raw)} bytes; a spec may be at most {MAX_BYTES}")
    text = decode(raw, filename)
    if not text.strip():
        fail(start, "yaml-empty", "file is empty; expected a TrainingJob spec mapping")
    nodes, constructor = compose(text, filename)
    if len(nodes) != 1:
        second = nodes[1].start_mark if len(nodes) > 1 else None
        where = mark_position(second, filename) if second else start
        fail(where, "yaml-documents", f"expected one YAML document, found {len(nodes)}")
    builder = _Builder(filename, constructor)
    data = builder.build(nodes[0], ())
    if not isinstance(data, dict):
        fail(start, "yaml-root", f"the root must be a mapping, not {type_name(data)}")
    if builder.problems:
        raise SpecError(builder.problems)
    return Document(data, builder.values, builder.keys)


def decode(raw: bytes, filename: str) -> str:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        fail(Position(filename, line, column), "yaml-encoding", "not UTF-8 text")
    if "\x00" in text:
        index = text.index("\x00")
        line = text.count("\n", 0, index) + 1
        fail(Position(filename, line, index - text.rfind("\n", 0, index)), "yaml-encoding",
             "binary data (NUL byte) in a YAML file")
    return text


def compose(text: str, filename: str) -> tuple[list[Any], Any]:
    """The node graphs of every document, and a safe constructor bound to their loader."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="safe", pure=True)
    try:
        return list(yaml.compose_all(io.StringIO(text))), yaml.constructor
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = mark_position(mark, filename) if mark else Position(filename, 1, 1)
        fail(where, "yaml-syntax", f"invalid YAML: {error.problem or error.context}")
    except YAMLError as error:
        fail(Position(filename, 1, 1), "yaml-syntax", f"invalid YAML: {error}")
    except RecursionError:
        fail(Position(filename, 1, 1), "yaml-depth", "YAML nested too deeply")


class _Builder:
    """Turns a composed node graph into plain data, collecting positions and problems."""

    def __init__(self, filename: str, constructor: Any) -> None:
        self.filename = filename
        self.constructor = constructor
        self.values: dict[Path, Position] = {}
        self.keys: dict[Path, Position] = {}
        self.problems: list[Problem] = []
        self.count = 0

    def problem(self, node: Any, path: Path, rule: str, message: str) -> None:
        self.problems.append(Problem(self.where(node), dotted(path), rule, message))

    def where(self, node: Any) -> Position:
        return mark_position(node.start_mark, self.filename)

    def build(self, node: Any, path: Path) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            fail(self.where(node), "yaml-size",
                 f"more than {MAX_NODES} YAML nodes (an alias bomb?); refusing to expand")
        if len(path) > MAX_DEPTH:
            fail(self.where(node), "yaml-depth", f"nested deeper than {MAX_DEPTH} levels")
        self.values[path] = self.where(node)
        tag = str(getattr(node.tag, "value", node.tag))
        kind = node.id
        if kind == "mapping" and tag == f"{_TAG}map":
            return self.mapping(node, path)
        if kind == "sequence" and tag == f"{_TAG}seq":
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        if kind == "scalar" and tag in _SCALAR_TAGS:
            return self.constructor.construct_object(node)
        if kind == "scalar" and tag == f"{_TAG}timestamp":
            return node.value  # a date-like string; the spec has no dates
        self.problem(node, path, "yaml-tag", f"YAML tag {tag!r} is not allowed in a spec")
        return None

    def mapping(self, node: Any, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.id != "scalar" or str(getattr(key_node.tag, "value", key_node.tag)) != (
                f"{_TAG}str"
            ):
                what = "a merge key '<<'" if key_node.value == "<<" else "a non-string key"
                self.problem(key_node, path, "yaml-key", f"{what} is not allowed in a spec")
                continue
            key = key_node.value
            if key in out:
                first = self.keys[(*path, key)]
                self.problem(key_node, (*path, key), "yaml-duplicate-key",
                             f"duplicate key (first defined at line {first.line})")
                continue
            self.keys[(*path, key)] = self.where(key_node)
            out[key] = self.build(value_node, (*path, key))
        return out


def mark_position(mark: Any, filename: str) -> Position:
    return Position(filename, mark.line + 1, mark.column + 1)


def fail(position: Position, rule: str, message: str) -> Any:
    raise SpecError([Problem(position, "", rule, message)])


def type_name(value: object) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def walk(data: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, leaf value) pair of nested dicts and lists."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from walk(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from walk(value, (*path, index))
    else:
        yield path, data
