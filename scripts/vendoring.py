"""What the vendoring scripts beside this file share (maintainer tools, kept out of the package):
the pin check of a source file, the walk over a schema's subschemas, the definitions a root
reaches, a CRD's version made into a strict schema, the compact JSON they write, and the
comparison behind their --check mode.

scripts/vendor_kubernetes.py writes schema/kubernetes/, scripts/vendor_kubeflow.py
schema/kubeflow/, scripts/vendor_crds.py schema/jobset/, schema/trainer/ and schema/kueue/; each
directory's ORIGIN.md says where its files come from.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
# paddlegen.schema's directory, which holds the vendored data.
SCHEMA = ROOT / "schema"

Schema = dict[str, Any]


class VendorError(Exception):
    """A source that cannot be vendored as it is. Nothing is written."""


# --- pins -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """A source file, pinned by its content."""

    name: str  # what the file is: a requirement, or a file of a release
    sha256: str


def check_pin(path: Path, pin: Pin, *, accept_other: bool = False) -> str:
    """The file's sha256, which must be the pinned one unless `accept_other` (a refresh)."""
    # Another file under the same name would silently vendor another schema.
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pin.sha256 and not accept_other:
        raise VendorError(f"{path.name}: sha256 {digest}, not the pinned {pin.sha256} of "
                          f"{pin.name}")
    return digest


# --- walking a schema's subschemas -----------------------------------------------------------


@dataclass(frozen=True)
class Keywords:
    """The keywords a source's schemas may hold: where their subschemas sit, and which hold
    none. A keyword in neither stops the walk, as it might hold subschemas that would be
    copied without being changed."""

    one: frozenset[str]  # the value is a subschema
    listed: frozenset[str]  # a list of subschemas
    named: frozenset[str]  # name -> subschema; the names are no schemas (a field may be called
    # description)
    plain: frozenset[str]  # no subschema
    # Keywords with this prefix hold none either: "x-", "x-kubernetes-"; "": no such prefix, every
    # keyword is in one of the sets above.
    annotation_prefix: str


# JSON Schema's applicators that the vendored sources use.
ONE_SUBSCHEMA = frozenset({"items", "additionalProperties", "not"})
LIST_OF_SUBSCHEMAS = frozenset({"allOf", "anyOf", "oneOf"})


def map_schemas(schema: Any, change: Callable[[Schema, str], Schema], keywords: Keywords,
                where: str = "#") -> Any:
    """`schema` with `change` applied to each of its subschemas, deepest first, and then to
    itself. `change` gets each one rebuilt from its changed subschemas, and its JSON pointer
    (for messages); boolean schemas stay as they are."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict):
        raise VendorError(f"{where}: a schema that is neither an object nor a boolean")
    mapped: Schema = {}
    for keyword, value in schema.items():
        at = f"{where}/{keyword}"
        if keyword in keywords.one:
            value = map_schemas(value, change, keywords, at)
        elif keyword in keywords.listed:
            value = [map_schemas(item, change, keywords, f"{at}/{index}")
                     for index, item in enumerate(value)]
        elif keyword in keywords.named:
            value = {name: map_schemas(item, change, keywords, f"{at}/{name}")
                     for name, item in value.items()}
        elif keyword not in keywords.plain and not _is_annotation(keyword, keywords):
            raise VendorError(f"{where}: unknown keyword {keyword!r}: say in the script whether "
                              "it holds subschemas")
        mapped[keyword] = value
    return change(mapped, where)


def _is_annotation(keyword: str, keywords: Keywords) -> bool:
    prefix = keywords.annotation_prefix
    return bool(prefix) and keyword.startswith(prefix)


def without(*dropped: str) -> Callable[[Schema, str], Schema]:
    """A change for map_schemas that removes these keywords from every schema (never property
    names)."""
    def change(schema: Schema, where: str) -> Schema:
        return {keyword: value for keyword, value in schema.items() if keyword not in dropped}
    return change


# --- the definitions a root reaches ----------------------------------------------------------


def refs(node: Any, prefix: str) -> Iterator[str]:
    """The definition names referred to anywhere in a schema fragment, each ref being
    `prefix` + name."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        # A property may be *named* "$ref" (apiextensions' JSONSchemaProps): its value is a dict.
        if isinstance(ref, str):
            if not ref.startswith(prefix):
                raise VendorError(f"not a local definition: {ref}")
            yield ref.removeprefix(prefix)
        for value in node.values():
            yield from refs(value, prefix)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item, prefix)


