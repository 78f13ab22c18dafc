"""The spec's JSON Schema, as a user writes the spec: what a profile fills in is optional."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter

from paddlegen.schema.models import SPEC_MODELS, TrainingSpec

DRAFT = "https://json-schema.org/draft/2020-12/schema"
TITLE = "paddlegen TrainingJob spec (apiVersion paddlegen/v1)"


def user_schema(profile_defaults: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One schema for every profile, chosen by `profile`; `profile_defaults` by profile name."""
    schema = TypeAdapter(TrainingSpec).json_schema(by_alias=True)
    for profile, defaults in profile_defaults.items():
        model = SPEC_MODELS[profile]
        _relax(model, defaults, schema["$defs"][model.__name__], schema["$defs"])
    # `profile` picks the model. if/then (rather than oneOf) makes validators and editors report
    # the errors of that profile's model alone.
    choices = [{"if": {"properties": {"profile": {"const": profile}}},
                "then": {"$ref": f"#/$defs/{model.__name__}"}}
               for profile, model in SPEC_MODELS.items()]
    return {"$schema": DRAFT, "title": TITLE, "type": "object", "required": ["profile"],
            "properties": {"profile": {"enum": list(SPEC_MODELS),
                                       "description": "Which way to run; picks the fields."}},
            "allOf": choices, "$defs": schema["$defs"]}


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
