"""The maintainer scripts that regenerate the vendored schemas (scripts/, beside the package and
not in it): what they share (scripts/vendoring.py), and the Kubeflow PaddleJob schema
(schema/kubeflow/) as scripts/vendor_kubeflow.py makes it. The Kubernetes schemas and
scripts/vendor_kubernetes.py are tested in test_vendored_schemas.py."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import vendor_kubeflow
import vendoring
from conftest import ROOT
from vendoring import Keywords, Pin, Schema, VendorError

KUBEFLOW = ROOT / "schema" / "kubeflow"
PADDLEJOB_SCHEMA = KUBEFLOW / "paddlejob-kubeflow-v1.json"

KEYWORDS = Keywords(one=vendoring.ONE_SUBSCHEMA, listed=vendoring.LIST_OF_SUBSCHEMAS,
                    named=frozenset({"properties"}), plain=frozenset({"type", "description"}),
                    annotation_prefix="x-")


def crd_of(schema: Schema) -> dict[str, Any]:
    """A PaddleJob CRD whose version v1 has this openAPIV3Schema."""
    return {"kind": "CustomResourceDefinition",
            "metadata": {"name": vendor_kubeflow.CRD_NAME},
            "spec": {"group": vendor_kubeflow.GROUP, "names": {"kind": vendor_kubeflow.KIND},
                     "versions": [{"name": vendor_kubeflow.VERSION,
                                   "schema": {"openAPIV3Schema": schema}}]}}


# --- the scripts stay out of the package ------------------------------------------------------


def test_the_vendored_data_directories_hold_no_code() -> None:
    # schema/ is paddlegen.schema: a script in one of its data directories is installed with it
    # (and importable from an editable install).
    data = [path for path in (ROOT / "schema").iterdir()
            if path.is_dir() and path.name != "__pycache__"]
    assert {path.name for path in data} >= {"kubernetes", "kubeflow", "eksctl"}
    assert [str(code.relative_to(ROOT)) for path in data for code in path.rglob("*.py")] == []


def test_the_scripts_write_into_the_package_data() -> None:
    assert vendoring.ROOT == ROOT
    assert vendor_kubeflow.OUTPUT == PADDLEJOB_SCHEMA


# --- the pin check ------------------------------------------------------------------------------


def test_pin_check_returns_the_digest_of_the_pinned_file(tmp_path: Path) -> None:
    source = tmp_path / "source.yaml"
    source.write_bytes(b"pinned\n")
    digest = hashlib.sha256(b"pinned\n").hexdigest()
    assert vendoring.check_pin(source, Pin("the source", digest)) == digest


def test_pin_check_refuses_another_file_unless_told(tmp_path: Path) -> None:
    source = tmp_path / "source.yaml"
    source.write_bytes(b"another\n")
    digest = hashlib.sha256(b"another\n").hexdigest()
    pin = Pin("the source v1", "0" * 64)
    with pytest.raises(VendorError, match=f"source.yaml: sha256 {digest}, not the pinned "
                                          f"{'0' * 64} of the source v1"):
        vendoring.check_pin(source, pin)
    assert vendoring.check_pin(source, pin, accept_other=True) == digest


# --- the walk over subschemas -------------------------------------------------------------------


def test_walk_changes_each_subschema_deepest_first_and_names_where() -> None:
    schema = {"type": "object", "description": "d",
              "properties": {"description": {"type": "string", "description": "a field"},
                             "list": {"type": "array", "items": {"anyOf": [{"type": "string"},
                                                                           True]}}}}
    seen: list[str] = []

    def change(subschema: Schema, where: str) -> Schema:
        seen.append(where)
        return vendoring.without("description")(subschema, where)

    assert vendoring.map_schemas(schema, change, KEYWORDS) == {
        "type": "object",
        # A property named description stays: property names are no keywords.
        "properties": {"description": {"type": "string"},
                       "list": {"type": "array", "items": {"anyOf": [{"type": "string"},
                                                                     True]}}}}
    assert seen == ["#/properties/description", "#/properties/list/items/anyOf/0",
                    "#/properties/list/items", "#/properties/list", "#"]


@pytest.mark.parametrize(("schema", "message"), [
    ({"properties": {"a": {"$ref": "#/x"}}}, r"#/properties/a: unknown keyword '\$ref'"),
    ({"x-kubernetes-list-type": "set", "y-other": 1}, r"#: unknown keyword 'y-other'"),
    ({"items": [{"type": "string"}]}, r"#/items: a schema that is neither an object nor a boolean"),
])
def test_walk_stops_on_what_it_does_not_know(schema: Schema, message: str) -> None:
    with pytest.raises(VendorError, match=message):
        vendoring.map_schemas(schema, lambda subschema, where: subschema, KEYWORDS)


# --- the definitions a root reaches -------------------------------------------------------------


def test_reached_follows_refs_through_cycles_and_not_into_property_names() -> None:
    definitions = {
        "a": {"properties": {"b": {"$ref": "#/d/b"}, "$ref": {"type": "string"}}},
        "b": {"items": {"$ref": "#/d/a"}},
        "c": {"$ref": "#/d/a"},  # refers to a, but nothing refers to it
    }
    assert vendoring.reached(definitions, ["a"], "#/d/") == {"a", "b"}
    assert vendoring.reached(definitions, ["c"], "#/d/") == {"a", "b", "c"}


def test_reached_stops_on_a_missing_or_remote_definition() -> None:
    with pytest.raises(VendorError, match="b is referred to but not defined"):
        vendoring.reached({"a": {"$ref": "#/d/b"}}, ["a"], "#/d/")
    with pytest.raises(VendorError, match=re.escape("not a local definition: other.json#/d/b")):
        vendoring.reached({"a": {"$ref": "other.json#/d/b"}}, ["a"], "#/d/")


# --- --check ------------------------------------------------------------------------------------


def test_out_of_date_names_each_file_missing_changed_or_left_over(tmp_path: Path) -> None:
    (tmp_path / "same.json").write_text("{}\n")
    (tmp_path / "changed.json").write_text("{}\n")
    (tmp_path / "left.json").write_text("{}\n")
    expected = {tmp_path / "same.json": "{}\n", tmp_path / "changed.json": "[]\n",
                tmp_path / "missing.json": "{}\n"}
    assert vendoring.out_of_date(expected, tmp_path.glob("*.json")) == [
        f"{tmp_path / 'changed.json'}: differs", f"{tmp_path / 'missing.json'}: missing",
        f"{tmp_path / 'left.json'}: would be removed"]
    assert vendoring.out_of_date({tmp_path / "same.json": "{}\n"}, [tmp_path / "same.json"]) == []


def test_report_exits_1_on_a_difference(capsys: pytest.CaptureFixture[str]) -> None:
    assert vendoring.report([], 3) == 0
    assert vendoring.report(["a.json: differs"], 3) == 1
    assert "a.json: differs" in capsys.readouterr().out


# --- the Kubeflow PaddleJob schema --------------------------------------------------------------


def test_paddlejob_schema_is_what_the_script_makes_of_it() -> None:
    """The script's pure part, given back the vendored schema as the CRD's, makes the same file:
    it is strict as the script makes it, holds only keywords the script knows, and names the
    pinned CRD. (The CRD itself is not in the repository: `scripts/vendor_kubeflow.py <CRD>
    --check` compares with it.)"""
    text = PADDLEJOB_SCHEMA.read_text(encoding="utf-8")
    schema = json.loads(text)
    match = re.search(r"\(sha256 ([0-9a-f]{64})\), made strict by scripts/vendor_kubeflow\.py;",
                      schema["$comment"])
    assert match is not None and match.group(1) == vendor_kubeflow.CRD_PIN.sha256
    source = {keyword: value for keyword, value in schema.items()
              if keyword not in {"$schema", "$comment"}}
    for name in ("apiVersion", "kind"):  # the script adds their const
        source["properties"][name] = {"type": "string"}
    made = vendor_kubeflow.build(crd_of(source), vendor_kubeflow.CRD_PIN.sha256)
    assert vendoring.compact(vendoring.checked(made)) == text


def test_origin_records_the_paddlejob_schema_and_its_pin() -> None:
    origin = (KUBEFLOW / "ORIGIN.md").read_text(encoding="utf-8")
    data = PADDLEJOB_SCHEMA.read_bytes()
    assert f"| output | `{PADDLEJOB_SCHEMA.name}`, {len(data):,} bytes |" in origin
    assert f"| sha256 of the output | `{hashlib.sha256(data).hexdigest()}` |" in origin
    assert f"| sha256 of that file | `{vendor_kubeflow.CRD_PIN.sha256}` |" in origin
    assert "scripts/vendor_kubeflow.py" in origin


def test_paddlejob_schema_takes_a_paddlejob_and_refuses_a_misspelt_field() -> None:
    validator = Draft202012Validator(json.loads(PADDLEJOB_SCHEMA.read_text(encoding="utf-8")))
    worker = {"replicas": 2, "restartPolicy": "OnFailure",
              "template": {"spec": {"containers": [{"name": "paddle", "image": "paddle:3"}]}}}
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1", "kind": "PaddleJob", "metadata": {"name": "train"},
        "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                 "paddleReplicaSpecs": {"Worker": worker}}}
    assert list(validator.iter_errors(job)) == []
    job["spec"]["runPolicy"] = {"cleanPodPolicies": "None"}
    [error] = validator.iter_errors(job)
    assert error.validator == "additionalProperties"
    assert list(error.absolute_path) == ["spec", "runPolicy"]
    assert list(validator.iter_errors({**job, "kind": "TFJob"})) != []


def test_kubeflow_script_makes_objects_with_properties_strict() -> None:
    source = {"type": "object", "description": "a job", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"b": {"type": "string"}}}}}
    made = vendor_kubeflow.build(crd_of(source), "0" * 64)
    assert "description" not in made
    assert made["additionalProperties"] is False
    properties = made["properties"]
    assert properties["spec"]["additionalProperties"] is False
    assert properties["labels"]["additionalProperties"] == {"type": "string"}
    assert "additionalProperties" not in properties["open"]
    assert properties["kind"] == {"type": "string", "const": "PaddleJob"}


@pytest.mark.parametrize(("source", "message"), [
    ({"properties": {"spec": {"type": "object", "nullable": True}}},
     "#/properties/spec: nullable: true"),
    ({"properties": {"spec": {"type": "object", "unevaluatedProperties": False}}},
     "#/properties/spec: unknown keyword 'unevaluatedProperties'"),
])
def test_kubeflow_script_stops_on_what_it_does_not_translate(source: Schema,
                                                              message: str) -> None:
    with pytest.raises(VendorError, match=message):
        vendor_kubeflow.build(crd_of(source), "0" * 64)


def test_kubeflow_script_writes_then_checks(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    crd = tmp_path / "kubeflow.org_paddlejobs.yaml"
    crd.write_text(json.dumps(crd_of({"type": "object", "properties": {}})), encoding="utf-8")
    output = tmp_path / "paddlejob.json"
    # Not the pinned CRD: refused, nothing written.
    assert vendor_kubeflow.main([str(crd), "--output", str(output)]) == 1
    assert "pass --new-source" in capsys.readouterr().err and not output.exists()
    assert vendor_kubeflow.main([str(crd), "--output", str(output), "--new-source"]) == 0
    written = output.read_bytes()
    assert vendor_kubeflow.main([str(crd), "--output", str(output), "--new-source",
                                 "--check"]) == 0
    output.write_bytes(written.replace(b"PaddleJob", b"TFJob"))
    assert vendor_kubeflow.main([str(crd), "--output", str(output), "--new-source",
                                 "--check"]) == 1
    assert output.read_bytes() != written  # --check writes nothing