def reached(definitions: Schema, names: Iterable[str], prefix: str) -> set[str]:
    """The named definitions and every definition they reach."""
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        if name not in definitions:
            raise VendorError(f"{name} is referred to but not defined")
        seen.add(name)
        pending.extend(refs(definitions[name], prefix))
    return seen


# --- a custom resource's schema, from its CRD --------------------------------------------------


DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# The keywords of a CRD's openAPIV3Schema (apiextensions.k8s.io/v1 JSONSchemaProps) that the
# vendored CRDs use, each looked at. Anything else stops the script, Kubernetes' own extensions
# included: x-kubernetes-embedded-resource, for one, would need apiVersion, kind and metadata
# checked as an object's.
CRD_KEYWORDS = Keywords(
    one=ONE_SUBSCHEMA,
    listed=LIST_OF_SUBSCHEMAS,
    named=frozenset({"properties"}),
    plain=frozenset({
        "type", "description", "required", "format", "default", "enum", "pattern", "maxLength",
        "minLength", "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "maxItems",
        "minItems", "uniqueItems", "maxProperties", "minProperties", "multipleOf", "title",
        "example",
        # OpenAPI's, not JSON Schema's: `nullable: true` stops the script (strict_crd_schema).
        "nullable",
        # Kubernetes' extensions, annotations to a JSON Schema validator. What the API server
        # makes of them, and so what the vendored schema does not check, is in each ORIGIN.md:
        # anyOf [integer, string] stands beside int-or-string (controller-gen writes both); the
        # list and map types concern uniqueness in lists and server-side apply; the validations
        # are CEL rules (kept, for tests to evaluate); preserve-unknown-fields keeps an object
        # open (strict_crd_schema).
        "x-kubernetes-int-or-string", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type", "x-kubernetes-validations",
        "x-kubernetes-preserve-unknown-fields"}),
    annotation_prefix="",
)
# Dropped everywhere (never a property's name): an annotation no validator reads, and most of a
# CRD's bytes (three quarters to nine tenths of them).
CRD_DROPPED = frozenset({"description"})


@dataclass(frozen=True)
class CrdKind:
    """One kind's CRD file in a release, the version of it vendored, and where its schema goes."""

    pin: Pin
    file_name: str  # the CRD file's name in the release: <group>_<plural>.yaml
    crd_name: str  # the CRD's metadata.name: <plural>.<group>
    group: str
    version: str
    kind: str
    directory: str  # under schema/, with the ORIGIN.md that says where the file comes from
    script: str  # the script that writes it, from the repository's root

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def output(self) -> Path:
        """The schema's file: `<kind lowercase>-<first label of the group>-<version>.json`, the
        name compiler/kube_schema.py looks for."""
        return (SCHEMA / self.directory
                / f"{self.kind.lower()}-{self.group.split('.')[0]}-{self.version}.json")


def load_crd(path: Path) -> Any:
    """The one YAML document of a CRD file."""
    yaml = YAML(typ="safe", pure=True)
    documents = [d for d in yaml.load_all(path.read_text(encoding="utf-8")) if d is not None]
    if len(documents) != 1:
        raise VendorError(f"expected one YAML document, found {len(documents)}")
    return documents[0]


def crd_version_schema(crd: Any, kind: CrdKind) -> Schema:
    """A copy of the openAPIV3Schema of the kind's version, checked to be the kind's CRD and a
    version the API server serves."""
    if crd.get("kind") != "CustomResourceDefinition" or crd.get("metadata", {}).get(
            "name") != kind.crd_name:
        raise VendorError(f"not the CustomResourceDefinition {kind.crd_name}")
    spec = crd["spec"]
    if spec.get("group") != kind.group or spec.get("names", {}).get("kind") != kind.kind:
        raise VendorError(f"the CRD is not of {kind.group} {kind.kind}")
    versions = [v for v in spec.get("versions", []) if v.get("name") == kind.version]
    if len(versions) != 1:
        raise VendorError(f"the CRD has no single version {kind.version}")
    if versions[0].get("served") is False:
        raise VendorError(f"the CRD's version {kind.version} is not served")
    return copy.deepcopy(versions[0]["schema"]["openAPIV3Schema"])


