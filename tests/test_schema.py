"""The spec's models and its exported JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.spec import schema_text

from conftest import GOLDEN_SPECS, ROOT

SCHEMA_FILE = ROOT / "schema" / "paddlegen.schema.json"


def test_committed_schema_is_current() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "schema/paddlegen.schema.json is stale: paddlegen schema > schema/paddlegen.schema.json")


@pytest.fixture(scope="module")
def validator() -> jsonschema.Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_golden_specs_are_valid_against_the_schema(
        spec: Path, validator: jsonschema.Validator) -> None:
    assert list(validator.iter_errors(YAML(typ="safe", pure=True).load(spec))) == []


def test_schema_lets_profiles_fill_defaults_but_not_the_essentials(
        validator: jsonschema.Validator) -> None:
    minimal: dict[str, Any] = {"apiVersion": "paddlegen/v1", "kind": "TrainingJob",
                               "profile": "local", "metadata": {"name": "job"}}
    assert list(validator.iter_errors(minimal)) == []
    spec = YAML(typ="safe", pure=True).load(ROOT / "golden" / "kube-aws" / "spec.yaml")
    for key in ("port", "portsNum", "image", "configDir"):
        del spec["training"][key]
    assert list(validator.iter_errors(spec)) == []
    del spec["training"]["nodes"]
    error = jsonschema.exceptions.best_match(validator.iter_errors(spec))
    assert "'nodes' is a required property" in error.message


def test_schema_rejects_unknown_keys(validator: jsonschema.Validator) -> None:
    spec = YAML(typ="safe", pure=True).load(GOLDEN_SPECS[0])
    spec["training"]["portz"] = 1
    assert any("portz" in e.message for e in validator.iter_errors(spec))


def test_every_field_is_documented() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    models = [schema, *schema["$defs"].values()]
    undocumented = [f"{model.get('title')}.{name}" for model in models
                    for name, field in model.get("properties", {}).items()
                    if not field.get("description")]
    assert undocumented == []
