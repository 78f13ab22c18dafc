"""The hand-written YAML writer (paddlegen.compiler.render): byte for byte what ruamel.yaml's
dumper writes, for every document, and read back by YAML 1.2 and 1.1 readers, and by kubectl, as
the very document it was given.

Which share of the generated documents the writer leaves to ruamel shows with
    pytest tests/test_render.py --hypothesis-show-statistics
("fast path" and "fallback" events).
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from paddlegen.compiler import render
from paddlegen.compiler.build import build
from paddlegen.compiler.render import Block, Quoted, Unsure, fast_yaml, ruamel_yaml, to_yaml

from conftest import GOLDEN_SPECS, example_counts, kubectl_or_skip

try:  # PyYAML: the YAML 1.1 reader many tools use (declared in the test extra)
    pyyaml: Any = importlib.import_module("yaml")
except ImportError:  # pragma: no cover
    pyyaml = None

# Strings some reader takes for something else, or that YAML's syntax gives a meaning.
YAML_WORDS = [
    "", "y", "Y", "n", "N", "yes", "Yes", "YES", "no", "No", "on", "On", "ON", "off", "Off",
    "true", "True", "FALSE", "false", "null", "Null", "NULL", "~", "0", "-1", "+1", "007", "09",
    "0o17", "0b101", "0x1F", "0xfg", "1_000", "_", "-_", "+_", "1:20", "-1:20:30", "190:20:30.15",
    "1:60", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
    "2002-1-1 1:2:3", "2002-1-1", ".inf", "-.inf", "+.INF", ".NaN", ".nan", "1e3", "1E+3",
    "1.5e-3", "+.5", ".5", "1.", "-.", "._", "1.2.3", "<<", "=", "!", "&", "*", "-", "?", ":", "|",
    ">", "---", "...", "--- x", "#x", "@x", "%x", "`x", "a: b", "a:", "a #b", "a#b", "- x", "? x",
    ": x", "-x", "?x", ":x", "[a]", "{a: b}", "a,b", "'", '"', "''", "\\", "null\n", "true\n",
    "1\n",
]
PIECES = [
    *"-?:,[]{}#&*!|>'\"%@`\\ \t\n\r=~.+_0123456789aZ",
    "é", "\xa0", "\x85", "\u2028", "\u2029", "\ufeff", "\x00", "\x7f", "\x9f", "\ud800", "\ue000",
    "\ufffe", "\U0001f600", "日本", ": ", " #", "  ", "\n\n", " \n", "\n ",
]
pieces = st.one_of(st.sampled_from(YAML_WORDS), st.sampled_from(PIECES),
                   st.text(max_size=4), st.characters())
# one line, no control character: what keys and most values are
line_pieces = st.one_of(st.sampled_from([w for w in YAML_WORDS if "\n" not in w]),
                        st.sampled_from([p for p in PIECES if p.isprintable() or p == " "]),
                        st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=4))
lines = st.lists(line_pieces, max_size=8).map("".join)
texts = st.one_of(
    st.sampled_from(YAML_WORDS),
    lines,
    st.lists(pieces, max_size=8).map("".join),
    st.text(),
    # long: near and past ruamel's width of 4096 columns
    st.builds(lambda piece, times: piece * times,
              st.sampled_from(["x", "ab ", "é", "a'", '"', "\\", "x\n"]),
              st.integers(1000, 4200)),
)
# literal blocks: lines that start with spaces, are empty, look like document markers; final
# line breaks none, one or more (strip, clip, keep)
block_lines = st.one_of(
    st.lists(st.one_of(lines, st.sampled_from(["", " ", "  x", "\tx", "---", "...", "- a", "#"])),
             min_size=2, max_size=6).map("\n".join),
    st.sampled_from(["\n", "\n\n", "x\n\n", " x\ny", "\nx", "x\n \n", " \n"]),
)
block_texts = st.one_of(
    block_lines,
    st.lists(pieces, min_size=1, max_size=8).map("".join).map(lambda text: text + "\n"),
    texts,
)
integers = st.one_of(st.integers(-1000, 1000), st.integers(), st.integers(-10**40, 10**40))
scalars = st.one_of(texts, lines, texts.map(Quoted), block_texts.map(Block), st.booleans(),
                    integers, st.none())
keys = st.one_of(lines, lines.map(Quoted), lines.map(Block))
# keys ruamel writes as "? key" (multi-line, 128 characters and more): rarer, at the top only
odd_keys = st.one_of(texts, texts.map(Quoted), block_texts.map(Block))
documents: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5),
                               st.dictionaries(keys, children, max_size=5)),
    max_leaves=20,
)
roots = st.one_of(st.dictionaries(keys, documents, max_size=6),
                  st.lists(documents, max_size=6), documents,
                  st.dictionaries(st.one_of(keys, odd_keys), documents, max_size=3))


def fast_or_none(data: Any) -> str | None:
    """The writer's text, or None where it leaves the document to ruamel."""
    try:
        return fast_yaml(data)
    except Unsure:
        return None


