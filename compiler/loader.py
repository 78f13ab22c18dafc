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
from typing import Any, NoReturn

from paddlegen.compiler.problems import (
    FieldPath,
    Position,
    Problem,
    SpecError,
    dotted,
    elided,
    quoted,
)

MAX_BYTES = 1 << 20  # a spec is a few kilobytes; refuse multi-megabyte input before parsing it
MAX_NODES = 10_000  # nodes after alias expansion
MAX_DEPTH = 64
MAX_NUMBER_LENGTH = 32  # characters of a number: more than any int64 or double needs

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
                        "boolean to YAML 1.1 tools such as kubectl and the cluster tools.",
}


@dataclass(frozen=True)
class Document:
    """A YAML mapping as plain data, with the position of each value and each mapping key."""

    data: dict[str, Any]
    values: dict[FieldPath, Position] = field(default_factory=dict)
    keys: dict[FieldPath, Position] = field(default_factory=dict)
    texts: dict[FieldPath, str] = field(default_factory=dict)  # as written, for non-string scalars

    @property
    def filename(self) -> str:
        """The file problems point into: the user's spec, even after merging onto a profile."""
        return self.values[()].file

    def position(self, path: FieldPath) -> Position:
        """Where `path` was written in this file, or its closest ancestor written there."""
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None and found.file == self.filename:
                return found
        return Position(self.filename, 1, 1)

    def key_position(self, path: FieldPath) -> Position:
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
    path: FieldPath
    anchor: str | None
    bracket: int | None  # a flow collection's: where its '[' or '{' is in the text
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
        self.values: dict[FieldPath, Position] = {}
        self.keys: dict[FieldPath, Position] = {}
        self.texts: dict[FieldPath, str] = {}
        self.problems: list[Problem] = []
        self.anchors: dict[str, tuple[Any, int]] = {}  # value and its node count
        self.total = 0
        self.stack: list[_Collection] = []  # the collections open

    def read(self, text: str, events: Iterator[Any] | None) -> Any:
        return self.events(self.parsed(text) if events is None else events)

    def parsed(self, text: str) -> Iterator[Any]:
        """ruamel's events of `text`; where its parser fails, the problem (raised)."""
        for event in parse(text, self.yaml):
            if isinstance(event, Unparsable):
                self.unparsable(text, event.error)
            yield event

    def unparsable(self, text: str, error: Exception) -> NoReturn:
        from ruamel.yaml.error import MarkedYAMLError

        if isinstance(error, MarkedYAMLError):
            self.syntax_error(text, error)
        if isinstance(error, _UnsupportedVersion):
            self.unsupported_version(error.version)
        if isinstance(error, (ValueError, OverflowError)):
            # ruamel's own int() and chr(): a %YAML version of 5000 digits, an escape
            # "\UFFFFFFFF"
            fail(Position(self.filename, 1, 1), "yaml-syntax",
                 "invalid YAML: a %YAML version number or an escape out of range")
        fail(Position(self.filename, 1, 1), "yaml-syntax", f"invalid YAML: {error}")

    def unsupported_version(self, version: tuple[int, ...]) -> NoReturn:
        fail(Position(self.filename, 1, 1), "yaml-syntax",
             f"invalid YAML: {elided(_UnsupportedVersion(version).message)}; a spec is YAML 1.2 "
             "and needs no %YAML directive")

    def syntax_error(self, text: str, error: Any) -> NoReturn:
        """Where the parser failed; but for an unclosed bracket or quote (or a bad escape in a
        quote), where it opened (the error's context mark), since the failure shows only much
        later. ruamel's error names the construct only in its wording; its context mark,
        against the flow collections open here or what its scanner reads there, tells which."""
        mark = error.problem_mark
        opened = error.context_mark
        if opened is not None and (
                any(c.bracket == opened.index for c in self.stack)
                or quoted_scalar_breaks(text, opened.index)):
            mark = opened
        # elided: the problem may quote a token, such as an undefined tag handle, whole
        what = "; ".join(elided(part) for part in (error.context, error.problem) if part)
        where = self.where(mark) if mark else Position(self.filename, 1, 1)
        fail(where, "yaml-syntax", f"invalid YAML: {what}")

    def events(self, stream: Iterator[Any]) -> Any:
        from ruamel.yaml.events import (
            AliasEvent,
            CollectionEndEvent,
            CollectionStartEvent,
            DocumentStartEvent,
            MappingStartEvent,
            NodeEvent,
            ScalarEvent,
        )

        stack = self.stack
        documents, root = 0, None
        for event in stream:
            if isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    fail(self.where(event.start_mark), "yaml-documents",
                         "expected one YAML document, found several")
            elif isinstance(event, NodeEvent):  # a scalar, an alias, a collection's start
                if stack and isinstance(stack[-1].value, dict) and stack[-1].key is None:
                    # a mapping alternates key and value events
                    self.key(stack[-1], event, isinstance(event, ScalarEvent))
                    continue
                path = self.next_path(stack)
                if isinstance(event, CollectionStartEvent):
                    mapping = isinstance(event, MappingStartEvent)
                    self.check_depth(path, event)
                    self.count(1)
                    self.values.setdefault(path, self.where(event.start_mark))
                    self.check_tag(event, "map" if mapping else "seq", path)
                    # a flow collection's event ends after its bracket
                    bracket = event.end_mark.index - 1 if event.flow_style else None
                    stack.append(_Collection({} if mapping else [], path, event.anchor, bracket))
                    continue
                value, nodes = self.leaf(event, path, isinstance(event, AliasEvent))
                root = self.attach(stack, value, nodes, root)
            elif isinstance(event, CollectionEndEvent):
                done = stack.pop()
                if done.anchor:
                    self.anchors[done.anchor] = (done.value, done.nodes)
                root = self.attach(stack, done.value, done.nodes, root, counted=True)
        if documents == 0:
            fail(Position(self.filename, 1, 1), "yaml-empty",
                 "file is empty; expected a TrainingJob spec mapping")
        return root

    def next_path(self, stack: list[_Collection]) -> FieldPath:
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

    def check_depth(self, path: FieldPath, event: Any) -> None:
        if len(path) >= MAX_DEPTH:
            fail(self.where(event.start_mark), "yaml-depth",
                 f"nested deeper than {MAX_DEPTH} levels")

    def key(self, mapping: _Collection, event: Any, scalar: bool) -> None:
        if not scalar:
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

    def leaf(self, event: Any, path: FieldPath, alias: bool) -> tuple[Any, int]:
        """A scalar's value, or an alias's (and how many nodes it stands for)."""
        self.values.setdefault(path, self.where(event.start_mark))
        if alias:
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
                             f"tools (kubectl, cluster tools): quote it, or write true/false for a "
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
        if kind == "str" and implicit[0]:  # a plain scalar: resolved by the version's rules
            version = tuple(self.yaml.resolver.processing_version)
            if version not in _VERSIONS:
                # after a %YAML directive inside a document, which ruamel's scanner reads
                # (before its parser refuses it): its resolver has no rules for the version
                self.unsupported_version(version)
        return _resolve(self.yaml.resolver, kind, value, implicit)

    def check_tag(self, event: Any, kind: str, path: FieldPath) -> None:
        tag = self.tag(event, kind)
        if tag != f"{_TAG}{kind}":
            self.problem(event, path, "yaml-tag",
                         f"YAML tag {quoted(tag)} is not allowed in a spec")

    def construct(self, tag: str, event: Any, path: FieldPath) -> Any:
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
        except (ValueError, LookupError):  # int('abc'), a boolean of another word, ''[0]
            self.problem(event, path, "yaml-scalar",
                         f"{quoted(event.value)} is not a valid !!{kind}")
            return None

    def problem(self, event: Any, path: FieldPath, rule: str, message: str) -> None:
        self.problems.append(Problem(self.where(event.start_mark), dotted(path), rule, message))

    def where(self, mark: Any) -> Position:
        return Position(self.filename, mark.line + 1, mark.column + 1)


