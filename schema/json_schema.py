"""The spec's JSON Schema, as a user writes the spec: what a profile fills in is optional.

It is written for editors too (yaml-language-server: VS Code's YAML extension, and others),
which show titles and descriptions on hover and in completion: every property has a title made
from its key ("workerInstanceType": "Worker instance type") and a description; every model a
title of words, never its class name (shown where a key has no title of its own, as is the
name of its definition where the model has none); and an optional scalar is one schema of two
types, not `anyOf` a null, which editors show as two alternatives. A model refines its own
part with json_schema_extra: training's keys by framework (profiles/workload.py)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema

# 2020-12, which yaml-language-server validates with since 1.20 (unevaluatedProperties and
# if/then/else included): tests/test_editor.py drives 1.25 on it.
DRAFT = "https://json-schema.org/draft/2020-12/schema"
TITLE = "paddlegen TrainingJob spec (apiVersion paddlegen/v1)"

# A key's words: lower-case runs with an optional capital first, and upper-case runs
# (acronyms: vpcCIDR, externalDNSName), digits kept with the word before them (s3Uri).
KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
# How a word of a key is written in a title.
WORD_SPELLING = {
    "api": "API", "arn": "ARN", "aws": "AWS", "cidr": "CIDR", "cpu": "CPU", "dir": "directory",
    "dns": "DNS", "efa": "EFA", "efs": "EFS", "gpu": "GPU", "gpus": "GPUs", "id": "ID",
    "ip": "IP", "kms": "KMS", "kube": "Kubernetes", "nic": "NIC", "s3": "S3", "ttl": "TTL",
    "uri": "URI", "vpc": "VPC"}


def human_title(key: str) -> str:
    """A key as words: "workerInstanceType" -> "Worker instance type", "vpcCIDR" -> "VPC CIDR"."""
    words = [WORD_SPELLING.get(word.lower(), word.lower()) for word in KEY_WORD.findall(key)]
    title = " ".join(words) or key
    return title[0].upper() + title[1:]


class EditorSchema(GenerateJsonSchema):
    """pydantic's JSON Schema with a title of words on every property, references included
    (an editor shows the title where the key is), and optional scalars of one schema."""

    def get_title_from_name(self, name: str) -> str:
        return human_title(name)

    def field_title_should_be_set(self, schema: Any) -> bool:
        return True  # also for a model's field: its key's title, rather than the model's

    def nullable_schema(self, schema: Any) -> JsonSchemaValue:
        return with_null(super().nullable_schema(schema))


def with_null(schema: JsonSchemaValue) -> JsonSchemaValue:
    """`anyOf: [S, {type: null}]` as S with "null" among its types, where S names one type
    (its other keywords only constrain values of that type); a reference stays an anyOf."""
    alternatives = schema.get("anyOf", [])
    if schema.keys() != {"anyOf"} or len(alternatives) != 2 or alternatives[1] != {
            "type": "null"} or not isinstance(alternatives[0].get("type"), str):
        return schema
    value = dict(alternatives[0])
    value["type"] = [value["type"], "null"]
    if "const" in value:  # a const would refuse the null that the type now allows
        value["enum"] = [value.pop("const")]
    if "enum" in value:
        value["enum"] = [*value["enum"], None]
    return value


def document_references(model: dict[str, Any]) -> None:
    """Each field that may be null or a model (anyOf) documented on that model's alternative
    too: an editor shows the first documentation it finds, the referenced model's otherwise."""
    for field in model.get("properties", {}).values():
        for alternative in field.get("anyOf", []):
            if "$ref" in alternative:
                alternative.update({key: field[key] for key in ("title", "description")
                                    if key in field})


def user_schema(profiles: list[tuple[str, type[BaseModel], dict[str, Any]]]) -> dict[str, Any]:
    """One schema for every profile, chosen by `profile`; each entry is a profile's name, spec
    model and defaults."""
    _, schema = models_json_schema([(model, "validation") for _, model, _ in profiles],
                                   by_alias=True, schema_generator=EditorSchema)
    defs = schema["$defs"]
    for model in defs.values():
        document_references(model)
    for name, model, defaults in profiles:
        _relax(model, defaults, defs[model.__name__], defs)
        defs[model.__name__]["title"] = f"Spec of profile {name}"
    profile = {"enum": [name for name, _, _ in profiles], "title": "Profile",
               "description": "Which way to run; picks the fields."}
    # `profile` picks the model. if/then (rather than oneOf) makes validators and editors report
    # the errors of that profile's model alone.
    # An absent profile picks none (an `if` of properties alone holds where they are absent).
    choices = [{"if": {"required": ["profile"],
                       "properties": {"profile": condition(profile, {"const": name})}},
                "then": {"$ref": f"#/$defs/{model.__name__}"}}
               for name, model, _ in profiles]
    return {"$schema": DRAFT, "title": TITLE, "type": "object", "required": ["profile"],
            "properties": {"profile": profile}, "allOf": choices,
            "$defs": dict(sorted(defs.items()))}


def condition(documented: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    """A property's schema in an `if`, with the title and description of the property: an
    editor shows those of whichever schema of a key it finds first, a condition's too."""
    return {"title": documented["title"], "description": documented["description"], **test}


def _relax(model: type[BaseModel], defaults: dict[str, Any], node: dict[str, Any],
           defs: dict[str, Any]) -> None:
    """Drop from `node`'s required list every key `defaults` supplies, recursively."""
    fields = {field.alias or name: field for name, field in model.model_fields.items()}
    for key, value in defaults.items():
        if key in node.get("required", []):
            node["required"].remove(key)
        submodel = next((arg for arg in getattr(fields[key].annotation, "__args__", ())
                         if isinstance(arg, type) and issubclass(arg, BaseModel)),
                        fields[key].annotation)
        if isinstance(value, dict) and isinstance(submodel, type) and issubclass(
                submodel, BaseModel):
            _relax(submodel, value, defs[submodel.__name__], defs)

