"""The spec's JSON Schema, as a user writes the spec: what a profile fills in is optional."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from paddlegen.schema.models import TrainingSpec

DRAFT = "https://json-schema.org/draft/2020-12/schema"
FILENAME = "paddlegen.schema.json"


def user_schema(profile_defaults: Iterable[dict[str, Any]]) -> dict[str, Any]:
    schema = TrainingSpec.model_json_schema(by_alias=True)
    for defaults in profile_defaults:
        _relax(TrainingSpec, defaults, schema, schema["$defs"])
    return {"$schema": DRAFT, **schema}


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
