"""Problems as CI systems read them: `--format json`, `sarif` (SARIF 2.1.0, for code scanning)
and `github` (GitHub Actions workflow commands, for annotations) of `validate` and `check`.

Pure functions: problems in, text out; `formatted` alone looks at the process (the working
directory, paddlegen's version, the rules). Every output is the same for the same problems in
the same directory: no timestamps, no absolute paths of files below the working directory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from paddlegen.compiler.problems import Problem, encodable, printable

SARIF_VERSION = "2.1.0"
# The `id` of the OASIS Standard's schema (with Errata 01), vendored in schema/sarif/.
SARIF_SCHEMA = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                "sarif-schema-2.1.0.json")
# The base of relative artifact URIs: the directory paddlegen ran in, the repository's root in
# CI, which is how GitHub code scanning resolves %SRCROOT%. SARIF lets a log name a base
# without giving its absolute URI (§3.4.4), which would put the machine's paths in the log.
SOURCE_ROOT = "%SRCROOT%"
TOOL_NAME = "paddlegen"
# A sentence's end: the first period (?, !) followed by a space and a capital, or the text's end.
_FIRST_SENTENCE = re.compile(r"^(.+?[.?!])(?=\s+[A-Z`(]|\s*$)", re.S)


@dataclass(frozen=True)
class RuleDoc:
    """A rule as `paddlegen rules` documents it."""

    id: str
    severity: str
    doc: str
    profiles: tuple[str, ...]


def described(problem: Problem) -> str:
    """What a problem says without its position and rule, exactly (data: the text formats make
    it printable)."""
    return encodable(f"{problem.path}: {problem.message}" if problem.path else problem.message)


def relative_path(file: str, cwd: str) -> str | None:
    """`file` (as given on the command line, relative to cwd or absolute) relative to cwd,
    '/'-separated and normalized, or None when it lies outside cwd."""
    path = os.path.relpath(os.path.join(cwd, file), cwd)
    if path == os.pardir or path.startswith(os.pardir + os.sep):
        return None
    return PurePath(path).as_posix()


def path_bytes(path: str) -> bytes:
    """A file name's bytes, as the file system has them (undecodable bytes come back)."""
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:  # a surrogate that stands for no byte: not a real name
        return printable(path).encode()


def artifact_location(file: str, cwd: str) -> dict[str, str]:
    """A SARIF artifactLocation: a relative URI below cwd (percent-encoded, ':' too, so that
    no first segment reads as a scheme), else an absolute file: URI."""
    relative = relative_path(file, cwd)
    if relative is not None:
        return {"uri": quote(path_bytes(relative), safe="/"), "uriBaseId": SOURCE_ROOT}
    absolute = os.path.normpath(os.path.join(cwd, file))
    return {"uri": "file://" + quote(path_bytes(PurePath(absolute).as_posix()), safe="/")}


def short_description(doc: str) -> str:
    match = _FIRST_SENTENCE.match(doc)
    return match.group(1) if match else doc


def sarif_rule(rule: RuleDoc) -> dict[str, Any]:
    return {
        "id": rule.id,
        "shortDescription": {"text": short_description(rule.doc)},
        "help": {"text": rule.doc},
        "defaultConfiguration": {"level": rule.severity},
        "properties": {"profiles": list(rule.profiles)},
    }


def sarif_result(problem: Problem, rule_index: dict[str, int], cwd: str) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": problem.rule}
    if problem.rule in rule_index:
        result["ruleIndex"] = rule_index[problem.rule]
    result["level"] = problem.severity
    result["message"] = {"text": described(problem)}
    if problem.position.file:  # a problem of no file (a release without schemas) has no place
        result["locations"] = [{"physicalLocation": {
            "artifactLocation": artifact_location(problem.position.file, cwd),
            "region": {"startLine": problem.position.line,
                       "startColumn": problem.position.column},
        }}]
    return result


