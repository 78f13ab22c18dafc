"""The YAML loader: positions kept, nothing constructed, hostile input refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paddlegen.compiler.loader import load_text
from paddlegen.compiler.problems import SpecError

from conftest import GOLDEN_SPECS, example_counts


def problems(raw: bytes) -> list[str]:
    with pytest.raises(SpecError) as raised:
        load_text(raw, "spec.yaml")
    return [str(p) for p in raised.value.problems]


def test_positions_of_values_and_keys() -> None:
    document = load_text(b"a:\n  b: [1, two]\n", "spec.yaml")
    assert document.data == {"a": {"b": [1, "two"]}}
    assert document.position(("a", "b", 1)).__dict__ == {"file": "spec.yaml", "line": 2,
                                                          "column": 10}
    assert document.key_position(("a", "b")).line == 2
    assert document.position(("a", "missing")).line == 2  # nearest written ancestor


def test_quoted_yes_and_on_are_strings_and_plain_ones_are_refused() -> None:
    assert load_text(b"a: 'yes'\nb: \"on\"\nc: true\n", "s").data == {
        "a": "yes", "b": "on", "c": True}
    assert problems(b"a: yes\nb: Off\n") == [
        "spec.yaml:1:4: a: 'yes' is a string here but a boolean to YAML 1.1 tools (kubectl, "
        "cluster tools): quote it, or write true/false for a boolean [yaml-1.1-boolean]",
        "spec.yaml:2:4: b: 'Off' is a string here but a boolean to YAML 1.1 tools (kubectl, "
        "cluster tools): quote it, or write true/false for a boolean [yaml-1.1-boolean]"]


def test_duplicate_keys_are_refused() -> None:
    assert problems(b"a: 1\nb: 2\na: 3\n") == [
        "spec.yaml:3:1: a: duplicate key (first defined at line 1) [yaml-duplicate-key]"]


def test_object_constructing_tags_are_refused() -> None:
    [line] = problems(b"a: !!python/object/apply:os.system ['true']\n")
    assert line.startswith("spec.yaml:1:4: a: YAML tag 'tag:yaml.org,2002:python/object/apply")


def test_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]"
              for i in range(8)]
    [line] = problems("\n".join(lines).encode())
    assert "alias bomb" in line


@pytest.mark.parametrize(("raw", "expected"), [
    (b"", "spec.yaml:1:1: file is empty"),
    (b"- a\n- b\n", "spec.yaml:1:1: the root must be a mapping, not a list"),
    (b"a: 1\n---\nb: 2\n", "spec.yaml:2:1: expected one YAML document, found several"),
    (b"a: [1\n", "spec.yaml:1:4: invalid YAML: while parsing a flow sequence"),
    (b"a: 'open\n\n", "spec.yaml:1:4: invalid YAML: while scanning a quoted scalar"),
    (b"[" * 5000, "spec.yaml:1:65: nested deeper than 64 levels"),
    (b"a: [" + b"1, " * 200_000 + b"]", "spec.yaml:1:1: more than 10000 YAML nodes"),
    (b"? [a]\n: b\n", "spec.yaml:1:3: a key that is a collection"),
    (b"# only a comment\n", "spec.yaml:1:1: file is empty"),
    (b"a: \xff\xfe\n", "spec.yaml:1:4: not UTF-8 text"),
    (b"a: b\x00c\n", "spec.yaml:1:5: binary data"),
    (b"<<: {a: 1}\n", "spec.yaml:1:1: a merge key '<<' is not allowed"),
    (b"a: " + b"x" * (2 << 20), "spec.yaml:1:1: file is 2097155 bytes"),
])
def test_broken_input_gets_one_positioned_line(raw: bytes, expected: str) -> None:
    [line] = problems(raw)
    assert line.startswith(expected)


# Bad YAML whose problems come from ruamel's checks: its %YAML version check is an assert.
RUAMEL_REFUSES = [b"%YAML 1.3\n---\na: 1\n", b"# a comment\n%YAML 1.0\n---\na: 1\n",
                  b"%YAML 2.0\n---\na: 1\n", b"%YAML 1.1\n---\na: 1\n...\n%YAML 1.4\n---\nb: 2\n",
                  b"%YAML 1." + b"1" * 5000 + b"\n---\na: 1\n", b'a: "\\UFFFFFFFF"\n',
                  b"a: [1\n", b"a: {b: [1, 2}\n", b"a: 'open\n\n", b'a: "\\q"\n',
                  b'a: 1\n"b"\nc: 2\n', b"a: !x!y 1\n", b"a: [!x!y 1]\n",
                  b"a:\n%YAML 1.3\nb: 1\n"]  # a directive inside a document


def test_python_O_reports_the_same_problems() -> None:
    """Under `python -O`, which removes every assert (ruamel's check of a %YAML directive's
    version among them), the loader reports the same problems."""
    script = """if True:
        import json, sys
        from paddlegen.compiler.loader import load_text
        from paddlegen.compiler.problems import SpecError
        assert False, "asserts run"  # removed by -O
        found = []
        for raw in json.load(sys.stdin):
            try:
                load_text(raw.encode("latin-1"), "spec.yaml")
                found.append(None)
            except SpecError as error:
                found.append([str(p) for p in error.problems])
        json.dump(found, sys.stdout)
    """
    child = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True,
                           input=json.dumps([raw.decode("latin-1") for raw in RUAMEL_REFUSES]),
                           check=False)
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout) == [problems(raw) for raw in RUAMEL_REFUSES]
    assert problems(RUAMEL_REFUSES[0]) == problems(RUAMEL_REFUSES[-1]) == [
        "spec.yaml:1:1: invalid YAML: version minor part can only be 2 or 1, got (1, 3); a spec "
        "is YAML 1.2 and needs no %YAML directive [yaml-syntax]"]


# Pieces that stress the parsers where libyaml and ruamel might differ.
YAML_PIECES = ["\t", " ", "\n", ":", ": ", " #", "#", "-", "- ", "?", ",", "[", "]", "{", "}",
               "'", '"', "\\", "|", ">", "&a", "*a", "!", "!!str ", "%", "@", "`", "---",
               "...", "\x85", "\u2028", "\u00e9", "\u263a", "\U0001f600", "0x1F", "1e3", "~",
               "yes", "\r\n", "\ufeff"]


@st.composite
def edited_specs(draw: st.DrawFn) -> bytes:
    text = draw(st.sampled_from(GOLDEN_SPECS)).read_text()
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(text)))
        piece = draw(st.one_of(st.sampled_from(YAML_PIECES), st.text(max_size=4)))
        text = text[:at] + piece + text[at + draw(st.integers(0, 3)):]
    return text.encode("utf-8", "surrogatepass")


def outcome(raw: bytes, libyaml: bool) -> object:
    try:
        document = load_text(raw, "spec.yaml", libyaml=libyaml)
    except SpecError as error:
        return [str(p) for p in error.problems]
    return document.data, document.values, document.keys, document.texts


@pytest.mark.parametrize("max_examples", example_counts(60, 400))
def test_libyaml_and_ruamel_read_every_text_alike(max_examples: int) -> None:
    @settings(max_examples=max_examples, deadline=None)
    @given(st.one_of(edited_specs(), st.text(max_size=60).map(str.encode)))
    def check(raw: bytes) -> None:
        assert outcome(raw, libyaml=True) == outcome(raw, libyaml=False)

    check()
