"""Deterministic text for the artifacts: block YAML in insertion order, and JSON.

`to_yaml` writes the builders' plain data itself, byte for byte as ruamel.yaml's pure-Python
dumper set up in `_dumper()` writes it (block style, mapping indent 2, sequence indent 4 with
the dash at 2, width 4096, no aliases). The hand-written path covers what the builders emit:
dicts with string keys, lists, str/Quoted/Block, bool, int and None. Whenever it is not sure how
ruamel would write a value (other types, control characters in a literal block, line breaks
other than LF, lines near the width, long or multi-line keys, ...) the whole document goes to
ruamel instead, so the output never depends on which path wrote it.
"""

from __future__ import annotations

import io
import json
import re
from functools import cache, cached_property, lru_cache
from typing import Any

_STR = "tag:yaml.org,2002:str"


class Quoted(str):
    """A string written double-quoted (as a tool's own template quotes a value, an ARN say)."""


class Block(str):
    """A multi-line string written as a literal block, as it reads (embedded JSON, scripts)."""


@cache
def _dumper() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver

    yaml11 = VersionedResolver(version=(1, 1))

    def represent_str(representer: Any, data: str) -> Any:
        # kubectl and other tools read YAML 1.1, where yes/on/no/off are booleans: quote those too.
        style: str | None
        if isinstance(data, Quoted):
            style = '"'
        elif isinstance(data, Block) and "\n" in data:
            style = "|"
        elif yaml11.resolve(ScalarNode, data, (True, False)) != _STR:
            style = "'"
        else:
            style = None
        return representer.represent_scalar(_STR, str(data), style=style)

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    # the builders' key order is the output's (the attribute's stub says None)
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold long values
    yaml.representer.ignore_aliases = lambda _data: True  # shared values: write them out again
    yaml.representer.add_representer(str, represent_str)
    yaml.representer.add_representer(Quoted, represent_str)
    yaml.representer.add_representer(Block, represent_str)
    return yaml


def ruamel_yaml(data: Any) -> str:
    """The reference rendering: what `to_yaml` falls back to, and what it must equal."""
    stream = io.StringIO()
    _dumper().dump(data, stream)
    return stream.getvalue()


def to_yaml(data: Any) -> str:
    try:
        return fast_yaml(data)
    except Unsure:
        return ruamel_yaml(data)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def yaml_stream(documents: list[str]) -> str:
    """Several rendered YAML documents as one multi-document stream."""
    return "".join(f"---\n{document}" for document in documents)


# --- The hand-written writer --------------------------------------------------------------------


class Unsure(Exception):
    """The writer cannot be sure it would write this document as ruamel does."""


def fast_yaml(data: Any) -> str:
    """`data` as ruamel's dumper writes it; raises Unsure rather than guess."""
    kind = type(data)
    if kind is dict and data:
        out: list[str] = []
        _mapping(data, 0, out, inline=False)
    elif kind is list and data:
        out = []
        _sequence(data, _DASH_OFFSET, out, inline=False)
    elif kind is dict or kind is list:
        return _empty_collection(data) + "\n"
    else:
        raise Unsure("a lone scalar")  # ruamel adds document markers and its own indentation
    text = "".join(out)
    if len(text) > _SAFE_WIDTH and max(map(len, text.split("\n"))) > _SAFE_WIDTH:
        raise Unsure("a line near the width")  # ruamel folds it (a long word moves to a new line)
    if _ends_with_kept_literal(data):
        text += "...\n"  # ruamel marks the document's end after a block that keeps its breaks
    return text


# Layout of `yaml.indent(mapping=2, sequence=4, offset=2)`: a nested mapping's keys two columns
# further in; a sequence's dashes two columns in from its parent key and its items after "- ".
_MAP_INDENT = 2
_DASH_OFFSET = 2
# ruamel's width is 4096; lines well short of it are never folded.
_SAFE_WIDTH = 4000
# ruamel writes a key longer than this as an explicit "? key" entry.
_MAX_SIMPLE_KEY = 127


def _mapping(mapping: dict[Any, Any], indent: int, out: list[str], inline: bool) -> None:
    """A block mapping whose keys start at column `indent`; `inline`: the first key follows a
    dash already written."""
    pad = " " * indent
    for key, value in mapping.items():
        out.append(f"{_key(key)}:" if inline else f"{pad}{_key(key)}:")
        inline = False
        _value_after_key(value, indent, out)


def _value_after_key(value: Any, indent: int, out: list[str]) -> None:
    kind = type(value)
    if (kind is dict or kind is list) and not value:
        out.append(f" {_empty_collection(value)}\n")
    elif kind is dict:
        out.append("\n")
        _mapping(value, indent + _MAP_INDENT, out, inline=False)
    elif kind is list:
        out.append("\n")
        _sequence(value, indent + _DASH_OFFSET, out, inline=False)
    elif kind is Block and "\n" in value:
        out.append(" " + _literal(value, indent + _MAP_INDENT))
    else:
        out.append(f" {_flow_scalar(value)}\n")


