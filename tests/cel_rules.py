"""The CEL rules of a vendored custom resource schema (its `x-kubernetes-validations`, which
JSON Schema validators take for annotations), evaluated on one object the way the API server
evaluates them when the object is created. For tests only: the evaluator is the `cel` module of
common-expression-language (in the test extra), which paddlegen itself does not depend on.

What the API server does, and so what this does:
- the object is first defaulted from the schema's `default`s (structural defaulting: a missing or
  null property gets its default, then the walk goes on into it);
- each rule is evaluated at its node with `self` bound to the node's value, wherever the node is
  present: every item of a list, every value of a map; at the root, `self.metadata` holds only
  `name` and `generateName`;
- a rule that reads `oldSelf` (a transition rule: immutability, for one) is evaluated on updates
  only, so never here;
- a rule that is false is a violation worded by its `message` (else "failed rule: <rule>"); a
  rule that cannot be evaluated (a field that is not set and has no default: "no such key") is
  a violation too, as the API server refuses the object.

What it does not do: type the values as the API server does before evaluating (a `date-time`
string is a timestamp there, a string here; no rule of the vendored CRDs reads one), nor offer
Kubernetes' CEL libraries (quantity(), isURL(), format.*, the strings and lists extensions: no
rule of the vendored CRDs calls one; such a rule is a violation here, "undefined function"), nor
limit a rule's cost.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import cel

from paddlegen.compiler.problems import FieldPath, Violation

Schema = dict[str, Any]

# The fields of the object's own metadata that a rule at the root can read.
ROOT_METADATA = ("name", "generateName")


class UnsupportedRule(ValueError):
    """A rule this evaluator would get wrong: one that reads `oldSelf` optionally (evaluated on
    creation too, with no old value), or a `fieldPath` it cannot follow."""


def cel_violations(obj: dict[str, Any], schema: Schema) -> list[Violation]:
    """Each rule of `schema` that `obj` (defaulted as the API server defaults it) breaks: (path of
    the node, or of the rule's fieldPath, message), in the order the walk meets them."""
    found: list[Violation] = []
    _check(with_defaults(obj, schema), schema, (), found)
    return found


def rules(schema: Schema) -> list[tuple[FieldPath, dict[str, Any]]]:
    """Every rule of the schema, with the path of its node (list items as "[]", map values as
    "{}"): where cel_violations evaluates them."""
    out: list[tuple[FieldPath, dict[str, Any]]] = []

    def walk(node: Schema, path: FieldPath) -> None:
        out.extend((path, rule) for rule in node.get("x-kubernetes-validations", ()))
        for name, child in node.get("properties", {}).items():
            walk(child, (*path, name))
        if isinstance(node.get("items"), dict):
            walk(node["items"], (*path, "[]"))
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], (*path, "{}"))

    walk(schema, ())
    return out


def with_defaults(value: Any, schema: Schema) -> Any:
    """A copy of `value` with the schema's defaults applied, as the API server's structural
    defaulting applies them: in an object, a property missing (or null, unless nullable) takes
    its default; then each property, map value and list item is defaulted in turn."""
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        out = dict(value)
        for name, prop in properties.items():
            if "default" in prop and (name not in out
                                      or (out[name] is None and not prop.get("nullable"))):
                out[name] = copy.deepcopy(prop["default"])
        additional = schema.get("additionalProperties")
        for name, item in out.items():
            if name in properties:
                out[name] = with_defaults(item, properties[name])
            elif isinstance(additional, dict):
                out[name] = with_defaults(item, additional)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(item, schema["items"]) for item in value]
    return value


@cache
def _program(rule: str) -> cel.Program | None:
    """The compiled rule, or None for a transition rule (it reads oldSelf)."""
    program = cel.compile(rule)
    return None if "oldSelf" in program.references()["variables"] else program


def _check(value: Any, schema: Schema, path: FieldPath, found: list[Violation]) -> None:
    if value is None:
        return
    bound = value
    if not path and isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        metadata = value["metadata"]
        bound = {**value, "metadata": {key: metadata[key] for key in ROOT_METADATA
                                       if key in metadata}}
    for rule in schema.get("x-kubernetes-validations", ()):
        problem = _broken(rule, bound)
        if problem is not None:
            found.append(((*path, *_field_path(rule.get("fieldPath", ""))), problem))
    properties = schema.get("properties", {})
    additional = schema.get("additionalProperties")
    if isinstance(value, dict):
        for name, item in value.items():
            if name in properties:
                _check(item, properties[name], (*path, name), found)
            elif isinstance(additional, dict):
                _check(item, additional, (*path, name), found)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _check(item, schema["items"], (*path, index), found)


def _broken(rule: dict[str, Any], value: Any) -> str | None:
    """Why the value breaks the rule, or None if it keeps it (or the rule is a transition
    rule)."""
    if rule.get("optionalOldSelf"):
        raise UnsupportedRule(f"{rule['rule']}: optionalOldSelf")
    program = _program(rule["rule"])
    if program is None:
        return None
    try:
        result = program.execute({"self": value})
    except KeyError as error:  # what cel-go words "no such key"
        return f"{rule['rule']}: evaluation error: no such key: {error.args[0]}"
    except (RuntimeError, TypeError, ValueError) as error:
        return f"{rule['rule']}: evaluation error: {error}"
    if result is True:
        return None
    if result is not False:
        return f"{rule['rule']}: evaluated to {result!r}, not a bool"
    message = rule.get("message") or f"failed rule: {rule['rule']}"
    if "messageExpression" in rule:
        try:
            worded = cel.compile(rule["messageExpression"]).execute({"self": value})
        except (KeyError, RuntimeError, TypeError, ValueError):
            worded = None
        if isinstance(worded, str) and worded.strip():
            message = worded
    return str(message)


def _field_path(field_path: str) -> FieldPath:
    """A rule's fieldPath, `.a.b` relative to its node, as path parts."""
    if not field_path:
        return ()
    parts = field_path.split(".")
    if parts[0] != "" or not all(part.isidentifier() for part in parts[1:]):
        raise UnsupportedRule(f"fieldPath {field_path!r}: only .name.name… is followed here")
    return tuple(parts[1:])
