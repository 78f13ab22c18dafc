"""Safe YAML loading that remembers where every key and value came from.

ruamel.yaml only *parses* here: this module builds plain dicts, lists and scalars from the parser's
event stream itself, without recursion. So no tag can construct an object, duplicate keys are
caught, and nesting depth and node count (aliases expanded: "billion laughs") are bounded while
reading, before any work grows with them. Each value's file:line:column is kept for messages.

The events come from libyaml (ruamel.yaml.clib) where it reads the text as ruamel's own YAML 1.2
parser does, which is about ten times faster; from ruamel's parser otherwise, and for every
message about bad syntax, so positions and wording never depend on which one ran.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from paddlegen.compiler.problems import Position, Problem, SpecError, dotted, elided, quoted

MAX_BYTES = 1 << 20  # a spec is a few kilobytes; refuse multi-megabyte input before parsing it
MAX_NODES = 10_000  # nodes after alias expansion
MAX_DEPTH = 64
MAX_NUMBER_LENGTH = 32  # characters of a number: more than any int64 or double needs

Path = tuple[str | int, ...]

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null")}

# The rules of this module, for the rules reference.
LOADER_RULES = {
    "io": "The file cannot be read (missing, a directory, no permission).",
    "yaml-size": f"The file is larger than {MAX_BYTES} bytes, or holds more than {MAX_NODES} "
                 "YAML nodes once aliases are expanded (an alias bomb).",
    "yaml-depth": f"Collections nested deeper than {MAX_DEPTH} levels.",
    "yaml-encoding": "The file is not UTF-8 text, or holds NUL bytes.",
    "yaml-empty": "The file is empty or holds only comments.",
    "yaml-syntax": "The file is not well-formed YAML.",
    "yaml-documents": "The file holds more than one YAML document.",
    "yaml-root": "The document is not a mapping.",
    "yaml-scalar": f"A value its tag cannot read (`!!int abc`, `!!bool maybe`), or a number of "
                   f"more than {MAX_NUMBER_LENGTH} characters.",
    "yaml-tag": "A tag other than the plain YAML types (such as !!python/object or !Ref): a spec "
                "never constructs objects.",
    "yaml-key": "A mapping key that is not a plain string, or a merge key '<<'.",
    "yaml-duplicate-key": "The same key twice in one mapping (YAML would keep only one).",
    "yaml-1.1-boolean": "An unquoted yes/no/on/off/y/n: a string to paddlegen (YAML 1.2) but a "
                        "boolean to YAML 1.1 tools such as kubectl and kube-aws.",
}


@dataclass(frozen=True)
class Document:
    """A YAML mapping as plain data, with the position of each value and each mapping key."""

    data: dict[str, Any]
    values: dict[Path, Position] = field(default_factory=dict)
    keys: dict[Path, Position] = field(default_factory=dict)
    texts: dict[Path, str] = field(default_factory=dict)  # as written, for non-string scalars

    @property
    def filename(self) -> str:
        """The file problems point into: the user's spec, even after merging onto a profile."""
        return self.values[()].file

    def position(self, path: Path) -> Position:
        """Where `path` was written in this file, or its closest ancestor written there."""
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None and found.file == self.filename:
                return found
        return Position(self.filename, 1, 1)

    def key_position(self, path: Path) -> Position:
        found = self.keys.get(path)
        return found if found and found.file == self.filename else self.position(path)


def load_text(raw: bytes, filename: str, libyaml: bool = True) -> Document:
    """Parse one YAML document whose root is a mapping; raise SpecError on anything else.
    `libyaml=False` reads with ruamel's parser alone (the tests compare the two)."""
    start = Position(filename, 1, 1)
    if len(raw) > MAX_BYTES:
        fail(start, "yaml-size", f"file is {len(raw)} bytes; a spec may be at most {MAX_BYTES}")
    text = decode(raw, filename)
    parser = libyaml_parser(text) if libyaml else None
    if parser is not None:
        try:
            return _document(filename, text, libyaml_events(parser))
        except (_LibyamlRefused, SpecError):
            pass  # ruamel's parser reads it again, and every problem is worded as it finds it
    return _document(filename, text, None)


