"""The maintainer scripts that regenerate the vendored schemas (scripts/, beside the package and
not in it): what they share (scripts/vendoring.py), the Kubeflow PaddleJob schema
(schema/kubeflow/) as scripts/vendor_kubeflow.py makes it, and the JobSet, Kubeflow Trainer and
Kueue schemas (schema/jobset/, schema/trainer/, schema/kueue/) as scripts/vendor_crds.py makes
them (what they accept and refuse, their CEL rules included, is in test_crd_schemas.py). The
Kubernetes schemas and scripts/vendor_kubernetes.py are tested in test_vendored_schemas.py."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from paddlegen.compiler import kube_schema

import vendor_crds
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
    assert {path.name for path in data} >= {"kubernetes", "kubeflow", "eksctl", "jobset",
                                            "trainer", "kueue"}
    assert [str(code.relative_to(ROOT)) for path in data for code in path.rglob("*.py")] == []


def test_the_scripts_write_into_the_package_data() -> None:
    assert vendoring.ROOT == ROOT
    assert vendor_kubeflow.OUTPUT == PADDLEJOB_SCHEMA
    assert {kind.output.parent for kind in vendor_crds.KINDS} == {
        ROOT / "schema" / name for name in ("jobset", "trainer", "kueue")}


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


# --- a CRD's version, made strict (scripts/vendoring.py, for every CRD) -------------------------


def test_strict_crd_schema_closes_empty_structs_but_not_the_object_s_metadata() -> None:
    kind = vendoring.CrdKind(Pin("a CRD", "0" * 64), "example.com_gadgets.yaml",
                             "gadgets.example.com", "example.com", "v1", "Gadget", "example",
                             "scripts/example.py")
    source = {"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "empty": {"type": "object"},
            "metadata": {"type": "object"},  # a template's: closed like any other
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
    version: dict[str, Any] = {"name": "v1", "served": True,
                               "schema": {"openAPIV3Schema": source}}
    crd = {"kind": "CustomResourceDefinition", "metadata": {"name": kind.crd_name},
           "spec": {"group": kind.group, "names": {"kind": kind.kind}, "versions": [version]}}
    made = vendoring.crd_kind_schema(crd, kind, "0" * 64)
    properties = made["properties"]
    assert properties["metadata"] == {"type": "object"}
    spec = properties["spec"]["properties"]
    assert spec["empty"]["additionalProperties"] is False
    assert spec["metadata"]["additionalProperties"] is False
    assert "additionalProperties" not in spec["raw"]
    assert properties["apiVersion"] == {"type": "string", "const": "example.com/v1"}
    assert kind.output == ROOT / "schema" / "example" / "gadget-example-v1.json"
    version["served"] = False
    with pytest.raises(VendorError, match="version v1 is not served"):
        vendoring.crd_kind_schema(crd, kind, "0" * 64)


@pytest.mark.parametrize("keyword", ["x-kubernetes-embedded-resource", "x-kubernetes-other",
                                     "oneOf"])
def test_crd_keywords_are_listed_one_by_one(keyword: str) -> None:
    # No prefix lets a keyword through: each x-kubernetes-* keyword was looked at.
    value: Any = [{"type": "string"}] if keyword == "oneOf" else True
    schema = {"properties": {"spec": {"type": "object", keyword: value}}}
    if keyword == "oneOf":
        vendoring.make_strict(schema)  # an applicator the walk knows
        return
    with pytest.raises(VendorError, match=f"#/properties/spec: unknown keyword '{keyword}'"):
        vendoring.make_strict(schema)


# --- JobSet, Kubeflow Trainer v2 and Kueue (scripts/vendor_crds.py) -----------------------------


CRD_KINDS = {kind.kind: kind for kind in vendor_crds.KINDS}


def crd_of_kind(kind: vendoring.CrdKind, schema: Schema) -> dict[str, Any]:
    """The kind's CRD, with this openAPIV3Schema in its vendored version (and another version
    beside it, as Kueue's CRDs have)."""
    return {"kind": "CustomResourceDefinition", "metadata": {"name": kind.crd_name},
            "spec": {"group": kind.group, "names": {"kind": kind.kind},
                     "versions": [{"name": "v0", "served": False,
                                   "schema": {"openAPIV3Schema": {"type": "string"}}},
                                  {"name": kind.version, "served": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def test_crd_kinds_are_where_the_build_looks_for_them() -> None:
    assert {kind.directory for kind in vendor_crds.KINDS} == {"jobset", "trainer", "kueue"}
    assert [source.directory.name for source in kube_schema.extra_sources()] == [
        "kubeflow", "jobset", "trainer", "kueue"]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for kind in vendor_crds.KINDS:
        assert kind.output.is_file()
        assert f'"{kind.directory}/*.json"' in pyproject  # package data
        source = kube_schema.SchemaSource(ROOT / "schema" / kind.directory, "")
        assert source.file(kind.api_version, kind.kind) == kind.output
        assert kind.crd_name == f"{kind.file_name.split('_')[1].removesuffix('.yaml')}." \
                                f"{kind.group}"
    assert sorted(path.name for directory in ("jobset", "trainer", "kueue")
                  for path in (ROOT / "schema" / directory).glob("*.json")) == sorted(
        kind.output.name for kind in vendor_crds.KINDS)


@pytest.mark.parametrize("name", CRD_KINDS)
def test_crd_schema_is_what_the_script_makes_of_it(name: str) -> None:
    """The script's pure part, given back the vendored schema as its CRD's, makes the same file:
    it is strict as the script makes it, holds only keywords the script knows, and names the
    pinned CRD. (The CRDs are not in the repository: `scripts/vendor_crds.py <CRD>... --check`
    compares with them.)"""
    kind = CRD_KINDS[name]
    text = kind.output.read_text(encoding="utf-8")
    schema = json.loads(text)
    match = re.search(r"\(sha256 ([0-9a-f]{64})\), made strict by scripts/vendor_crds\.py;",
                      schema["$comment"])
    assert match is not None and match.group(1) == kind.pin.sha256
    assert f"see schema/{kind.directory}/ORIGIN.md" in schema["$comment"]
    source = {keyword: value for keyword, value in schema.items()
              if keyword not in {"$schema", "$comment"}}
    for field in ("apiVersion", "kind"):  # the script adds their const
        source["properties"][field] = {"type": "string"}
    made = vendoring.crd_kind_schema(crd_of_kind(kind, source), kind, kind.pin.sha256)
    assert vendoring.compact(vendoring.checked(made)) == text
    assert '"description"' not in text.replace('"description":{"type"', "")  # only as a field


def origin_of(directory: str) -> str:
    return (ROOT / "schema" / directory / "ORIGIN.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", CRD_KINDS)
def test_origin_records_the_crd_schema_and_its_pin(name: str) -> None:
    kind = CRD_KINDS[name]
    origin = origin_of(kind.directory)
    data = kind.output.read_bytes()
    row = (f"| `{kind.output.name}` | `{kind.file_name}` | {kind.version} | {len(data):,} | "
           f"`{hashlib.sha256(data).hexdigest()}` |")
    assert row in origin
    assert f"`{kind.file_name}` | `{kind.pin.sha256}` |" in origin
    assert "scripts/vendor_crds.py" in origin
    release = kind.pin.name.split(", ")[0]
    repository, tag = release.split(" ")
    assert f"`github.com/{repository}`" in origin and f"`{tag}`" in origin


def test_crd_script_writes_then_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kind = CRD_KINDS["LocalQueue"]
    crd = tmp_path / kind.file_name
    crd.write_text(json.dumps(crd_of_kind(kind, {"type": "object", "properties": {}})),
                   encoding="utf-8")
    into = tmp_path / "schema"
    output = into / "kueue" / "localqueue-kueue-v1beta2.json"
    # Not the pinned CRD: refused, nothing written.
    assert vendor_crds.main([str(crd), "--into", str(into)]) == 1
    assert "pass --new-source" in capsys.readouterr().err and not output.exists()
    assert vendor_crds.main([str(crd), "--into", str(into), "--new-source"]) == 0
    written = output.read_bytes()
    assert b'"const":"LocalQueue"' in written
    assert vendor_crds.main([str(crd), "--into", str(into), "--new-source", "--check"]) == 0
    output.write_bytes(written.replace(b"LocalQueue", b"ClusterQueue"))
    assert vendor_crds.main([str(crd), "--into", str(into), "--new-source", "--check"]) == 1
    assert output.read_bytes() != written  # --check writes nothing


def test_crd_script_refuses_a_file_it_does_not_know(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    crd = tmp_path / "kueue.x-k8s.io_workloads.yaml"
    crd.write_text("{}", encoding="utf-8")
    assert vendor_crds.main([str(crd), "--into", str(tmp_path), "--new-source"]) == 1
    assert "not one of the CRD files this script vendors" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [crd]


def test_crd_script_refuses_the_wrong_crd_under_a_known_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kind = CRD_KINDS["ClusterQueue"]
    crd = tmp_path / kind.file_name
    crd.write_text(json.dumps(crd_of_kind(CRD_KINDS["LocalQueue"], {"type": "object"})),
                   encoding="utf-8")
    assert vendor_crds.main([str(crd), "--into", str(tmp_path), "--new-source"]) == 1
    assert "not the CustomResourceDefinition clusterqueues.kueue.x-k8s.io" in (
        capsys.readouterr().err)
