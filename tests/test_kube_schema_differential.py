"""Differential: on the objects of every golden build, mutated at random, the boolean validator
says "valid" exactly when jsonschema finds no error, and violations() words exactly what
jsonschema over the schemas paddlegen applied before vendoring the current releases reports
(kubernetes-validate's own files for each vendored release, with their shared definitions):
same paths, same messages, same order. Each object is checked against its own release and the
current ones."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from functools import cache
from typing import Any, TypeVar

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from paddlegen.compiler.build import build
from paddlegen.compiler.kube_schema import (
    INIT_CONTAINERS_ANNOTATION,
    fast_valid,
    names_a_kind,
    sources,
    violations,
)
from paddlegen.compiler.problems import FieldPath, Violation

from conftest import GOLDEN_SPECS, example_counts
from vendor_kubernetes import CURRENT_RELEASES

Obj = TypeVar("Obj", dict[str, Any], list[Any])


def golden_objects() -> list[tuple[str, dict[str, Any], str]]:
    """(name, object, its release) for every object of every golden build."""
    found = []
    for spec in GOLDEN_SPECS:
        result = build(spec.read_bytes(), "spec.yaml")
        release = result.plan.meta.target.kube.schema
        found += [(f"{spec.parent.name}/{m.path}", m.obj, release) for m in result.manifests]
    return found


OBJECTS = golden_objects()


def releases_of(obj: dict[str, Any], own: str) -> list[str]:
    """Its own release, and each current release that serves its kind."""
    current = [release for release in CURRENT_RELEASES
               if sources(release)[0].file(obj["apiVersion"], obj["kind"]).is_file()]
    return list(dict.fromkeys([own, *current]))


# --- the reference: jsonschema alone, on kubernetes-validate's files of the vendored releases --


@cache
def reference_validator(release: str, api_version: str, kind: str) -> Any:
    """jsonschema's validator of the kind: the vendored file for 1.5 and 1.8, otherwise
    kubernetes-validate's own file with its shared definitions; None for no such kind."""
    if not names_a_kind(api_version, kind):
        return None
    for schemas in sources(release):
        if release in CURRENT_RELEASES and schemas.directory.name == f"v{release}":
            continue  # the vendored copy: what is under test
        path = schemas.file(api_version, kind)
        if path.is_file():
            registry: Any = Registry()
            if schemas.shared_definitions:
                definitions = json.loads((schemas.directory / "_definitions.json").read_bytes())
                registry = Resource.from_contents(definitions) @ registry
            return Draft202012Validator(json.loads(path.read_bytes()), registry=registry)
    return None


def reference_violations(obj: dict[str, Any], release: str) -> list[Violation]:
    """What violations() reported before the boolean validator and the vendored current
    releases (its code then, made safe for objects whose spec is no object)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    validator = reference_validator(release, str(api_version), str(kind))
    if validator is None:
        return [((), f"Kubernetes {release} serves no {kind} in {api_version}")]
    found: list[Violation] = [(tuple(e.absolute_path), e.message)
                              for e in validator.iter_errors(obj)]
    found += reference_init_container_violations(obj, release)
    return sorted(found, key=lambda v: (tuple(map(str, v[0])), v[1]))


def reference_valid(obj: dict[str, Any], release: str) -> bool:
    """reference_violations(obj, release) == [], stopping at the first violation."""
    validator = reference_validator(release, str(obj.get("apiVersion")), str(obj.get("kind")))
    return (validator is not None and next(iter(validator.iter_errors(obj)), None) is None
            and not reference_init_container_violations(obj, release))


def reference_init_container_violations(obj: dict[str, Any], release: str) -> list[Violation]:
    path: FieldPath = ("spec", "template", "metadata", "annotations", INIT_CONTAINERS_ANNOTATION)
    node: Any = obj
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    text = node.get(path[-1]) if isinstance(node, dict) else None
    if text is None:
        return []
    try:
        containers = json.loads(text)
    except (TypeError, ValueError) as error:
        return [(path, f"not JSON: {error}")]
    if not isinstance(containers, list):
        return [(path, "not a JSON list of containers")]
    validator = reference_validator(release, "v1", "Container")
    return [(path, f"[{index}]{dotted(error.absolute_path)}: {error.message}")
            for index, container in enumerate(containers)
            for error in validator.iter_errors(container)]


def dotted(path: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


# --- mutations --------------------------------------------------------------------------------


def nodes(value: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any]]:
    """Every value inside `value` (itself included) with its path."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from nodes(item, (*path, index))