def _sequence(sequence: list[Any], dash: int, out: list[str], inline: bool) -> None:
    """A block sequence whose dashes are at column `dash`; `inline`: the first dash follows
    another dash already written."""
    pad = " " * dash
    for item in sequence:
        out.append("- " if inline else f"{pad}- ")
        inline = False
        kind = type(item)
        if (kind is dict or kind is list) and not item:
            out.append(f"{_empty_collection(item)}\n")
        elif kind is dict:
            _mapping(item, dash + 2, out, inline=True)
        elif kind is list:
            # a sequence in a sequence: its dashes go two columns past the outer item's column
            out.append("  ")
            _sequence(item, dash + 4, out, inline=True)
        elif kind is Block and "\n" in item:
            out.append(_literal(item, dash + 2))
        else:
            out.append(f"{_flow_scalar(item)}\n")


def _empty_collection(value: dict[Any, Any] | list[Any]) -> str:
    return "{}" if type(value) is dict else "[]"


def _ends_with_kept_literal(data: Any) -> bool:
    """Whether the document's last scalar is a literal block with the keep indicator `+`."""
    while (type(data) is dict or type(data) is list) and data:
        data = next(reversed(data.values())) if type(data) is dict else data[-1]
    return type(data) is Block and "\n" in data and _chomping(data) == "+"


# --- Scalars -----------------------------------------------------------------------------------


