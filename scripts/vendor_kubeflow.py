"""Regenerate the strict JSON Schema of Kubeflow's PaddleJob (kubeflow.org/v1) in schema/kubeflow/
from its CRD (a maintainer tool, not part of the package; run by hand, never at build time):

    python scripts/vendor_kubeflow.py kubeflow.org_paddlejobs.yaml

The argument is the CRD file `manifests/base/crds/kubeflow.org_paddlejobs.yaml` of the
training-operator release named in schema/kubeflow/ORIGIN.md. Its sha256 must be the one pinned
below (and in ORIGIN.md), or nothing is written; `--new-source` accepts another file (a refresh:
then update the pin, ORIGIN.md and the output's sha256 there).

Writes schema/kubeflow/paddlejob-kubeflow-v1.json (or the path given with `--output`): the
CRD's `openAPIV3Schema` of version v1, made strict the way kubernetes-validate's schemas are
strict, as ORIGIN.md describes. With --check nothing is written: it says whether the file is what
it would write, and exits 1 if not. Needs ruamel.yaml, and jsonschema to check what it writes.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from vendoring import (
    LIST_OF_SUBSCHEMAS,
    ONE_SUBSCHEMA,
    SCHEMA,
    Keywords,
    Pin,
    Schema,
    VendorError,
    check_pin,
    checked,
    compact,
    map_schemas,
    out_of_date,
    report,
)

OUTPUT = SCHEMA / "kubeflow" / "paddlejob-kubeflow-v1.json"

CRD_PIN = Pin("kubeflow/training-operator v1.9.4, manifests/base/crds/kubeflow.org_paddlejobs.yaml",
              "084d0d3e427f309c9b9e91322f6f02786648ccc0b8eadedc3d5ece46ef5a55ce")

CRD_NAME = "paddlejobs.kubeflow.org"
GROUP = "kubeflow.org"
VERSION = "v1"
KIND = "PaddleJob"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# The keywords of the CRD's schema. Anything else stops the script, so that no keyword is left
# unexamined.
KEYWORDS = Keywords(
    one=ONE_SUBSCHEMA,
    listed=LIST_OF_SUBSCHEMAS,
    named=frozenset({"properties"}),
    plain=frozenset({"type", "description", "required", "format", "default", "enum", "pattern",
                     "maxLength", "minLength", "maximum", "minimum", "exclusiveMaximum",
                     "exclusiveMinimum", "maxItems", "minItems", "uniqueItems", "maxProperties",
                     "minProperties", "multipleOf", "nullable", "title", "example"}),
    annotation_prefix="x-kubernetes-",
)
# Dropped everywhere (never a property's name): an annotation no validator reads, and most of the
# bytes (about three quarters of them).
DROPPED = frozenset({"description"})


def load_crd(path: Path) -> Any:
    yaml = YAML(typ="safe", pure=True)
    documents = [d for d in yaml.load_all(path.read_text(encoding="utf-8")) if d is not None]
    if len(documents) != 1:
        raise VendorError(f"expected one YAML document, found {len(documents)}")
    return documents[0]


def version_schema(crd: Any) -> Schema:
    """The openAPIV3Schema of version v1, checked to be the PaddleJob CRD."""
    if crd.get("kind") != "CustomResourceDefinition" or crd.get("metadata", {}).get(
            "name") != CRD_NAME:
        raise VendorError(f"not the CustomResourceDefinition {CRD_NAME}")
    spec = crd["spec"]
    if spec.get("group") != GROUP or spec.get("names", {}).get("kind") != KIND:
        raise VendorError(f"the CRD is not of {GROUP} {KIND}")
    versions = [v for v in spec.get("versions", []) if v.get("name") == VERSION]
    if len(versions) != 1:
        raise VendorError(f"the CRD has no single version {VERSION}")
    return copy.deepcopy(versions[0]["schema"]["openAPIV3Schema"])


def strict(schema: Schema, where: str) -> Schema:
    """One schema made strict, its subschemas being strict already: `additionalProperties:
    false` if it lists `properties` and has neither `additionalProperties` nor
    `x-kubernetes-preserve-unknown-fields: true`; no description. Everything else is kept, the
    `x-kubernetes-*` keywords as annotations."""
    if schema.get("nullable") is True:
        # OpenAPI's `nullable` means nothing to a JSON Schema validator: stop rather than refuse
        # null where the API server takes it. (The v1.9.4 CRD has none.)
        raise VendorError(f"{where}: nullable: true, which this script does not translate")
    out = {keyword: value for keyword, value in schema.items() if keyword not in DROPPED}
    if ("properties" in out and "additionalProperties" not in out
            and out.get("x-kubernetes-preserve-unknown-fields") is not True):
        out["additionalProperties"] = False
    return out


def make_strict(schema: Schema) -> Schema:
    """A copy of the schema with each of its subschemas, and itself, made strict."""
    made = map_schemas(schema, strict, KEYWORDS)
    if not isinstance(made, dict):
        raise VendorError("#: a schema that is not an object")
    return made


def build(crd: Any, crd_sha256: str) -> Schema:
    schema = make_strict(version_schema(crd))
    properties = schema.setdefault("properties", {})
    # The CRD types apiVersion and kind as plain strings; pin them to this kind unless it
    # already constrains them.
    for name, value in (("apiVersion", f"{GROUP}/{VERSION}"), ("kind", KIND)):
        prop = properties.setdefault(name, {"type": "string"})
        if not {"const", "enum", "pattern"} & prop.keys():
            prop["const"] = value
    schema["$schema"] = DRAFT_2020_12
    schema["$comment"] = (f"{GROUP}/{VERSION} {KIND}: the openAPIV3Schema of version {VERSION} "
                          f"of the CRD {CRD_NAME} (sha256 {crd_sha256}), made strict by "
                          "scripts/vendor_kubeflow.py; see schema/kubeflow/ORIGIN.md. "
                          "Do not edit by hand.")
    return schema


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("crd", type=Path, help="the CRD file kubeflow.org_paddlejobs.yaml")
    parser.add_argument("--output", type=Path, default=OUTPUT,
                        help="where to write the schema (default: "
                             "schema/kubeflow/paddlejob-kubeflow-v1.json)")
    parser.add_argument("--new-source", action="store_true",
                        help="accept a CRD whose sha256 is not the pinned one (a refresh)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the file is not what would be written")
    args = parser.parse_args(argv)

    try:
        digest = check_pin(args.crd, CRD_PIN, accept_other=args.new_source)
    except VendorError as error:
        print(f"{error}; pass --new-source to use it", file=sys.stderr)
        return 1
    try:
        text = compact(checked(build(load_crd(args.crd), digest)))
    except VendorError as error:
        print(f"{args.crd.name}: {error}", file=sys.stderr)
        return 1
    if args.check:
        return report(out_of_date({args.output: text}, ()), 1)
    args.output.write_text(text, encoding="utf-8", newline="\n")
    out_digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    print(f"CRD sha256 {digest}\nwrote {args.output.name}: {len(text.encode())} bytes, "
          f"sha256 {out_digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