def load_yaml12(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def load_yaml11(text: str) -> Any:
    if pyyaml is not None:
        return pyyaml.safe_load(text)
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 1)
    return yaml.load(text)


def same(loaded: Any, document: Any) -> bool:
    """Equal, and of the same kind all the way down (a string stays a string: "1" is not 1)."""
    if isinstance(document, dict):
        return (isinstance(loaded, dict) and list(loaded) == list(document)
                and all(same(loaded[key], value) for key, value in document.items()))
    if isinstance(document, list):
        return (isinstance(loaded, list) and len(loaded) == len(document)
                and all(map(same, loaded, document)))
    if isinstance(document, str):
        return isinstance(loaded, str) and loaded == str(document)
    return type(loaded) is type(document) and loaded == document


# --- Byte for byte what ruamel writes ----------------------------------------------------------


@pytest.mark.parametrize("max_examples", example_counts(15, 400))
def test_the_writer_writes_what_ruamel_writes(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(roots)
    def check(document: Any) -> None:
        fast = fast_or_none(document)
        event("fast path" if fast is not None else "fallback")
        reference = ruamel_yaml(document)
        assert to_yaml(document) == reference
        if fast is not None:
            assert fast == reference

    check()


# Near misses of YAML 1.1 and 1.2 numbers, dates and booleans: whether a reader takes one for a
# string decides between plain and quoted.
number_like = st.one_of(
    st.text(alphabet="0123456789_.:+-eExXoObB tTZ\n", max_size=14),
    st.text(alphabet="0123456789-: .Tt", min_size=8, max_size=24),
    st.sampled_from(["yes", "no", "on", "off", "true", "false", "null", "y", "n", "inf", "nan"])
    .flatmap(lambda word: st.sampled_from(
        [word, word.upper(), word.title(), word.swapcase(), "." + word, "-." + word])),
)


@pytest.mark.parametrize("max_examples", example_counts(60, 500))
def test_number_like_strings_are_written_as_ruamel_writes_them(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(st.lists(number_like, min_size=1, max_size=10))
    def check(values: list[str]) -> None:
        document = {"values": values, **{value: index for index, value in enumerate(values)}}
        fast = fast_or_none(document)
        event("fast path" if fast is not None else "fallback")
        assert to_yaml(document) == ruamel_yaml(document)
        if fast is not None:
            assert same(load_yaml12(fast), document) and same(load_yaml11(fast), document)

    check()


def golden_objects() -> list[Any]:
    return [manifest.obj for spec in GOLDEN_SPECS
            for manifest in build(spec.read_bytes(), "spec.yaml").manifests]


def test_golden_objects_take_the_fast_path_and_render_as_ruamel_does() -> None:
    objects = golden_objects()
    assert len(objects) >= len(GOLDEN_SPECS)
    for obj in objects:
        assert fast_yaml(obj) == ruamel_yaml(obj)  # fast_yaml raises Unsure on a fallback


def test_building_the_goldens_never_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file a build renders (objects, kustomization, cluster.yaml, templates, runbook
    pods) takes the fast path."""
    fallbacks: list[Any] = []
    monkeypatch.setattr(render, "ruamel_yaml", fallbacks.append)
    for spec in GOLDEN_SPECS:
        build(spec.read_bytes(), "spec.yaml")
    assert fallbacks == []


def test_the_fast_path_does_not_import_ruamel() -> None:
    script = ("import sys\n"
              "from paddlegen.compiler.render import Block, Quoted, to_yaml\n"
              "to_yaml({'a': [1, True, None, 'yes', Quoted('q'), Block('x\\n')], 'b': {}})\n"
              "assert not [name for name in sys.modules if name.startswith('ruamel')]\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


@pytest.mark.parametrize(("document", "expected"), [
    ({"a": 1, "b": [1, [2, 3], {"c": 4}, [], {}]},
     "a: 1\nb:\n  - 1\n  -   - 2\n      - 3\n  - c: 4\n  - []\n  - {}\n"),
    ([{"a": None, "b": True}], "  - a: null\n    b: true\n"),
    ({"on": "yes", "n": "0o17", "k": "it's", "q": Quoted("v")},
     "'on': 'yes'\n'n': '0o17'\nk: it's\nq: \"v\"\n"),
    ({"s": "a\tb\n", "e": "", "u": "\ufeff\ud800é"},
     's: "a\\tb\\n"\ne: \'\'\nu: "\\uFEFF\\uD800é"\n'),
    ({"b": Block(" x\ny")}, "b: |2-\n   x\n  y\n"),
    ({"b": Block("\tx\n\n  y\n")}, "b: |\n  \tx\n\n    y\n"),
    ({"b": [Block("x\n\n")]}, "b:\n  - |+\n    x\n\n...\n"),
    ({}, "{}\n"),
])
def test_examples(document: Any, expected: str) -> None:
    assert fast_yaml(document) == expected == ruamel_yaml(document)


@pytest.mark.parametrize("document", [
    "scalar", {1: "int key"}, {"k": 1.5}, {"k": ("tuple",)}, {"x" * 128: 1}, {"a\nb": 1},
    {"k": "x" * 4100}, {"k": "true\n"}, {"k": "a\x85b"}, {"k": Block("nul\x00\n")},
    {"k": Block("a\rb\n")}, {"k": Block("\n\u2028")}, {"k": Block("a\u2029b\n")},
])
def test_what_the_writer_leaves_to_ruamel(document: Any) -> None:
    with pytest.raises(Unsure):
        fast_yaml(document)
    assert to_yaml(document) == ruamel_yaml(document)


# --- Read back as the same document ------------------------------------------------------------


@pytest.mark.parametrize("max_examples", example_counts(15, 200))
def test_yaml_readers_read_back_the_document(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(roots)
    def check(document: Any) -> None:
        text = fast_or_none(document)
        assume(text is not None)
        assert text is not None
        assert same(load_yaml12(text), document)
        assert same(load_yaml11(text), document)

    check()


# Characters kustomize cannot carry, however they are written: it fails on C1 controls, DEL,
# U+FFFE/U+FFFF and surrogates (it re-emits them raw, then its own reader refuses them, or Go has
# no UTF-8 for them), and it re-emits NEL raw where a YAML reader folds it to a space.
NOT_THROUGH_KUSTOMIZE = re.compile("[\x7f-\x9f\ud800-\udfff\ufffe\uffff]")

# Gaps ruamel's output has (and so the writer's, byte for byte), pinned below: Go reads a date
# with a one-digit month, day, hour, minute or second as a timestamp (YAML 1.1's pattern wants
# two digits, so ruamel writes "2002-1-1" plain and kubectl makes it "2002-01-01T00:00:00Z");
# and Go's reader refuses a literal block whose first line starts with a tab.
GO_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9][0-9]?-[0-9][0-9]?(?:[Tt ]|$)")
TAB_FIRST = re.compile(r"\n*\t")


def kubectl_gap(text: str) -> bool:
    if type(text) is Block and "\n" in text:
        return bool(TAB_FIRST.match(text))
    return bool(GO_TIMESTAMP.match(text)) and fast_or_none({"k": text}) == f"k: {text}\n"


def carried(text: str) -> str:
    return NOT_THROUGH_KUSTOMIZE.sub("", text)


def without_controls(text: str) -> str:
    """A literal block's text the writer takes: no control character but LF and tab, no LS/PS."""
    return re.sub("[\x00-\x08\x0b-\x1f\u2028\u2029]", "", text)


short_texts = st.one_of(st.sampled_from(YAML_WORDS), lines, st.text(max_size=30),
                        st.lists(pieces, max_size=8).map("".join)).map(carried)
kube_keys = st.one_of(lines, lines.map(Quoted)).map(carried).filter(
    # kustomize takes a "<<" key for a merge key, quoted or not, and drops it
    lambda key: fast_or_none({key: 1}) is not None and not kubectl_gap(key) and key != "<<")
kube_values = st.one_of(
    short_texts, short_texts.map(Quoted),
    block_lines.map(carried).map(without_controls).map(Block),
).filter(lambda value: fast_or_none({"k": value}) is not None and not kubectl_gap(value))


def kustomized_data(kubectl: str, data: dict[str, str]) -> dict[str, str]:
    """`data` in a ConfigMap the writer wrote, as `kubectl kustomize` gives it back."""
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "strings"},
                  "data": data}
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": ["configmap.yaml"]}
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        (directory / "configmap.yaml").write_text(fast_yaml(config_map), encoding="utf-8")
        (directory / "kustomization.yaml").write_text(fast_yaml(kustomization))
        rendered = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True,
                                  check=True, timeout=60).stdout.decode()
    # kustomize writes back what it read, with Go's idea of which strings need quotes (plain
    # 0b_ or 2001-12-14 21:59:43 -5, say); a ConfigMap's data is strings, so read it as such.
    data_read: dict[str, str] = YAML(typ="base").load(rendered)["data"]
    return data_read


@pytest.mark.conformance
@settings(max_examples=8)
@given(st.lists(kube_values, min_size=50, max_size=50), st.lists(kube_keys, max_size=10))
def test_kubectl_reads_the_scalars_back(values: list[str], keys: list[str]) -> None:
    kubectl = kubectl_or_skip()
    # 50 values and a few generated keys (with the first values again): one kubectl call
    data = {f"k{index}": value for index, value in enumerate(values)}
    data.update(zip(keys, values, strict=False))
    assert kustomized_data(kubectl, data) == {str(key): str(value) for key, value in data.items()}


@pytest.mark.conformance
@pytest.mark.xfail(strict=True, reason="gaps ruamel's output has, so the writer's, byte for byte")
@pytest.mark.parametrize("value", ["2002-1-1", "2002-01-1", "2002-1-1 1:2:3", "2002-1-1T1:2:3Z",
                                   Block("\tindented by a tab\n")])
def test_kubectl_gaps_inherited_from_ruamel(value: str) -> None:
    assert kustomized_data(kubectl_or_skip(), {"k": value}) == {"k": value}
