"""A JSON Schema compiled into a function that answers only "valid or not".

jsonschema builds an error for every failure and dispatches each keyword through several
layers; most of its cost is wasted on objects that are valid. `boolean_validator` compiles a
schema into nested functions that decide each keyword as jsonschema's Draft202012Validator
(without a format checker) does, for JSON data (what json and YAML loaders return).
`unsupported` lists whatever in a schema it does not implement; such a schema gets no boolean
validator, so its verdicts can never differ from jsonschema's.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[Any], bool]  # instance -> valid

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
# Draft-07 (cluster tools' published schemas): the same keywords, but a $ref's siblings are ignored.
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFTS = (DRAFT_2020_12, DRAFT_07)
# Keywords that never change validity here: Draft 2020-12 annotations, and format, which only
# asserts when a format checker is given (paddlegen gives none). x-* keywords are annotations too.
ANNOTATIONS = frozenset({"description", "title", "format", "default", "examples", "$comment",
                         "deprecated", "readOnly", "writeOnly",
                         "preferredOrder"})  # a tool's, for its docs: no draft asserts it
# Where a $ref may point: a name in one of these members of the root, and nowhere else.
DEFINITIONS = ("$defs", "definitions")
LOCAL_REF = re.compile(r"#/(\$defs|definitions)/([^/~%]+)")  # no pointer escapes to decode


def _is_integer(instance: Any) -> bool:
    # Draft 6 and later: 1.0 is an integer; True is not.
    return not isinstance(instance, bool) and (
        isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer()))


# Each JSON type as jsonschema's Draft 2020-12 type checker tests it.
JSON_TYPES: dict[str, Check] = {
    "array": lambda instance: isinstance(instance, list),
    "boolean": lambda instance: isinstance(instance, bool),
    "integer": _is_integer,
    "null": lambda instance: instance is None,
    "number": lambda instance: (not isinstance(instance, bool)
                                and isinstance(instance, numbers.Number)),
    "object": lambda instance: isinstance(instance, dict),
    "string": lambda instance: isinstance(instance, str),
}
# The JSON types of an instance, by its exact Python type, for the usual types (not float, whose
# integer-ness depends on its value): one dict lookup instead of several isinstance calls.
TYPES_OF_EXACT: dict[type, frozenset[str]] = {
    python_type: frozenset(name for name, test in JSON_TYPES.items() if test(example))
    for python_type, example in ((str, ""), (dict, {}), (list, []), (bool, True),
                                 (type(None), None), (int, 0))}


def _json_equal(one: Any, two: Any) -> bool:
    """jsonschema's equality for enum and const: True is not 1, but 1.0 is 1."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(map(_json_equal, one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(key in two and _json_equal(value, two[key])
                                            for key, value in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return False  # jsonschema's unbool: a boolean equals only itself (`is`, above)
    return bool(one == two)


# --- what the boolean validator implements ----------------------------------------------------

SUBSCHEMA_KEYWORDS = frozenset({"items", "additionalProperties", "not"})
SUBSCHEMA_LIST_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf"})
JSON_TYPE_NAMES = frozenset(JSON_TYPES)


def _ref_target(ref: Any, document: dict[str, Any]) -> tuple[str, str] | None:
    """(member, name) of the root definition a local ref names, or None."""
    match = LOCAL_REF.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        return None
    member, name = match.groups()
    definitions = document.get(member)
    return (member, name) if isinstance(definitions, dict) and name in definitions else None


def _is_type_value(value: Any) -> bool:
    names = [value] if isinstance(value, str) else value
    try:
        return isinstance(names, list) and JSON_TYPE_NAMES.issuperset(names)
    except TypeError:  # an unhashable "name"
        return False


# Keywords holding no subschema, and whether a value of theirs is one the boolean validator
# implements; None: any value.
VALUE_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], bool] | None] = {
    "type": lambda value, document: _is_type_value(value),
    "required": lambda value, document: (isinstance(value, list)
                                         and all(isinstance(name, str) for name in value)),
    "enum": lambda value, document: isinstance(value, list),
    "const": None,
    "$ref": lambda value, document: _ref_target(value, document) is not None,
    "pattern": lambda value, document: _is_regex(value),
    **dict.fromkeys(ANNOTATIONS),
}


def _is_count(value: Any) -> bool:
    # the metaschema's nonNegativeInteger; 1.0 and True are left to jsonschema
    return type(value) is int and value >= 0


def _is_bound(value: Any) -> bool:
    return type(value) in (int, float)


# The keywords that bound a size or a number: what they bound (the JSON type they apply to; any
# other instance passes), and whether the bound is a least (else a most). jsonschema applies
# them to strings (len: code points), arrays, objects and numbers only, and so do these.
SIZE_KEYWORDS: dict[str, tuple[str, bool]] = {
    "minLength": ("string", True), "maxLength": ("string", False),
    "minItems": ("array", True), "maxItems": ("array", False),
    "minProperties": ("object", True), "maxProperties": ("object", False)}
