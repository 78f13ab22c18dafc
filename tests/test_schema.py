"""The spec's models and its exported JSON Schema."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.spec import load_spec, schema_text
from paddlegen.schema.json_schema import human_title

from conftest import GOLDEN, GOLDEN_SPECS, ROOT

SCHEMA_FILE = ROOT / "schema" / "paddlegen.schema.json"
# A class's name: capitalised words run together (EksSpec, WorkloadTraining).
CLASS_NAME = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")


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


# The keywords whose value is a schema, a list of schemas, or a map of them.
SCHEMA_KEYWORDS = ("items", "additionalProperties", "propertyNames", "not", "if", "then", "else")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
SCHEMA_MAPS = ("properties", "$defs")


def subschemas(node: dict[str, Any], where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema in `node`, with its JSON pointer: definitions, properties, branches (then,
    else), conditions (if) and alternatives alike."""
    yield where, node
    for keyword, value in node.items():
        if keyword in SCHEMA_KEYWORDS and isinstance(value, dict):
            yield from subschemas(value, f"{where}/{keyword}")
        elif keyword in SCHEMA_LISTS:
            for index, item in enumerate(value):
                yield from subschemas(item, f"{where}/{keyword}/{index}")
        elif keyword in SCHEMA_MAPS:
            for name, item in value.items():
                yield from subschemas(item, f"{where}/{keyword}/{name}")


def documented(field: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A property's schema over its reference's target: the generator leaves out a title or a
    description the same as the target's, which an editor then shows."""
    refs = [field.get("$ref"), *(item.get("$ref") for item in field.get("anyOf", []))]
    target: dict[str, Any] = next((defs[ref.rsplit("/", 1)[1]] for ref in refs if ref), {})
    return {**target, **field}


def properties(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each property of every schema, as pointer, key and its schema (documented)."""
    for where, node in subschemas(schema):
        for key, field in node.get("properties", {}).items():
            yield f"{where}/properties/{key}", key, documented(field, schema["$defs"])


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return loaded


def test_every_field_is_documented(schema: dict[str, Any]) -> None:
    """Every property, in a branch or a condition too, has the description an editor shows."""
    assert [where for where, _, field in properties(schema) if not field.get("description")] == []


def test_titles_are_words_not_class_names(schema: dict[str, Any]) -> None:
    """An editor shows titles (hover, completion, the source of a problem): none is a class
    name (EksSpec, WorkloadTraining), as pydantic writes a model's by default; a property's
    title is its key in words, not squashed ("Workerinstancetype", as pydantic writes one);
    and every property has one."""
    titles = [(where, node["title"]) for where, node in subschemas(schema) if "title" in node]
    assert [(where, title) for where, title in titles if CLASS_NAME.fullmatch(title)] == []
    squashed = [(where, field.get("title")) for where, key, field in properties(schema)
                if not field.get("title")
                or (" " not in field["title"] and len(human_title(key).split()) > 1)
                or (field["title"] == key.title() and key != key.lower())]
    assert squashed == []


@pytest.mark.parametrize(("key", "title"), [
    ("workerInstanceType", "Worker instance type"), ("gpusPerNode", "GPUs per node"),
    ("vpcCIDR", "VPC CIDR"), ("externalDNSName", "External DNS name"), ("s3Uri", "S3 URI"),
    ("dnsServiceIP", "DNS service IP"), ("accountId", "Account ID"), ("nic", "NIC"),
    ("ttlSecondsAfterFinished", "TTL seconds after finished"), ("image", "Image")])
def test_human_titles(key: str, title: str) -> None:
    assert human_title(key) == title


def test_an_optional_scalar_is_one_schema(schema: dict[str, Any]) -> None:
    """A nullable scalar is one schema of two types: an editor shows the alternatives of an
    anyOf as two ("Gpuspernode || Gpuspernode"). Only a reference keeps its anyOf."""
    alternatives = [where for where, _, field in properties(schema)
                    if any("$ref" not in item and item != {"type": "null"}
                           for item in field.get("anyOf", []))]
    assert alternatives == []
    gpus = schema["$defs"]["WorkloadTraining"]["then"]["properties"]["gpusPerNode"]
    assert gpus["type"] == ["integer", "null"] and gpus["maximum"] == 64


PADDLE = GOLDEN / "eks-paddle" / "spec.yaml"
PADDLE_V1 = GOLDEN / "eks" / "spec.yaml"


def without(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(training: dict[str, Any]) -> None:
        del training[key]
    return edit


def setting(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    def edit(training: dict[str, Any]) -> None:
        training[key] = value
    return edit


def both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(training: dict[str, Any]) -> None:
        for each in edits:
            each(training)
    return edit


# A change of a valid spec's training, and whether the loader takes the spec after it.
FRAMEWORK_CHANGES: list[tuple[Path, str, Callable[[dict[str, Any]], None], bool]] = [
    (PADDLE, "as it is", lambda training: None, True),
    (PADDLE, "a paddle-v1 key", setting("port", 7164), False),
    (PADDLE, "no framework: paddle", without("framework"), True),
    (PADDLE, "no framework, a paddle-v1 key: paddle-v1", both(without("framework"),
                                                             setting("nic", "eth0")), False),
    (PADDLE, "framework paddle-v1", setting("framework", "paddle-v1"), False),
    (PADDLE, "no script", without("script"), False),
    (PADDLE, "no image", without("image"), False),
    (PADDLE_V1, "as it is", lambda training: None, True),
    (PADDLE_V1, "no framework, its keys: paddle-v1", without("framework"), True),
    (PADDLE_V1, "a paddle key", setting("gpusPerNode", 1), False),
    (PADDLE_V1, "framework paddle", setting("framework", "paddle"), False),
    (PADDLE_V1, "no image: the tutorial's", without("image"), True),
]


@pytest.mark.parametrize(("spec", "change", "edit", "loads"), FRAMEWORK_CHANGES,
                         ids=[f"{s.parent.name}: {c}" for s, c, _, _ in FRAMEWORK_CHANGES])
def test_schema_reads_the_framework_as_the_loader_does(
        spec: Path, change: str, edit: Callable[[dict[str, Any]], None], loads: bool,
        validator: jsonschema.Validator) -> None:
    """The keys of training are those of its framework, written or inferred, in the schema as
    in the loader (rule framework-fields): an editor completes and accepts only those."""
    data = YAML(typ="safe", pure=True).load(spec)
    edit(data["training"])
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    try:
        load_spec(stream.getvalue().encode(), "spec.yaml")
        loaded = True
    except SpecError:
        loaded = False
    valid = not list(validator.iter_errors(data))
    assert (loaded, valid) == (loads, loads)
