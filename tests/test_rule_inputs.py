"""What rules read of a spec: each names its fields, reads no others, and on a spec with schema
errors runs only if none of them has one; a rule's own exception is never taken for one."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterable, Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from paddlegen.compiler.loader import load_text
from paddlegen.compiler.problems import FieldPath, SpecError, Violation
from paddlegen.compiler.rules import WHOLE_SPEC, Rule
from paddlegen.compiler.spec import load_spec, merge, profile_document, validate
from paddlegen.profiles import MODULES, PROFILES
from paddlegen.schema.models import SpecModel

from conftest import GOLDEN, GOLDEN_SPECS

BAD_SPECS = sorted((Path(__file__).resolve().parent / "bad_specs").glob("*.yaml"))
KUBE_AWS = (GOLDEN / "kube-aws" / "spec.yaml").read_text()


def rules() -> list[Any]:
    return [pytest.param(profile, rule, id=f"{name}-{rule.name}")
            for name, profile in PROFILES.items() for rule in profile.rules]


def fields(model: Any, path: FieldPath = ()) -> Iterator[FieldPath]:
    """The dotted paths of a model's fields and their parts, by alias."""
    for name, field in model.model_fields.items():
        key = (*path, field.alias or name)
        yield key
        for member in getattr(field.annotation, "__args__", None) or (field.annotation,):
            if isinstance(member, type) and issubclass(member, BaseModel):
                yield from fields(member, key)


@pytest.mark.parametrize(("profile", "rule"), rules())
def test_each_rule_names_the_fields_of_its_profile_it_reads(profile: Any, rule: Any) -> None:
    assert rule.reads != WHOLE_SPEC, f"{rule.name}: say what it reads (rule(..., reads=...))"
    known = set(fields(profile.model))
    for read in rule.reads:
        assert tuple(read.split(".")) in known, f"{rule.name}: {read} is no field of the spec"


def valid_specs() -> Iterator[tuple[str, Any, BaseModel]]:
    """The golden specs and the bad ones whose schema is valid (broken by rules only)."""
    for path in [*GOLDEN_SPECS, *BAD_SPECS]:
        try:
            document = load_text(path.read_bytes(), path.name)
        except SpecError:
            continue
        name = document.data.get("profile")
        if not isinstance(name, str) or name not in PROFILES:
            continue
        spec, problems, _ = validate(merge(profile_document(name), document),
                                     PROFILES[name].model)
        if not problems:
            yield name, PROFILES[name], spec


def field_reads(rule: Any, spec: BaseModel, monkeypatch: pytest.MonkeyPatch) -> set[FieldPath]:
    """The fields of `spec` that `rule` reads as attributes, found by watching them read."""
    where: dict[int, FieldPath] = {}

    def walk(model: BaseModel, path: FieldPath) -> None:
        where[id(model)] = path
        for name, field in type(model).model_fields.items():
            value = model.__dict__.get(name)
            if isinstance(value, BaseModel):
                walk(value, (*path, field.alias or name))

    walk(spec, ())
    read: set[FieldPath] = set()
    plain = SpecModel.__getattribute__

    def watched(self: Any, name: str) -> Any:
        path = where.get(id(self))
        known = type(self).model_fields
        if path is not None and name in known:
            read.add((*path, known[name].alias or name))
        return plain(self, name)

    with monkeypatch.context() as patch:
        patch.setattr(SpecModel, "__getattribute__", watched)
        list(rule.check(spec))
    return read