NUMBER_KEYWORDS: dict[str, bool] = {"minimum": True, "maximum": False}
VALUE_KEYWORDS |= {
    **{keyword: lambda value, document: _is_count(value) for keyword in SIZE_KEYWORDS},
    **{keyword: lambda value, document: _is_bound(value) for keyword in NUMBER_KEYWORDS}}


def _is_regex(value: Any) -> bool:
    try:
        re.compile(value)
    except (re.error, TypeError):
        return False
    return True


def _problems(schema: Any, document: dict[str, Any]) -> list[str]:
    """What in `schema` the boolean validator does not implement, each as "<location>: <what>",
    the location relative to `schema`. Locations are built only for problems: the walk over a
    whole kind (thousands of subschemas) is on the cold path."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [": not a schema"]
    if "$ref" in schema and _ref_alone(document):
        return [] if _ref_target(schema["$ref"], document) else ["/$ref: a value not implemented"]
    found: list[str] = []
    for keyword, value in schema.items():
        if keyword in VALUE_KEYWORDS:
            value_is_fine = VALUE_KEYWORDS[keyword]
            if value_is_fine is None or value_is_fine(value, document):
                continue
            inner = [": a value not implemented"]
        elif keyword in SUBSCHEMA_KEYWORDS:
            inner = _problems(value, document)
        elif keyword == "properties":
            inner = (_members_problems(value.items(), document) if isinstance(value, dict)
                     else [": not an object of schemas"])
        elif keyword in SUBSCHEMA_LIST_KEYWORDS:
            inner = (_members_problems(enumerate(value), document) if isinstance(value, list)
                     else [": not a list of schemas"])
        elif keyword.startswith("x-"):  # extensions: annotations
            continue
        else:
            inner = [": keyword not implemented"]
        if inner:
            found += [f"/{keyword}{problem}" for problem in inner]
    return found


def _members_problems(members: Iterable[tuple[Any, Any]], document: dict[str, Any]) -> list[str]:
    return [f"/{key}{problem}" for key, schema in members
            for problem in _problems(schema, document)]


def unsupported(document: Any) -> list[str]:
    """Why `boolean_validator` cannot decide `document` (a schema whose $ref values point into its
    own definitions): nothing when it can."""
    if not isinstance(document, dict):
        return [f"#{problem}" for problem in _problems(document, {})]
    found: list[str] = []
    if document.get("$schema", DRAFT_2020_12) not in DRAFTS:
        found.append(f"#/$schema: {document['$schema']!r} is neither Draft 2020-12 nor 07")
    for member in DEFINITIONS:
        definitions = document.get(member, {})
        if not isinstance(definitions, dict):
            found.append(f"#/{member}: not an object")
        else:
            found += [f"#/{member}{p}" for p in _members_problems(definitions.items(), document)]
    body = {k: v for k, v in document.items() if k not in ("$schema", *DEFINITIONS)}
    return found + [f"#{problem}" for problem in _problems(body, document)]


# --- compiling a schema into checks -----------------------------------------------------------

def _ref_alone(document: Any) -> bool:
    """Whether a $ref's siblings are ignored: in draft-07, not in 2020-12."""
    return isinstance(document, dict) and document.get("$schema") == DRAFT_07


@dataclass(frozen=True)
class _Document:
    schema: dict[str, Any]
    compiled: dict[str, Check] = field(default_factory=dict)  # so far, by $ref

    @property
    def ref_alone(self) -> bool:
        return _ref_alone(self.schema)


def _accept(instance: Any) -> bool:
    return True


def reject(instance: Any) -> bool:
    return False


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _accept
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda instance: first(instance) and second(instance)
    return lambda instance: all(check(instance) for check in checks)


def _any(checks: list[Check]) -> Check:
    return lambda instance: any(check(instance) for check in checks)


def _exactly_one(checks: list[Check]) -> Check:
    def check(instance: Any) -> bool:
        passed = 0
        for each in checks:
            passed += each(instance)
            if passed > 1:
                return False
        return passed == 1
    return check


def _type_check(declared: str | list[str]) -> Check:
    names = frozenset([declared] if isinstance(declared, str) else declared)
    verdicts = {python_type: not names.isdisjoint(json_types)
                for python_type, json_types in TYPES_OF_EXACT.items()}
    tests = [JSON_TYPES[name] for name in sorted(names)]

    def check(instance: Any) -> bool:
        verdict = verdicts.get(type(instance))
        if verdict is not None:
            return verdict
        return any(test(instance) for test in tests)  # floats, subclasses, other numbers
    return check


def _enum_check(values: list[Any]) -> Check:
    if all(isinstance(value, str) for value in values):
        # A string equals only a string: one set lookup.
        allowed = frozenset(values)
        return lambda instance: isinstance(instance, str) and instance in allowed
    return lambda instance: any(_json_equal(value, instance) for value in values)


