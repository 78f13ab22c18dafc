"""The boolean validator of compiler/kube_schema.py, with jsonschema's Draft202012Validator as its
oracle: JSON's type rules, each keyword it implements, refs, random schemas of those keywords,
and the schemas it refuses to decide (which then go through jsonschema)."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator

from paddlegen.compiler.boolean_schema import (
    DRAFT_07,
    DRAFT_2020_12,
    boolean_validator,
    unsupported,
)
from paddlegen.compiler.kube_schema import supported_versions

from conftest import ROOT, example_counts

SCHEMAS = ROOT / "schema"
VENDORED = SCHEMAS / "kubernetes"


def jsonschema_valid(schema: Any, instance: Any) -> bool:
    return bool(Draft202012Validator(schema).is_valid(instance))


def decided(schema: Any, instance: Any) -> bool:
    check = boolean_validator(schema)
    assert check is not None, unsupported(schema)
    return check(instance)


TREE: dict[str, Any] = {
    "$ref": "#/$defs/tree",
    "$defs": {"tree": {"type": "object", "additionalProperties": False, "properties": {
        "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}}}}}}

CASES: list[tuple[Any, Any, bool]] = [
    # pattern: Python's re.search, as jsonschema applies it; a non-string passes.
    ({"pattern": "^[0-9]+$"}, "123", True),
    ({"pattern": "^[0-9]+$"}, "12a", False),
    ({"pattern": "b"}, "abc", True),
    ({"pattern": "^x"}, 1, True),
    ({"pattern": "^$"}, "\n", True),  # Python's $ matches before a final newline
    # JSON's types, as Draft 2020-12 has them: a boolean is no number; 1.0 is an integer.
    ({"type": "integer"}, 1, True),
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer"}, 1.5, False),
    ({"type": "integer"}, True, False),
    ({"type": "integer"}, float("inf"), False),
    ({"type": "integer"}, Decimal(1), False),
    ({"type": "number"}, True, False),
    ({"type": "number"}, 1, True),
    ({"type": "number"}, float("inf"), True),
    ({"type": "number"}, Decimal("1.5"), True),
    ({"type": "number"}, Fraction(1, 2), True),
    ({"type": "number"}, "1", False),
    ({"type": "boolean"}, 0, False),
    ({"type": "boolean"}, False, True),
    ({"type": "null"}, None, True),
    ({"type": "null"}, 0, False),
    ({"type": "string"}, "", True),
    ({"type": "string"}, b"x", False),
    ({"type": "object"}, [], False),
    ({"type": "array"}, (), False),  # a tuple is no JSON array to jsonschema
    ({"type": ["string", "null"]}, None, True),
    ({"type": ["string", "null"]}, 1, False),
    ({"type": ["integer", "string"]}, 2.0, True),
    ({"type": []}, None, False),
    # enum and const: True is not 1, but 1.0 is 1, also inside arrays and objects.
    ({"enum": [1]}, True, False),
    ({"enum": [True]}, 1, False),
    ({"enum": [1]}, 1.0, True),
    ({"enum": [0]}, False, False),
    ({"enum": [False]}, False, True),
    ({"enum": ["1"]}, 1, False),
    ({"enum": ["a", None]}, None, True),
    ({"enum": [[1, "a"]]}, [1.0, "a"], True),
    ({"enum": [[1]]}, [True], False),
    ({"enum": [{"a": 1}]}, {"a": 1.0}, True),
    ({"enum": [{"a": 1}]}, {"a": True}, False),
    ({"enum": [{"a": 1}]}, {"a": 1, "b": 2}, False),
    ({"enum": []}, None, False),
    ({"const": 1}, True, False),
    ({"const": 1}, 1.0, True),
    ({"const": None}, None, True),
    # Object keywords apply to objects only.
    ({"properties": {"a": {"type": "string"}}}, {"a": 1}, False),
    ({"properties": {"a": {"type": "string"}}}, "not an object", True),
    ({"required": ["a"]}, {}, False),
    ({"required": ["a"]}, {"a": None}, True),
    ({"required": ["a"]}, [], True),
    ({"additionalProperties": False}, {}, True),
    ({"additionalProperties": False}, {"a": 1}, False),
    ({"additionalProperties": False}, {1: 1}, False),  # YAML allows keys that are no strings
    ({"properties": {"a": True}, "additionalProperties": False}, {"a": 1}, True),
    ({"additionalProperties": {"type": "integer"}}, {"a": 1, "b": "x"}, False),
    ({"additionalProperties": {"type": "integer"}, "properties": {"b": {}}}, {"a": 1, "b": "x"},
     True),
    ({"type": "object", "properties": {"a": {}}}, None, False),
    ({"type": ["object", "null"], "required": ["a"]}, None, True),
    # items applies to arrays only.
    ({"items": {"type": "integer"}}, [1, 2.0], True),
    ({"items": {"type": "integer"}}, [1, "2"], False),
    ({"items": {"type": "integer"}}, {"a": "x"}, True),
    ({"items": False}, [], True),
    ({"items": False}, [1], False),
    ({"type": "array", "items": {}}, "x", False),
    # Combinations.
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, 1, True),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1, False),  # valid under both
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1.5, True),
    # Kubernetes' IntOrString: null matches both branches, so it is refused.
    ({"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]}, None, False),
    ({"anyOf": [{"type": "number"}, {"type": "integer"}]}, 1, True),
    ({"anyOf": [{"type": "string"}]}, 1, False),
    ({"allOf": [{"type": "number"}, {"type": "integer"}]}, 1.5, False),
    ({"allOf": [{"type": "number"}, {"type": "integer"}]}, 2, True),
    ({"not": {"type": "string"}}, 1, True),
    ({"not": {"type": "string"}}, "1", False),
    (True, {"anything": 1}, True),
    (False, None, False),
    # Refs into the root's definitions, beside other keywords (both apply), and recursive.
    ({"$ref": "#/$defs/port", "$defs": {"port": {"type": "integer"}}}, "x", False),
    ({"$ref": "#/definitions/port", "definitions": {"port": {"type": "integer"}}}, 80, True),
    ({"$ref": "#/$defs/port", "type": "integer", "$defs": {"port": {"enum": [80]}}}, 80.0, True),
    ({"$ref": "#/$defs/port", "type": "string", "$defs": {"port": {"enum": [80]}}}, 80, False),
    (TREE, {"children": [{"children": []}]}, True),
    (TREE, {"children": [{"children": []}, {"leaf": 1}]}, False),
    # Sizes: len() of a string (code points), an array, an object; other types pass.
    ({"minLength": 2}, "ab", True),
    ({"minLength": 2}, "a", False),
    ({"minLength": 2}, "\u00e9\u00e9", True),  # two code points, four bytes in UTF-8
    ({"maxLength": 1}, "\U0001F600", True),  # one code point, two UTF-16 units
    ({"maxLength": 1}, "ab", False),
    ({"maxLength": 0}, "", True),
    ({"minLength": 5}, 1, True),
    ({"minLength": 5}, ["a"], True),
    ({"minItems": 1}, [], False),
    ({"minItems": 1}, [None], True),
    ({"maxItems": 1}, [1, 2], False),
    ({"maxItems": 1}, "ab", True),
    ({"maxItems": 0}, {"a": 1}, True),
    ({"minProperties": 1}, {}, False),
    ({"minProperties": 1}, {"a": None}, True),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, False),
    ({"maxProperties": 1}, [1, 2], True),
    ({"type": "object", "maxProperties": 1}, None, False),
    # minimum and maximum: numbers only (no boolean), the bound itself included.
    ({"minimum": 1}, 1, True),
    ({"minimum": 1}, 1.0, True),
    ({"minimum": 1}, 0.5, False),
    ({"minimum": 1}, True, True),  # a boolean is no number: minimum does not apply
    ({"minimum": 1}, "0", True),
    ({"minimum": 0.5}, Decimal("0.4"), False),
    ({"minimum": 0}, float("-inf"), False),
    ({"minimum": 0}, float("nan"), True),  # jsonschema compares, and NaN < 0 is false
    ({"maximum": 2}, 2, True),
    ({"maximum": 2}, 2.5, False),
    ({"maximum": 2}, Fraction(5, 2), False),
    ({"maximum": 2}, float("inf"), False),
    ({"maximum": 1.5}, 1, True),
    ({"minimum": 1, "maximum": 1}, 1, True),
    # Annotations: format is no assertion without a format checker.
    ({"type": "string", "format": "date-time"}, "not a date", True),
    ({"type": "integer", "format": "int32"}, 2**40, True),
    ({"description": "d", "title": "t", "x-kubernetes-list-type": "map"}, 1, True),
    ({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}, 1, False),
]


@pytest.mark.parametrize(("schema", "instance", "valid"), CASES,
                         ids=[f"{json.dumps(s, default=str)[:60]}-{i!r}" for s, i, _ in CASES])
def test_decides_as_jsonschema(schema: Any, instance: Any, valid: bool) -> None:
    assert jsonschema_valid(schema, instance) is valid
    assert decided(schema, instance) is valid


UNDECIDED: list[Any] = [
    {"patternProperties": {"^x-": {}}},
    {"exclusiveMinimum": 0},
    {"multipleOf": 2},
    # the size and number keywords with values the metaschema refuses, or unusual ones
    {"minLength": -1},
    {"maxItems": 1.0},
    {"maxProperties": True},
    {"minItems": "1"},
    {"minimum": "0"},
    {"maximum": False},
    {"maximum": Decimal(1)},
    {"properties": {"a": {"pattern": "(unclosed"}}},
    {"pattern": 1},
    {"unevaluatedProperties": False},
    {"dependentRequired": {"a": ["b"]}},
    {"prefixItems": [{}]},
    {"if": {}, "then": {}},
    {"items": [{"type": "string"}]},  # the array form is no Draft 2020-12 items
    {"$id": "https://example.com/schema"},
    {"$dynamicRef": "#node"},
    {"$ref": "https://example.com/other.json"},
    {"$ref": "/api/_definitions.json#/$defs/x"},
    {"$ref": "#/$defs/missing", "$defs": {}},
    {"$ref": "#/$defs/a~1b", "$defs": {"a/b": {}}},  # pointer escapes are not decoded
    {"$ref": "#/properties/a", "properties": {"a": {}}},
    {"properties": {"a": {"$defs": {}}}},  # definitions at the root only
    {"$defs": {"a": {"uniqueItems": True}}},  # unused, but still a part of the schema
    {"$schema": "http://json-schema.org/draft-04/schema#"},
    {"type": "strin"},
    {"type": ["string", 1]},
    {"required": "a"},
    {"enum": "ab"},
    {"oneOf": {"type": "string"}},
    {"properties": [{"type": "string"}]},
    {"properties": {"a": 1}},
    "a string",
]


@pytest.mark.parametrize("schema", UNDECIDED, ids=lambda s: json.dumps(s, default=repr)[:60])
def test_what_it_does_not_implement_gets_no_boolean_validator(schema: Any) -> None:
    assert unsupported(schema)
    assert boolean_validator(schema) is None


def test_unsupported_says_where() -> None:
    assert unsupported({"properties": {"a": {"uniqueItems": True}},
                        "$defs": {"b": {"minimum": "0"}}, "x-anything": {"pattern": 1}}) == [
        "#/$defs/b/minimum: a value not implemented",
        "#/properties/a/uniqueItems: keyword not implemented"]


def vendored_files() -> list[str]:
    return sorted(f"{path.parent.name}/{path.name}" for path in VENDORED.glob("v1.*/*.json"))


@pytest.mark.parametrize("file_name", vendored_files())
def test_every_vendored_schema_is_decided_by_the_boolean_validator(file_name: str) -> None:
    assert unsupported(json.loads((VENDORED / file_name).read_bytes())) == []


def custom_resource_files() -> list[str]:
    from paddlegen.compiler.kube_schema import CUSTOM_RESOURCES

    return sorted(f"{path.parent.name}/{path.name}" for directory, _ in CUSTOM_RESOURCES
                  for path in (SCHEMAS / directory).glob("*.json"))


@pytest.mark.parametrize("file_name", custom_resource_files())
def test_every_vendored_custom_resource_is_decided_by_the_boolean_validator(
        file_name: str) -> None:
    # JobSet's, Trainer's and Kueue's schemas bound sizes and numbers: the build's objects of
    # them are decided without jsonschema too
    assert unsupported(json.loads((SCHEMAS / file_name).read_bytes())) == []


def test_kubernetes_validate_own_files_go_to_jsonschema() -> None:
    # They refer into a shared file by a relative URI, under an $id: not decided here.
    from paddlegen.compiler.kube_schema import sources

    release = next(v for v in supported_versions() if v not in ("1.5", "1.8", "1.33", "1.34",
                                                                "1.35"))
    bundled, *_crds = sources(release)
    assert bundled.shared_definitions
    schema = json.loads(bundled.file("batch/v1", "Job").read_bytes())
    assert boolean_validator(schema) is None
    assert any("$id" in problem for problem in unsupported(schema))


# --- random schemas of the implemented keywords, random instances -----------------------------

NAMES = st.sampled_from(["a", "b", "c"])
TYPE_NAMES = st.sampled_from(["array", "boolean", "integer", "null", "number", "object", "string"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2),
                    st.sampled_from([0.0, 1.0, 1.5, -2.0, float("inf")]),
                    st.sampled_from(["", "a", "1", "ab", "abc\u00e9"]))
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner,
                                                                          max_size=3),
    max_leaves=8)
ANNOTATED = st.fixed_dictionaries({}, optional={
    "description": st.just("d"), "format": st.sampled_from(["int32", "date-time"]),
    "x-kubernetes-list-type": st.just("atomic")})


def leaf_schemas(refs: list[str]) -> st.SearchStrategy[Any]:
    keywords = st.fixed_dictionaries({}, optional={
        "type": TYPE_NAMES | st.lists(TYPE_NAMES, max_size=3, unique=True),
        "enum": st.lists(JSON_VALUES, max_size=3),
        "const": JSON_VALUES,
        "required": st.lists(NAMES, max_size=2, unique=True),
        "pattern": st.sampled_from(["^a", "b$", "[0-9]", "^$", "a|^b", r"^\d+(\.\d+)?$"]),
        **dict.fromkeys(("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                         "maxProperties"), st.integers(0, 3)),
        **dict.fromkeys(("minimum", "maximum"),
                        st.integers(-2, 2) | st.sampled_from([-1.5, 0.5, 1.0, float("inf")])),
        **({"$ref": st.sampled_from(refs)} if refs else {}),
    })
    return st.booleans() | st.builds(lambda k, a: {**k, **a}, keywords, ANNOTATED)


def schemas(refs: list[str]) -> st.SearchStrategy[Any]:
    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries({}, optional={
            "type": TYPE_NAMES | st.lists(TYPE_NAMES, max_size=2, unique=True),
            "properties": st.dictionaries(NAMES, inner, max_size=3),
            "additionalProperties": inner,
            "required": st.lists(NAMES, max_size=2, unique=True),
            "items": inner,
            "allOf": st.lists(inner, min_size=1, max_size=3),
            "anyOf": st.lists(inner, min_size=1, max_size=3),
            "oneOf": st.lists(inner, min_size=1, max_size=3),
            "not": inner,
        })
    return st.recursive(leaf_schemas(refs), extend, max_leaves=10)


@st.composite
def documents(draw: st.DrawFn) -> Any:
    """A root schema whose refs point to its definitions (which hold no refs themselves, so
    that no ref loops forever), under $defs or definitions."""
    member = draw(st.sampled_from(["$defs", "definitions"]))
    definitions = draw(st.dictionaries(st.sampled_from(["d", "e.f", "io.k8s.G"]), schemas([]),
                                       max_size=2))
    refs = [f"#/{member}/{name}" for name in definitions]
    root = draw(schemas(refs))
    if isinstance(root, bool) or not definitions:
        return root
    return {**root, member: definitions}


@pytest.mark.parametrize("max_examples", example_counts(25, 250))
def test_random_schemas_are_decided_as_jsonschema_decides(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(documents(), JSON_VALUES)
    def check(schema: Any, instance: Any) -> None:
        assert decided(schema, instance) == jsonschema_valid(schema, instance)

    check()


@pytest.mark.parametrize("max_examples", example_counts(20, 150))
def test_draft_07_schemas_are_decided_as_jsonschema_decides(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(documents(), JSON_VALUES)
    def check(schema: Any, instance: Any) -> None:
        # eksctl's schema is draft-07: a $ref's siblings are ignored there
        document = {**(schema if isinstance(schema, dict) else {"allOf": [schema]}),
                    "$schema": DRAFT_07}
        assert decided(document, instance) == Draft7Validator(document).is_valid(instance)

    check()


def test_in_draft_07_a_ref_ignores_its_siblings() -> None:
    schema = {"$schema": DRAFT_07, "$ref": "#/definitions/s", "type": "integer",
              "definitions": {"s": {"type": "string"}}}
    assert decided(schema, "a") and not decided(schema, 1)
    assert not decided({**schema, "$schema": DRAFT_2020_12}, "a")  # both apply in 2020-12


def test_eksctl_schema_is_decided_by_the_boolean_validator() -> None:
    assert unsupported(json.loads((SCHEMAS / "eksctl" / "clusterconfig-v1alpha5.json")
                                  .read_bytes())) == []
