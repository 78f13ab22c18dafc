"""The spec's JSON Schema, as a user writes the spec: what a profile fills in is optional."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

DRAFT = "https://json-schema.org/draft/2020-12/schema"
TITLE = "paddlegen TrainingJob spec (apiVersion paddlegen/v1)"


def user_schema(profiles: list[tuple[str, type[BaseModel], dict[str, Any]]]) -> dict[str, Any]:
    """One schema for every profile, chosen by `profile`; each entry is a profile's name, spec
    model and defaults."""
    _, schema = models_json_schema([(model, "validation") for _, model, _ in profiles],
                                   by_alias=True)
    defs = schema["$defs"]
    for _, model, defaults in profiles:
        _relax(model, defaults, defs[model.__name__], defs)
    # `profile` picks the model. if/then (rather than oneOf) makes validators and editors report
    # the errors of that profile's model alone.
    choices = [{"if": {"properties": {"profile": {"const": name}}},
                "then": {"$ref": f"#/$defs/{model.__name__}"}}
               for name, model, _ in profiles]
    return {"$schema": DRAFT, "title": TITLE, "type": "object", "required": ["profile"],
            "properties": {"profile": {"enum": [name for name, _, _ in profiles],
                                       "description": "Which way to run; picks the fields."}},
            "allOf": choices, "$defs": dict(sorted(defs.items()))}


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