def _object_check(schema: dict[str, Any], document: _Document, typed: Check) -> Check:
    """properties, additionalProperties and required, which apply to objects only, fused with
    the schema's type check `typed` (one call per value instead of two)."""
    properties = {name: _compile(subschema, document)
                  for name, subschema in schema.get("properties", {}).items()}
    additional = schema.get("additionalProperties", True)
    closed = additional is False
    other = None if isinstance(additional, bool) else _compile(additional, document)
    required = frozenset(schema.get("required", ()))
    objects_typed = typed({})

    def check(instance: Any) -> bool:
        if not isinstance(instance, dict):
            return typed(instance)
        if not objects_typed:
            return False
        for key, value in instance.items():
            known = properties.get(key)
            if known is None:
                if closed or (other is not None and not other(value)):
                    return False
            elif not known(value):
                return False
        return required <= instance.keys()
    return check


def _items_check(item: Check, typed: Check) -> Check:
    """items, which applies to arrays only, fused with the schema's type check `typed`."""
    arrays_typed = typed([])

    def check(instance: Any) -> bool:
        if not isinstance(instance, list):
            return typed(instance)
        return arrays_typed and all(map(item, instance))
    return check


def _ref_check(ref: str, document: _Document) -> Check:
    """The check of a root definition, compiled on first use: a kind reaches many definitions
    that an object never uses, and definitions may refer to themselves."""
    known = document.compiled.get(ref)
    if known is not None:
        return known
    compiled: list[Check] = []

    def check(instance: Any) -> bool:
        if not compiled:
            target = _ref_target(ref, document.schema)
            assert target is not None, ref  # unsupported() has made sure
            member, name = target
            compiled.append(_compile(document.schema[member][name], document))
        return compiled[0](instance)
    document.compiled[ref] = check
    return check


def _compile(schema: Any, document: _Document) -> Check:
    """The check of one (sub)schema: the conjunction of its keywords'."""
    if isinstance(schema, bool):
        return _accept if schema else reject
    if "$ref" in schema and document.ref_alone:
        return _ref_check(schema["$ref"], document)
    checks: list[Check] = []
    # The type check goes first (cheapest, and it refuses most invalid values), inside the
    # object or array check if there is one.
    typed = _type_check(schema["type"]) if "type" in schema else None
    if not {"properties", "additionalProperties", "required"}.isdisjoint(schema):
        checks.append(_object_check(schema, document, typed or _accept))
        typed = None
    if "items" in schema:
        checks.append(_items_check(_compile(schema["items"], document), typed or _accept))
        typed = None
    if typed is not None:
        checks.insert(0, typed)
    if "enum" in schema:
        checks.append(_enum_check(schema["enum"]))
    if "const" in schema:
        expected = schema["const"]
        checks.append(lambda instance: _json_equal(instance, expected))
    if "$ref" in schema:
        checks.append(_ref_check(schema["$ref"], document))
    if "pattern" in schema:
        checks.append(_pattern_check(schema["pattern"]))
    checks += [_size_check(JSON_TYPES[of], schema[keyword], least)
               for keyword, (of, least) in SIZE_KEYWORDS.items() if keyword in schema]
    checks += [_number_check(schema[keyword], least)
               for keyword, least in NUMBER_KEYWORDS.items() if keyword in schema]
    for keyword, combine in (("allOf", _all), ("anyOf", _any), ("oneOf", _exactly_one)):
        if keyword in schema:
            checks.append(combine([_compile(each, document) for each in schema[keyword]]))
    if "not" in schema:
        negated = _compile(schema["not"], document)
        checks.append(lambda instance: not negated(instance))
    return _all(checks)


def _size_check(applies: Check, bound: int, least: bool) -> Check:
    """minLength and the like: len() of an instance of the type `applies` tests."""
    if least:
        return lambda instance: not applies(instance) or len(instance) >= bound
    return lambda instance: not applies(instance) or len(instance) <= bound


def _number_check(bound: float, least: bool) -> Check:
    """minimum or maximum, as jsonschema compares (a NaN instance passes both)."""
    is_number = JSON_TYPES["number"]
    if least:
        return lambda instance: not is_number(instance) or not instance < bound
    return lambda instance: not is_number(instance) or not instance > bound


def _pattern_check(pattern: str) -> Check:
    # jsonschema's pattern: Python's re.search, on strings only
    search = re.compile(pattern).search
    return lambda instance: not isinstance(instance, str) or search(instance) is not None


def boolean_validator(document: Any) -> Check | None:
    """A function telling whether an instance is valid against `document` (a schema whose $ref
    values point into its own definitions), exactly as jsonschema's Draft202012Validator would (its
    Draft7Validator, for a draft-07 schema); None when the schema uses something it does not
    implement (see `unsupported`)."""
    if unsupported(document):
        return None
    if isinstance(document, bool):
        return _compile(document, _Document({}))
    return _compile(document, _Document(document))