def _document(filename: str, text: str, events: Iterator[Any] | None) -> Document:
    """The document read from `events`, or from ruamel's parser of `text` if None."""
    builder = _Builder(filename, None if events else _ruamel_yaml())
    data = builder.read(text, events)
    if not isinstance(data, dict):
        fail(builder.values.get((), Position(filename, 1, 1)), "yaml-root",
             f"the root must be a mapping, not {type_name(data)}")
    if builder.problems:
        raise SpecError(builder.problems)
    return Document(data, builder.values, builder.keys, builder.texts)


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


@dataclass
class _Collection:
    value: dict[str, Any] | list[Any]
    path: Path
    anchor: str | None
    nodes: int = 1  # nodes inside, aliases expanded (for the anchor's weight)
    key: str | None = None  # mappings: the key read, waiting for its value
    drop: bool = False  # the key was refused: read its value, then drop it


class _Builder:
    """Turns the parser's events into plain data, collecting positions and problems."""

    def __init__(self, filename: str, yaml: Any | None) -> None:
        # ruamel's YAML for its parser, whose resolver follows the text's %YAML directive; None
        # for libyaml's events, whose texts have none: YAML 1.2 then, with results kept.
        self.yaml = yaml or _yaml12()
        self.implicit_tag = _implicit_tag_12 if yaml is None else self.uncached_implicit_tag
        self.filename = filename
        self.values: dict[Path, Position] = {}
        self.keys: dict[Path, Position] = {}
        self.texts: dict[Path, str] = {}
        self.problems: list[Problem] = []
        self.anchors: dict[str, tuple[Any, int]] = {}  # value and its node count
        self.total = 0

    def read(self, text: str, events: Iterator[Any] | None) -> Any:
        from ruamel.yaml.error import MarkedYAMLError, YAMLError

        if events is not None:
            return self.events(events)
        try:
            return self.events(self.yaml.parse(io.StringIO(text)))
        except MarkedYAMLError as error:
            # Where the parser failed; but for an unclosed quote or bracket, where it opened
            # (the context mark), since the failure shows only much later.
            context = error.context or ""
            unclosed = "flow" in context or "quoted" in context
            mark = error.context_mark if unclosed and error.context_mark else error.problem_mark
            # elided: the problem may quote a token, such as an undefined tag handle, whole
            what = "; ".join(elided(part) for part in (error.context, error.problem) if part)
            where = self.where(mark) if mark else Position(self.filename, 1, 1)
            fail(where, "yaml-syntax", f"invalid YAML: {what}")
        except YAMLError as error:
            fail(Position(self.filename, 1, 1), "yaml-syntax", f"invalid YAML: {error}")
        except AssertionError as error:  # ruamel's check of a %YAML directive, numbers quoted
            fail(Position(self.filename, 1, 1), "yaml-syntax",
                 f"invalid YAML: {elided(str(error))}; a spec is YAML 1.2 and needs no %YAML "
                 "directive")
        except (ValueError, OverflowError):
            # ruamel's own int() and chr(): a %YAML version of 5000 digits, an escape "\UFFFFFFFF"
            fail(Position(self.filename, 1, 1), "yaml-syntax",
                 "invalid YAML: a %YAML version number or an escape out of range")

    def events(self, stream: Iterator[Any]) -> Any:
        stack: list[_Collection] = []
        documents, root = 0, None
        for event in stream:
            kind = type(event).__name__
            if kind == "DocumentStartEvent":
                documents += 1
                if documents > 1:
                    fail(self.where(event.start_mark), "yaml-documents",
                         "expected one YAML document, found several")
            elif kind in ("ScalarEvent", "AliasEvent", "MappingStartEvent", "SequenceStartEvent"):
                if stack and isinstance(stack[-1].value, dict) and stack[-1].key is None:
                    # a mapping alternates key and value events
                    self.key(stack[-1], event)
                    continue
                path = self.next_path(stack)
                if kind in ("MappingStartEvent", "SequenceStartEvent"):
                    self.check_depth(path, event)
                    self.count(1)
                    self.values.setdefault(path, self.where(event.start_mark))
                    self.check_tag(event, "map" if kind == "MappingStartEvent" else "seq", path)
                    stack.append(_Collection({} if kind == "MappingStartEvent" else [], path,
                                             event.anchor))
                    continue
                value, nodes = self.leaf(event, path)
                root = self.attach(stack, value, nodes, root)
            elif kind in ("MappingEndEvent", "SequenceEndEvent"):
                done = stack.pop()
                if done.anchor:
                    self.anchors[done.anchor] = (done.value, done.nodes)
                root = self.attach(stack, done.value, done.nodes, root, counted=True)
        if documents == 0:
            fail(Position(self.filename, 1, 1), "yaml-empty",
                 "file is empty; expected a TrainingJob spec mapping")
        return root

    def next_path(self, stack: list[_Collection]) -> Path:
        if not stack:
            return ()
        top = stack[-1]
        if isinstance(top.value, dict):
            assert top.key is not None  # a mapping's value event follows its key event
            return (*top.path, top.key)
        return (*top.path, len(top.value))

    def attach(self, stack: list[_Collection], value: Any, nodes: int, root: Any,
               counted: bool = False) -> Any:
        """Put a finished value into its parent; count its nodes once against the limit."""
        if not counted:
            self.count(nodes)
        if not stack:
            return value
        top = stack[-1]
        top.nodes += nodes
        if isinstance(top.value, dict):
            if not top.drop:
                assert top.key is not None
                top.value[top.key] = value
            top.key, top.drop = None, False
        else:
            top.value.append(value)
        return root

    def count(self, nodes: int) -> None:
        self.total += nodes
        if self.total > MAX_NODES:
            fail(Position(self.filename, 1, 1), "yaml-size",
                 f"more than {MAX_NODES} YAML nodes (an alias bomb?); refusing to expand")

    def check_depth(self, path: Path, event: Any) -> None:
        if len(path) >= MAX_DEPTH:
            fail(self.where(event.start_mark), "yaml-depth",
                 f"nested deeper than {MAX_DEPTH} levels")

    def key(self, mapping: _Collection, event: Any) -> None:
        if type(event).__name__ != "ScalarEvent":
            fail(self.where(event.start_mark), "yaml-key",
                 "a key that is a collection or an alias is not allowed in a spec")
        mapping.key = event.value
        path = (*mapping.path, event.value)
        if self.tag(event, "str") != f"{_TAG}str":
            what = "a merge key '<<'" if event.value == "<<" else "a non-string key"
            self.problem(event, mapping.path, "yaml-key", f"{what} is not allowed in a spec")
            mapping.drop = True
        elif event.value in mapping.value or path in self.keys:
            first = self.keys[path]
            self.problem(event, path, "yaml-duplicate-key",
                         f"duplicate key (first defined at line {first.line})")
            mapping.drop = True
        else:
            self.keys[path] = self.where(event.start_mark)

    def leaf(self, event: Any, path: Path) -> tuple[Any, int]:
        """A scalar's value, or an alias's (and how many nodes it stands for)."""
        self.values.setdefault(path, self.where(event.start_mark))
        if type(event).__name__ == "AliasEvent":
            if event.anchor not in self.anchors:
                self.problem(event, path, "yaml-syntax",
                             f"unknown alias *{elided(event.anchor)}")
                return None, 1
            return self.anchors[event.anchor]
        tag = self.tag(event, "str")
        if tag not in _SCALAR_TAGS and tag != f"{_TAG}timestamp":
            self.problem(event, path, "yaml-tag",
                         f"YAML tag {quoted(tag)} is not allowed in a spec")
            return None, 1
        if tag == f"{_TAG}timestamp":
            value: Any = event.value  # a date-like string; the spec has no dates
        elif tag == f"{_TAG}str":
            value = event.value
            if not event.style and yaml11_bool(event.value):
                self.problem(event, path, "yaml-1.1-boolean",
                             f"{quoted(event.value)} is a string here but a boolean to YAML 1.1 "
                             f"tools (kubectl, kube-aws): quote it, or write true/false for a "
                             f"boolean")
        else:
            self.texts[path] = event.value
            value = self.construct(tag, event, path)
        if event.anchor:
            self.anchors[event.anchor] = (value, 1)
        return value, 1

    def tag(self, event: Any, kind: str) -> str:
        tag = event.tag
        if tag is None or str(tag) == "!":
            return self.implicit_tag(kind, getattr(event, "value", None), event.implicit)
        return str(tag)

    def uncached_implicit_tag(self, kind: str, value: str | None, implicit: Any) -> str:
        return _resolve(self.yaml.resolver, kind, value, implicit)

    def check_tag(self, event: Any, kind: str, path: Path) -> None:
        tag = self.tag(event, kind)
        if tag != f"{_TAG}{kind}":
            self.problem(event, path, "yaml-tag",
                         f"YAML tag {quoted(tag)} is not allowed in a spec")

    def construct(self, tag: str, event: Any, path: Path) -> Any:
        """A number, boolean or null; None (and a problem) for what its tag cannot read, or a
        number longer than any field takes (Python would spend time, or refuse, converting it)."""
        from ruamel.yaml.nodes import ScalarNode

        kind = tag.removeprefix(_TAG)
        if kind in ("int", "float") and len(event.value) > MAX_NUMBER_LENGTH:
            self.problem(event, path, "yaml-scalar",
                         f"a number of {len(event.value)} characters; no field takes more "
                         f"than {MAX_NUMBER_LENGTH}")
            return None
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark,
                          style=event.style or None)
        constructor = self.yaml.constructor
        try:
            # its scalar constructor itself: construct_object would keep every node it reads
            return constructor.yaml_constructors[tag](constructor, node)
        except (ValueError, LookupError, TypeError, ArithmeticError):
            self.problem(event, path, "yaml-scalar",
                         f"{quoted(event.value)} is not a valid !!{kind}")
            return None

    def problem(self, event: Any, path: Path, rule: str, message: str) -> None:
        self.problems.append(Problem(self.where(event.start_mark), dotted(path), rule, message))

    def where(self, mark: Any) -> Position:
        return Position(self.filename, mark.line + 1, mark.column + 1)