def _ruamel_yaml() -> Any:
    return _yaml_class()(typ="safe", pure=True)


@dataclass(frozen=True)
class Unparsable:
    """Where ruamel's parser stopped reading a text: the error it raised, as a value."""

    error: Exception


def parse(text: str, yaml: Any | None = None) -> Iterator[Any]:
    """ruamel's events of `text` (read by `yaml`, a new YAML by default), then, if its parser
    fails, an Unparsable, and nothing more. Only the parser runs in the `try`, so an exception
    of the caller's is never taken for bad YAML; and only what the parser raises on bad input
    is caught: its YAMLError, a %YAML version it has no rules for, and the ValueError and
    OverflowError of its own int() and chr()."""
    from ruamel.yaml.error import YAMLError

    stream = (yaml or _ruamel_yaml()).parse(io.StringIO(text))
    while True:
        try:
            event = next(stream)
        except StopIteration:
            return
        except (YAMLError, _UnsupportedVersion) as error:
            yield Unparsable(error)
            return
        except (ValueError, OverflowError) as error:
            yield Unparsable(error)
            return
        yield event


_VERSIONS = ((1, 1), (1, 2))  # the YAML versions ruamel has rules for


class _UnsupportedVersion(Exception):
    """A %YAML directive of a version ruamel has no rules for, such as 1.3."""

    def __init__(self, version: tuple[int, ...]) -> None:
        self.version = version
        # as ruamel's own check words it
        part = "minor part can only be 2 or 1" if version[:1] == (1,) else (
            "major part can only be 1")
        self.message = f"version {part}, got {version}"
        super().__init__(self.message)


@cache
def _yaml_class() -> Any:
    """ruamel's YAML, refusing a %YAML version other than 1.1 and 1.2 with an exception: its
    parser gives the directive's version to YAML.version, whose setter checks it with `assert`,
    which `python -O` removes (the parser then fails on a KeyError)."""
    from ruamel.yaml import YAML

    checked: Any = YAML.version  # the property

    class Yaml(YAML):
        @property
        def version(self) -> Any:
            return checked.fget(self)

        @version.setter
        def version(self, value: Any) -> None:
            if value is not None and tuple(value) not in _VERSIONS:
                raise _UnsupportedVersion(tuple(value))
            checked.fset(self, value)

    return Yaml


def quoted_scalar_breaks(text: str, index: int) -> bool:
    """Whether `text` has at `index` a quoted scalar that ruamel's scanner cannot read: one not
    closed, or with a bad escape (its error then has the opening quote as context mark)."""
    from ruamel.yaml.scanner import ScannerError
    from ruamel.yaml.tokens import ScalarToken

    if text[index:index + 1] not in ("'", '"'):
        return False
    try:
        for token in _ruamel_yaml().scan(io.StringIO(text[index:])):
            if isinstance(token, ScalarToken):
                return False
    except ScannerError as error:
        return error.context_mark is not None and error.context_mark.index == 0
    return False


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
    """Whether YAML 1.1 tools (kubectl, cluster tools) read this plain scalar as a boolean."""
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


def fail(position: Position, rule: str, message: str) -> NoReturn:
    raise SpecError([Problem(position, "", rule, message)])


def type_name(value: object) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