def parent_of(obj: Any, path: FieldPath) -> Any:
    node = obj
    for step in path[:-1]:
        node = node[step]
    return node


def with_value(obj: Obj, path: FieldPath, value: Any) -> Obj:
    result = copy.deepcopy(obj)
    parent_of(result, path)[path[-1]] = copy.deepcopy(value)
    return result


def without(obj: Obj, path: FieldPath) -> Obj:
    result = copy.deepcopy(obj)
    del parent_of(result, path)[path[-1]]
    return result


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000),
                    st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e20, float("inf")]),
                    st.text(max_size=6), st.sampled_from(["80", "http", "500m", "1Gi", "v1"]))
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (st.lists(inner, max_size=3)
                   | st.dictionaries(st.sampled_from(["name", "a", "port", "path"]), inner,
                                     max_size=3)),
    max_leaves=6)
# Names of fields elsewhere in the objects, or in no schema, or that look like keywords.
UNKNOWN_KEYS = st.sampled_from(["name", "image", "ports", "status", "hostPorts", "spec",
                                "metadata", "apiVersion", "description", "$ref", "type",
                                "x-kubernetes-list-type", "additionalProperties"]) | st.text(
    max_size=8)
# apiVersion and kind are the schemas' enums; other kinds and groups switch schemas (apps/v1
# Deployment: a kind not vendored, from kubernetes-validate's files).
API_VERSIONS = st.sampled_from(["v1", "batch/v1", "batch/v2", "rbac.authorization.k8s.io/v1",
                                "networking.k8s.io/v1", "storage.k8s.io/v1", "apps/v1", "",
                                "BATCH/V1"])
KINDS = st.sampled_from(["Job", "Pod", "ConfigMap", "Namespace", "StorageClass", "Deployment",
                         "NetworkPolicy", "job", "Container", ""])
# Fields that take an integer or a string (IntOrString, Quantity), or a number in 1.5.
INT_OR_STRING_FIELDS = {"port", "targetPort", "containerPort", "hostPort", "cpu", "memory",
                        "storage", "nvidia.com/gpu"}
INT_OR_STRING_VALUES: st.SearchStrategy[Any] = st.sampled_from(
    [80, "80", "http", 80.0, 80.5, True, None, "500m", 0.5, 2, "2", -1, [], {}])


def numeric_variants(value: Any) -> list[Any]:
    """1 <-> 1.0 <-> True, and their string forms."""
    if isinstance(value, bool):
        return [int(value), float(value), str(value).lower(), not value]
    if isinstance(value, int):
        return [float(value), value + 0.5, str(value), bool(value), -value]
    if isinstance(value, float):
        if not math.isfinite(value):
            return [0, str(value), True]
        return [int(value) if value.is_integer() else round(value), str(value), True]
    return [1, 1.0, True]


@st.composite
def mutation(draw: st.DrawFn, obj: dict[str, Any]) -> dict[str, Any]:
    """One random change anywhere in `obj` (a new object)."""
    everything = list(nodes(obj))
    inner = [path for path, _ in everything if path]
    kind = draw(st.sampled_from(["retype", "add", "drop", "enum", "numeric", "int-or-string",
                                 "graft", "init-containers"]))
    if kind == "retype":
        return with_value(obj, draw(st.sampled_from(inner)), draw(JSON_VALUES))
    if kind == "add":
        objects = [path for path, value in everything if isinstance(value, dict)]
        path = draw(st.sampled_from(objects))
        return with_value(obj, (*path, draw(UNKNOWN_KEYS)), draw(JSON_VALUES))
    if kind == "drop":
        return without(obj, draw(st.sampled_from(inner)))
    if kind == "enum":
        key = draw(st.sampled_from(["apiVersion", "kind"]))
        return with_value(obj, (key,), draw(API_VERSIONS if key == "apiVersion" else KINDS))
    if kind == "numeric":
        scalars = [(p, v) for p, v in everything if p and isinstance(v, int | float)]
        if not scalars:
            return obj
        path, value = draw(st.sampled_from(scalars))
        return with_value(obj, path, draw(st.sampled_from(numeric_variants(value))))
    if kind == "int-or-string":
        fields = [p for p, _ in everything if p and p[-1] in INT_OR_STRING_FIELDS]
        if not fields:
            return obj
        return with_value(obj, draw(st.sampled_from(fields)), draw(INT_OR_STRING_VALUES))
    if kind == "graft":  # a value from elsewhere in the object: right shape, wrong place
        source = draw(st.sampled_from(everything))[1]
        return with_value(obj, draw(st.sampled_from(inner)), source)
    return draw(init_containers_mutation(obj))