def _flow_scalar(value: Any) -> str:
    """A scalar written on its key's or dash's line (anything but a literal block)."""
    kind = type(value)
    if kind is str:
        return _string(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    if kind is Quoted:
        return _double_quoted(value)
    if kind is Block:  # without a line break, a Block is written as any string
        return _string(str(value))
    raise Unsure(f"a {kind.__name__}")  # floats, tuples, subclasses: ruamel's representers decide


def _key(key: Any) -> str:
    kind = type(key)
    if kind is str:
        return _string_key(key)
    if kind is Block:  # written as any string
        return _string_key(str(key))
    if kind is Quoted:
        if len(key) > _MAX_SIMPLE_KEY or _LINE_BREAK.search(key):
            raise Unsure("a long or multi-line key")  # ruamel writes an explicit "? key"
        return _double_quoted(key)
    raise Unsure(f"a {kind.__name__} key")  # not emitted by the builders


@lru_cache(maxsize=4096)
def _string_key(text: str) -> str:
    if len(text) > _MAX_SIMPLE_KEY or _LINE_BREAK.search(text):
        raise Unsure("a long or multi-line key")  # ruamel writes an explicit "? key"
    return _string(text)


@lru_cache(maxsize=4096)
def _string(text: str) -> str:
    """A str as ruamel writes it: plain if both YAML 1.1 and 1.2 read it back as that string,
    else quoted the way ruamel's emitter chooses."""
    if _OTHER_LINE_BREAK.search(text):
        raise Unsure("NEL, LS or PS")  # ruamel single-quotes them with odd line breaks
    yaml11_str = _is_str(text, _YAML11)
    if yaml11_str and _is_str(text, _YAML12) and _is_plain_safe(text):
        return text
    # represent_str asks for single quotes only when YAML 1.1 reads a non-string; otherwise
    # the emitter prefers double quotes for text with a quote or a line break.
    if yaml11_str and ("'" in text or "\n" in text):
        return _double_quoted(text)
    if _SPECIAL.search(text):
        return _double_quoted(text)  # only double quotes can escape it
    if "\n" in text:
        raise Unsure("a multi-line non-string")  # e.g. "true\n": single-quoted across lines
    return "'" + text.replace("'", "''") + "'"


class _Characters:
    """A regex of characters, compiled when first used on text outside ASCII (a class over all
    of Unicode takes milliseconds to compile); ASCII text, the usual, meets a small twin."""

    def __init__(self, ascii_pattern: str, pattern: str) -> None:
        self.ascii = re.compile(ascii_pattern)
        self.pattern = pattern

    @cached_property
    def full(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    def of(self, text: str) -> re.Pattern[str]:
        return self.ascii if text.isascii() else self.full

    def search(self, text: str) -> re.Match[str] | None:
        return self.of(text).search(text)


# Characters ruamel's emitter (allow_unicode) writes as they are; anything else is "special" and
# can only be written escaped, in double quotes. LF is a line break, not special.
_PRINTABLE = "\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"
_SPECIAL = _Characters("[^\n\x20-\x7e]", f"[^\n\x85{_PRINTABLE}]")
_LINE_BREAK = re.compile("[\n\x85\u2028\u2029]")
_OTHER_LINE_BREAK = re.compile("[\x85\u2028\u2029]")
_NOT_PLAIN_CHARACTER = _Characters("[^\x20-\x7e]", f"[^{_PRINTABLE}]")
_NOT_LITERAL_CHARACTER = _Characters("[^\n\t\x20-\x7e]", f"[^\n\t{_PRINTABLE}]|[\u2028\u2029]")
# First characters that make a plain scalar an indicator, and where a following space does.
_LEADING_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_INDICATORS_BEFORE_SPACE = frozenset("-?:")


def _is_plain_safe(text: str) -> bool:
    """Whether the emitter allows `text` as a plain scalar in block context: a non-empty single
    line of printable characters, no leading or trailing space, no document marker, no leading
    indicator, and no ": " or " #" inside (YAML 1.2 rules: "?" is not an indicator inside)."""
    if not text or _NOT_PLAIN_CHARACTER.search(text):
        return False
    first = text[0]
    if first == " " or text[-1] == " " or first in _LEADING_INDICATORS:
        return False
    if first in _INDICATORS_BEFORE_SPACE and (len(text) == 1 or text[1] == " "):
        return False
    if text.startswith(("---", "...")):
        return False
    return not (text[-1] == ":" or ": " in text or " #" in text)


def _double_quoted(text: str) -> str:
    return '"' + _ESCAPED.of(text).sub(_escape, text) + '"'


# Escaped inside double quotes: the quote, the backslash, NEL/LS/PS/BOM and every character
# that is not printable (as ruamel's write_double_quoted decides, with allow_unicode).
_ESCAPED = _Characters('[^\x20-\x7e]|["\\\\]',
                       f'[^{_PRINTABLE}]|["\\\\\x85\u2028\u2029\ufeff]')
_SHORT_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\t": "t", "\n": "n", "\x0b": "v",
                  "\x0c": "f", "\r": "r", "\x1b": "e", '"': '"', "\\": "\\", "\x85": "N",
                  "\xa0": "_", "\u2028": "L", "\u2029": "P"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT_ESCAPES:
        return "\\" + _SHORT_ESCAPES[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _literal(text: str, indent: int) -> str:
    """A Block with a line break: "|" with its hints, then its lines at `indent` (empty lines
    stay empty). The text after the indicator, through the last line break."""
    if _NOT_LITERAL_CHARACTER.search(text):
        # ruamel writes them raw, which no reader takes back (NEL, LS, PS also break the lines)
        raise Unsure("a control character or NEL/LS/PS in a literal block")
    # an explicit indentation when the first line starts with a space or is empty
    hints = ("2" if text[0] in " \n" else "") + _chomping(text)
    pad = " " * indent
    body = text[:-1] if text.endswith("\n") else text
    lines = "".join(f"{pad}{line}\n" if line else "\n" for line in body.split("\n"))
    return f"|{hints}\n{lines}"


def _chomping(text: str) -> str:
    """Strip ("-") without a final line break, keep ("+") with more than one, clip ("") else."""
    if not text.endswith("\n"):
        return "-"
    return "+" if len(text) == 1 or text[-2] == "\n" else ""


# --- Implicit types: which plain scalars YAML 1.1 and 1.2 readers take for something else ------
# Each reader tries the patterns listed for the scalar's first character (and only those), with
# re.match and a "$" that also matches before a final line break, as ruamel's resolver does.

_FLOAT_12 = (r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
             r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_FLOAT_11 = (r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
             r"|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
             r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_INT_12 = r"[-+]?0b[01_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+"
_INT_11 = (r"[-+]?0b[01_]+|[-+]?0?[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
           r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+")
_TIMESTAMP = (r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
              r"|[0-9]{4}-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9]{2}:[0-9]{2}"
              r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9]{2})?))?")
_DIGITS = "0123456789"
_COMMON = [("<", "<<"), ("~nN", "~|null|Null|NULL"), (_DIGITS, _TIMESTAMP), ("=", "="),
           ("!&*", "[!&*]")]
_YAML12_TYPES = [("tTfF", "true|True|TRUE|false|False|FALSE"), ("-+." + _DIGITS, _FLOAT_12),
                 ("-+" + _DIGITS, _INT_12), *_COMMON]
_YAML11_TYPES = [("yYnNtTfFoO", "y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE"
                  "|on|On|ON|off|Off|OFF"), ("-+." + _DIGITS, _FLOAT_11),
                 ("-+" + _DIGITS, _INT_11), *_COMMON]


def _by_first_character(types: list[tuple[str, str]]) -> dict[str, str]:
    patterns: dict[str, list[str]] = {}
    for firsts, pattern in types:
        for first in firsts:
            patterns.setdefault(first, []).append(pattern)
    return {first: f"(?:{'|'.join(alternatives)})$" for first, alternatives in patterns.items()}


_YAML11 = _by_first_character(_YAML11_TYPES)
_YAML12 = _by_first_character(_YAML12_TYPES)


def _is_str(text: str, types: dict[str, str]) -> bool:
    """Whether a reader with these implicit types reads plain `text` as a string (the empty
    plain scalar is null in both versions)."""
    if not text:
        return False
    pattern = types.get(text[0])
    return pattern is None or re.match(pattern, text) is None  # re caches what it compiles