# The object's own metadata: the API server checks it as ObjectMeta, whatever the CRD says (it
# says `type: object`). Embedded metadata (a template's) lists its fields and is strict.
OBJECT_METADATA = "#/properties/metadata"


def strict_crd_schema(schema: Schema, where: str) -> Schema:
    """One schema made strict, its subschemas being strict already: `additionalProperties:
    false` if it has neither `additionalProperties` nor `x-kubernetes-preserve-unknown-fields:
    true` and lists `properties` or is `type: object` (an empty struct, such as Trainer's
    `mlPolicy.jax`: the API server prunes whatever is put in it, and refuses it under strict
    field validation, kubectl's default), the object's own metadata excepted; no description.
    Everything else is kept, the `x-kubernetes-*` keywords as annotations."""
    if schema.get("nullable") is True:
        # OpenAPI's `nullable` means nothing to a JSON Schema validator: stop rather than refuse
        # null where the API server takes it. (No vendored CRD has one.)
        raise VendorError(f"{where}: nullable: true, which this script does not translate")
    out = {keyword: value for keyword, value in schema.items() if keyword not in CRD_DROPPED}
    is_object = "properties" in out or (out.get("type") == "object" and where != OBJECT_METADATA)
    if (is_object and "additionalProperties" not in out
            and out.get("x-kubernetes-preserve-unknown-fields") is not True):
        out["additionalProperties"] = False
    return out


def make_strict(schema: Schema) -> Schema:
    """A copy of a CRD's schema with each of its subschemas, and itself, made strict."""
    made = map_schemas(schema, strict_crd_schema, CRD_KEYWORDS)
    if not isinstance(made, dict):
        raise VendorError("#: a schema that is not an object")
    return made


def crd_kind_schema(crd: Any, kind: CrdKind, crd_sha256: str) -> Schema:
    """The strict JSON Schema of the kind, from its CRD (whose sha256 the `$comment` names)."""
    schema = make_strict(crd_version_schema(crd, kind))
    properties = schema.setdefault("properties", {})
    # The CRD types apiVersion and kind as plain strings; pin them to this kind unless it
    # already constrains them.
    for name, value in (("apiVersion", kind.api_version), ("kind", kind.kind)):
        prop = properties.setdefault(name, {"type": "string"})
        if not {"const", "enum", "pattern"} & prop.keys():
            prop["const"] = value
    schema["$schema"] = DRAFT_2020_12
    schema["$comment"] = (f"{kind.api_version} {kind.kind}: the openAPIV3Schema of version "
                          f"{kind.version} of the CRD {kind.crd_name} (sha256 {crd_sha256}), made "
                          f"strict by {kind.script}; see schema/{kind.directory}/ORIGIN.md. "
                          "Do not edit by hand.")
    return schema


# --- output ---------------------------------------------------------------------------------


def checked(schema: Schema) -> Schema:
    """The schema, valid under Draft 2020-12 (which paddlegen validates with) and with a root
    that resolves (a bad pointer only fails on first use)."""
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).is_valid({})
    return schema


def compact(schema: Schema) -> str:
    """The text of a vendored file: compact, sorted, ASCII, with a final newline."""
    return json.dumps(schema, separators=(",", ":"), sort_keys=True, ensure_ascii=True) + "\n"


def out_of_date(expected: Mapping[Path, str], present: Iterable[Path]) -> list[str]:
    """How the files on disk differ from what a script would write: each file missing or not
    byte for byte the same, and each file present that it would remove."""
    problems = []
    for path, text in sorted(expected.items()):
        if not path.is_file():
            problems.append(f"{_shown(path)}: missing")
        elif path.read_bytes() != text.encode("utf-8"):
            problems.append(f"{_shown(path)}: differs")
    problems.extend(f"{_shown(path)}: would be removed"
                    for path in sorted(set(present) - expected.keys()))
    return problems


def report(problems: list[str], checked_files: int) -> int:
    """The exit status of a --check run, after saying what it found."""
    for problem in problems:
        print(problem)
    if problems:
        print(f"out of date: {len(problems)} difference(s); run the script without --check")
        return 1
    print(f"up to date ({checked_files} checked)")
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