def _ruamel_yaml() -> Any:
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True)


@cache
def _yaml12() -> Any:
    """The resolver and constructor for libyaml's events; it never parses, so it keeps no state
    from one text to the next."""
    return _ruamel_yaml()


def _resolve(resolver: Any, kind: str, value: str | None, implicit: Any) -> str:
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    node = {"str": ScalarNode, "map": MappingNode, "seq": SequenceNode}[kind]
    resolved = resolver.resolve(node, value, implicit)
    return str(getattr(resolved, "value", resolved))


@lru_cache(maxsize=4096)
def _implicit_tag_12(kind: str, value: str | None, implicit: Any) -> str:
    return _resolve(_yaml12().resolver, kind, value, implicit)


@cache
def _yaml11_resolver() -> Any:
    """YAML 1.1's resolver; resolving keeps no state from one value to the next."""
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=(1, 1))


@lru_cache(maxsize=4096)
def yaml11_bool(value: str) -> bool:
    """Whether YAML 1.1 tools (kubectl, kube-aws) read this plain scalar as a boolean."""
    return _resolve(_yaml11_resolver(), "str", value, (True, False)) == f"{_TAG}bool"


# What libyaml (YAML 1.1) may read otherwise than ruamel's YAML 1.2 parser: tabs, anchor and
# alias names (1.2 allows more characters in them), block scalars (`|#` is a comment to
# libyaml), %YAML directives; outside ASCII, NEL and the Unicode line and paragraph separators
# (line breaks to libyaml), byte order marks, other non-printable and non-BMP characters.
# Texts with any of these go to ruamel.
_LIBYAML_DIFFERS = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f&*>|\x7f]|^%", re.MULTILINE)


def libyaml_reads_as_ruamel(text: str) -> bool:
    if _LIBYAML_DIFFERS.search(text):
        return False
    return text.isascii() or all(c.isprintable() and c not in "\ufeff" and c < "\U00010000"
                                 for c in set(text) if not c.isascii())


class _LibyamlRefused(Exception):
    """Read the text again with ruamel's parser: libyaml found a syntax error, or an empty value
    (the two place those differently)."""


def libyaml_parser(text: str) -> Any | None:
    """libyaml's parser of `text`, or None where ruamel's must read it (libyaml not installed,
    or text it reads otherwise)."""
    if not libyaml_reads_as_ruamel(text):
        return None
    try:
        from _ruamel_yaml import CParser
    except ImportError:
        return None
    return CParser(text)


def libyaml_events(parser: Any) -> Iterator[Any]:
    from ruamel.yaml.error import YAMLError

    try:
        while parser.check_event():
            event = parser.get_event()
            if getattr(event, "value", None) == "" and not event.style:
                raise _LibyamlRefused
            yield event
    except YAMLError:
        raise _LibyamlRefused from None


def fail(position: Position, rule: str, message: str) -> Any:
    raise SpecError([Problem(position, "", rule, message)])


def type_name(value: object) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