@st.composite
def init_containers_mutation(draw: st.DrawFn, obj: dict[str, Any]) -> dict[str, Any]:
    """A change inside the JSON of the init-containers annotation, or of the annotation."""
    path: FieldPath = ("spec", "template", "metadata", "annotations", INIT_CONTAINERS_ANNOTATION)
    node: Any = obj
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    if not isinstance(node, str):
        return obj
    try:
        containers = json.loads(node)
    except ValueError:
        return obj
    if not isinstance(containers, list) or not containers or draw(st.booleans()):
        return with_value(obj, path, draw(st.sampled_from(["", "[", "{}", "[]", "[1]", "null"])))
    index = draw(st.integers(0, len(containers) - 1))
    if isinstance(containers[index], dict):
        containers[index] = draw(mutation(containers[index]))
    return with_value(obj, path, json.dumps(containers))


@st.composite
def mutated(draw: st.DrawFn, obj: dict[str, Any], at_least: int = 0) -> dict[str, Any]:
    for _ in range(draw(st.integers(at_least, 3))):
        obj = draw(mutation(obj))
    return obj


# --- the properties ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "obj", "release"), OBJECTS,
                         ids=[name for name, _, _ in OBJECTS])
def test_every_golden_object_is_fast_valid(name: str, obj: dict[str, Any], release: str) -> None:
    assert fast_valid(obj, release)


@st.composite
def mutated_golden_objects(draw: st.DrawFn,
                           at_least: int = 0) -> tuple[dict[str, Any], list[str]]:
    _, obj, release = draw(st.sampled_from(OBJECTS))
    return draw(mutated(obj, at_least)), releases_of(obj, release)


@pytest.mark.parametrize("max_examples", example_counts(50, 400))
def test_fast_verdict_and_violations_agree_with_jsonschema(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(mutated_golden_objects())
    def check(case: tuple[dict[str, Any], list[str]]) -> None:
        obj, releases = case
        for release in releases:
            expected = reference_violations(obj, release)
            assert fast_valid(obj, release) == (expected == []), release
            assert violations(obj, release) == expected, release

    check()


SCALAR_SWAPS = (None, True, False, 1.0, 0.5, "1", 80)


def swappable(obj: dict[str, Any]) -> list[FieldPath]:
    """The paths of its numbers and booleans, and of its int-or-string fields."""
    return [path for path, value in nodes(obj)
            if path and (path[-1] in INT_OR_STRING_FIELDS or isinstance(value, int | float))]


WITH_NUMBERS = [case for case in OBJECTS if swappable(case[1])]


@pytest.mark.parametrize("every_release", [
    pytest.param(False, id="two-releases"),  # its own and one current: each release is one's
    pytest.param(True, id="every-release", marks=pytest.mark.conformance)])
@pytest.mark.parametrize(("name", "obj", "release"), WITH_NUMBERS,
                         ids=[name for name, _, _ in WITH_NUMBERS])
def test_every_number_and_int_or_string_field_swapped_agrees_with_jsonschema(
        name: str, obj: dict[str, Any], release: str, every_release: bool) -> None:
    """Deterministically, where the random mutations might miss: null in IntOrString and
    Quantity (oneOf with null in both branches), 1.0 for an integer, True for a number.
    jsonschema takes seconds for all of them: the fast part decides each swap in the object's
    own release and the first other current one, the conformance part in every release."""
    releases = releases_of(obj, release)
    if not every_release:
        releases = releases[:2]
    for path in swappable(obj):
        for value in SCALAR_SWAPS:
            swapped = with_value(obj, path, value)
            for each in releases:
                expected = reference_valid(swapped, each)
                assert fast_valid(swapped, each) == expected, (path, value, each)


@pytest.mark.parametrize("verdict", [True, False])
def test_mutated_objects_reach_both_verdicts(verdict: bool) -> None:
    """The property above would be weak if a mutation always broke the object."""
    find(mutated_golden_objects(at_least=2),
         lambda case: fast_valid(case[0], case[1][-1]) is verdict,
         settings=settings(max_examples=2000, phases=[Phase.generate]))  # one is enough: no
    # shrinking it (which took seconds at times: every step of it decides a whole object)