def test_rules_read_only_the_fields_they_name(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = 0
    for name, profile, spec in valid_specs():
        for rule in profile.rules:
            declared = [tuple(read.split(".")) if read else () for read in rule.reads]
            for path in field_reads(rule, spec, monkeypatch):
                # a field it names, a part of one, or a section on the way to one
                assert any(path[:len(d)] == d or d[:len(path)] == path for d in declared), (
                    f"{name}: rule {rule.name} reads {'.'.join(map(str, path))} but names "
                    f"only {', '.join(rule.reads)}")
            checked += 1
    assert checked > 100


def with_rule(monkeypatch: pytest.MonkeyPatch, name: str, rule: Rule[Any]) -> None:
    """Profile `name` with `rule` as its last."""
    profile = PROFILES[name]
    monkeypatch.setattr(import_module(f"paddlegen.profiles.{MODULES[name]}"), "PROFILE",
                        dataclasses.replace(profile, rules=(*profile.rules, rule)))


class RuleBug(Exception):
    pass


def broken(spec: Any) -> Iterable[Violation]:
    """A rule with a bug: it fails whatever the spec."""
    raise RuleBug(spec.metadata.name)


@pytest.mark.parametrize("text", [
    KUBE_AWS,  # valid: every rule runs
    KUBE_AWS.replace("port: 7164", "port: '7164'"),  # a schema error: the partial pass
], ids=["valid", "partial"])
def test_a_rules_exception_is_not_taken_for_an_invalid_spec(
        monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with_rule(monkeypatch, "kube-aws", Rule("broken", broken, reads=("metadata.name",)))
    with pytest.raises(RuleBug):
        load_spec(text.encode(), "spec.yaml")


@pytest.mark.parametrize("error", [
    AttributeError, TypeError, KeyError, IndexError, ValueError])
def test_no_exception_of_a_rule_is_swallowed(monkeypatch: pytest.MonkeyPatch,
                                             error: type[Exception]) -> None:
    def fails(spec: Any) -> Iterable[Violation]:
        raise error("a bug in the rule")

    with_rule(monkeypatch, "kube-aws", Rule("broken", fails, reads=("training.nodes",)))
    with pytest.raises(error, match="a bug in the rule"):
        load_spec(KUBE_AWS.replace("port: 7164", "port: -1").encode(), "spec.yaml")


def test_the_partial_pass_runs_only_the_rules_whose_fields_are_valid(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def reporting(name: str, path: FieldPath) -> Rule[Any]:
        def check(spec: Any) -> Iterable[Violation]:
            ran.append(name)
            yield path, f"{name} ran"
        return Rule(name, check, reads=(".".join(map(str, path)),))

    for name, path in [("on-port", ("training", "port")), ("on-training", ("training",)),
                       ("on-nodes", ("training", "nodes")), ("on-region", ("cluster", "region")),
                       ("on-cluster", ("cluster",)), ("on-whole", ())]:
        with_rule(monkeypatch, "kube-aws", reporting(name, path))
    text = KUBE_AWS.replace("port: 7164", "port: many").replace("workerCount: 3",
                                                               "workerCount: 3\n  extra: 1")
    with pytest.raises(SpecError) as raised:
        load_spec(text.encode(), "spec.yaml")
    # training.port has an error: no rule that reads it, or a whole of it, runs; an unknown key
    # leaves the fields beside it valid
    assert ran == ["on-nodes", "on-region", "on-cluster"]
    assert {(p.path, p.rule) for p in raised.value.problems} == {
        ("cluster", "on-cluster"), ("cluster.extra", "unknown-key"),
        ("cluster.region", "on-region"), ("training.nodes", "on-nodes"),
        ("training.port", "wrong-type")}


# Values of the wrong type for any field, and a key left out.
BREAKERS = ["[]", "{}", "'x'", "-1", "null"]
LEAF = re.compile(r"^(\s*)([A-Za-z]\w*):( .*)?$")


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda path: path.parent.name)
def test_a_spec_with_one_field_broken_is_refused_with_problems(spec: Path) -> None:
    """The partial pass on each golden spec with one field broken or missing: the rules that
    run do not fail on the fields left out (what they read that they do not name)."""
    lines = spec.read_text().splitlines()
    for index, line in enumerate(lines):
        match = LEAF.match(line)
        if not match or match[2] in ("profile", "apiVersion", "kind"):
            continue
        for value in ["", *BREAKERS]:
            edited = [*lines[:index], f"{match[1]}{match[2]}: {value}" if value else "",
                      *lines[index + 1:]]
            with contextlib.suppress(SpecError):  # any other exception fails the test
                load_spec("\n".join(edited).encode(), "spec.yaml")