def sarif_log(problems: Iterable[Problem], rules: Sequence[RuleDoc], version: str,
              cwd: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run: every rule, and one result per problem, in their order."""
    known: dict[str, RuleDoc] = {}
    for rule in rules:
        known.setdefault(rule.id, rule)
    rule_index = {rule_id: index for index, rule_id in enumerate(known)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {"name": TOOL_NAME, "version": version,
                                "rules": [sarif_rule(rule) for rule in known.values()]}},
            # the loader's columns count characters (code points), not UTF-16 units
            "columnKind": "unicodeCodePoints",
            "results": [sarif_result(problem, rule_index, cwd) for problem in problems],
        }],
    }


def json_escaped(character: str) -> str:
    """A character as a JSON string escape: \\uXXXX, a surrogate pair above U+FFFF."""
    code = ord(character)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def printable_json(data: Any) -> str:
    """JSON of `data` with non-ASCII text kept readable, and every character a terminal would
    not show as itself escaped: the same values, safe to print. json.dumps escapes C0 controls
    in strings but leaves C1 controls (U+009B is CSI), DEL, format and separator characters;
    the line breaks it writes itself are the indentation's."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return "".join(c if c.isprintable() or c == "\n" else json_escaped(c) for c in text)


def as_sarif(problems: Iterable[Problem], rules: Sequence[RuleDoc], version: str,
             cwd: str) -> str:
    return printable_json(sarif_log(problems, rules, version, cwd)) + "\n"


def as_json(problems: Iterable[Problem]) -> str:
    return json.dumps([problem.as_dict() for problem in problems], indent=2) + "\n"


# Escaping as GitHub's toolkit does it: actions/toolkit, packages/core/src/command.ts
# (escapeData and escapeProperty; at commit 4b9afa4c890de9d1a84c75bb617ee4d96207823a, lines
# 103-117): '%' first, so that the escapes themselves are not escaped again.
_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def escaped(text: str, escapes: Iterable[tuple[str, str]]) -> str:
    for character, escape in escapes:
        text = text.replace(character, escape)
    return text


def escape_data(text: str) -> str:
    """A workflow command's message: % CR LF escaped."""
    return escaped(text, _DATA_ESCAPES)


def escape_property(text: str) -> str:
    """A workflow command's property value: % CR LF : , escaped."""
    return escaped(text, _PROPERTY_ESCAPES)


def github_command(problem: Problem, cwd: str) -> str:
    """`::error file=F,line=L,col=C,title=RULE::message` (::warning for a warning), one line."""
    properties: list[tuple[str, str]] = []
    if problem.position.file:
        file = problem.position.file
        shown = relative_path(file, cwd) or os.path.normpath(os.path.join(cwd, file))
        properties += [("file", printable(shown)), ("line", str(problem.position.line)),
                       ("col", str(problem.position.column))]
    properties.append(("title", problem.rule))
    listed = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    # printable first: no control character is left for the log (which renders ANSI escape
    # sequences) or to end the command; the toolkit's escaping then keeps its % literal
    return f"::{problem.severity} {listed}::{escape_data(printable(described(problem)))}"


def as_github(problems: Iterable[Problem], cwd: str) -> str:
    return "".join(github_command(problem, cwd) + "\n" for problem in problems)


def documented_rules() -> list[RuleDoc]:
    """Every rule of `paddlegen rules`, in its order, its text on one line."""
    from paddlegen.compiler.reference import rule_sections

    return [RuleDoc(name, severity, " ".join(doc.split()), tuple(profiles.split(", ")))
            for _, rows in rule_sections() for name, severity, doc, profiles in rows]


def formatted(problems: Sequence[Problem], output: str) -> str:
    """The problems in the format named (json, sarif or github), paths relative to the working
    directory."""
    if output == "json":
        return as_json(problems)
    if output == "sarif":
        from importlib.metadata import version

        return as_sarif(problems, documented_rules(), version(TOOL_NAME), os.getcwd())
    if output == "github":
        return as_github(problems, os.getcwd())
    raise ValueError(f"no report format {output!r}")
