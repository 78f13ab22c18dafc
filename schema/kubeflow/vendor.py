"""Regenerate the strict JSON Schema of Kubeflow's PaddleJob (kubeflow.org/v1) from its CRD
(a maintainer tool, run by hand, never at build time):

    python schema/kubeflow/vendor.py kubeflow.org_paddlejobs.yaml

The argument is the CRD file `manifests/base/crds/kubeflow.org_paddlejobs.yaml` of the
training-operator release named in ORIGIN.md. Its sha256 must be the one pinned below (and in
ORIGIN.md), or nothing is written; `--new-source` accepts another file (a refresh: then update
the pin, ORIGIN.md and the output's sha256 there).

Writes `paddlejob-kubeflow-v1.json` beside this script (or the path given with `--output`):
the CRD's `openAPIV3Schema` of version v1, made strict the way kubernetes-validate's schemas
are strict, as ORIGIN.md describes. Pure Python: the standard library and ruamel.yaml.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "paddlejob-kubeflow-v1.json"

# kubeflow/training-operator v1.9.4, manifests/base/crds/kubeflow.org_paddlejobs.yaml
CRD_SHA256 = "084d0d3e427f309c9b9e91322f6f02786648ccc0b8eadedc3d5ece46ef5a55ce"

CRD_NAME = "paddlejobs.kubeflow.org"
GROUP = "kubeflow.org"
VERSION = "v1"
KIND = "PaddleJob"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

Schema = dict[str, Any]

# Keywords whose value is one subschema, a list of them, or a map of name -> subschema.
ONE_SUBSCHEMA = frozenset({"items", "additionalProperties", "not"})
LIST_OF_SUBSCHEMAS = frozenset({"allOf", "anyOf", "oneOf"})
MAP_OF_SUBSCHEMAS = frozenset({"properties"})
# Keywords whose value holds no subschema. Anything else stops the script, so that no keyword is
# left unexamined.
PLAIN = frozenset({"type", "description", "required", "format", "default", "enum", "pattern",
                   "maxLength", "minLength", "maximum", "minimum", "exclusiveMaximum",
                   "exclusiveMinimum", "maxItems", "minItems", "uniqueItems", "maxProperties",
                   "minProperties", "multipleOf", "nullable", "title", "example"})
# Dropped everywhere (never a property's name): an annotation no validator reads, and most of the
# bytes (about three quarters of them).
DROPPED = frozenset({"description"})


class VendorError(Exception):
    pass


def load_crd(path: Path) -> Any:
    yaml = YAML(typ="safe", pure=True)
    documents = [d for d in yaml.load_all(path.read_text(encoding="utf-8")) if d is not None]
    if len(documents) != 1:
        raise VendorError(f"{path.name}: expected one YAML document, found {len(documents)}")
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


def make_strict(schema: Schema, where: str = "#") -> Schema:
    """A copy of the schema in which every object schema that lists `properties` and has neither
    `additionalProperties` nor `x-kubernetes-preserve-unknown-fields: true` gets
    `additionalProperties: false`; descriptions are dropped; everything else is kept, the
    `x-kubernetes-*` keywords as annotations."""
    if not isinstance(schema, dict):
        raise VendorError(f"{where}: a schema that is not an object")
    if schema.get("nullable") is True:
        # OpenAPI's `nullable` means nothing to a JSON Schema validator: stop rather than refuse
        # null where the API server takes it. (The v1.9.4 CRD has none.)
        raise VendorError(f"{where}: nullable: true, which this script does not translate")
    out: Schema = {}
    for keyword, value in schema.items():
        if keyword in DROPPED:
            continue
        if keyword in ONE_SUBSCHEMA:
            out[keyword] = value if isinstance(value, bool) else make_strict(
                value, f"{where}/{keyword}")
        elif keyword in LIST_OF_SUBSCHEMAS:
            out[keyword] = [make_strict(s, f"{where}/{keyword}/{i}") for i, s in
                            enumerate(value)]
        elif keyword in MAP_OF_SUBSCHEMAS:
            out[keyword] = {name: make_strict(s, f"{where}/{keyword}/{name}")
                            for name, s in value.items()}
        elif keyword in PLAIN or keyword.startswith("x-kubernetes-"):
            out[keyword] = copy.deepcopy(value)
        else:
            raise VendorError(f"{where}: keyword {keyword!r} not known to this script")
    if ("properties" in out and "additionalProperties" not in out
            and out.get("x-kubernetes-preserve-unknown-fields") is not True):
        out["additionalProperties"] = False
    return out


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
                          "schema/kubeflow/vendor.py; see schema/kubeflow/ORIGIN.md. "
                          "Do not edit by hand.")
    return schema


def render(schema: Schema) -> str:
    return json.dumps(schema, separators=(",", ":"), sort_keys=True, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("crd", type=Path, help="the CRD file kubeflow.org_paddlejobs.yaml")
    parser.add_argument("--output", type=Path, default=OUTPUT,
                        help="where to write the schema (default: beside this script)")
    parser.add_argument("--new-source", action="store_true",
                        help="accept a CRD whose sha256 is not the pinned one (a refresh)")
    args = parser.parse_args(argv)

    data = args.crd.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CRD_SHA256 and not args.new_source:
        print(f"{args.crd.name}: sha256 {digest}, not the pinned {CRD_SHA256}; "
              "pass --new-source to use it", file=sys.stderr)
        return 1
    try:
        text = render(build(load_crd(args.crd), digest))
    except VendorError as error:
        print(f"{args.crd.name}: {error}", file=sys.stderr)
        return 1
    args.output.write_text(text, encoding="utf-8", newline="\n")
    out_digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    print(f"CRD sha256 {digest}\nwrote {args.output.name}: {len(text.encode())} bytes, "
          f"sha256 {out_digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
