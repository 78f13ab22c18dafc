"""Regenerate the vendored strict schemas of Kubernetes in schema/kubernetes/ (a maintainer
tool, not part of the package): 1.5 and 1.8, which kubernetes-validate no longer bundles, and the
current releases in CURRENT_RELEASES.

Run by hand from the repository root, never at build time:

    python scripts/vendor_kubernetes.py
    python scripts/vendor_kubernetes.py --validate-sdist kubernetes-validate-1.11.0.2.tar.gz \
        --client-wheel kubernetes-1.0.2-py2.py3-none-any.whl \
        --validate-wheel kubernetes_validate-1.37.0-py3-none-any.whl

Without archive paths it fetches them with `pip download`. Either way each archive must match
the sha256 pinned below (and recorded in schema/kubernetes/ORIGIN.md). The *.json files of each
release's directory in schema/kubernetes/ are replaced; ORIGIN.md there says where they come
from and what was done to them. With --check nothing is written: it says whether the files are
what it would write, and exits 1 if not.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

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
    reached,
    refs,
    report,
    without,
)

OUTPUT = SCHEMA / "kubernetes"
REF_PREFIX = "#/definitions/"


@dataclass(frozen=True)
class Archive(Pin):
    """A release archive on PyPI (`name` is its requirement), pinned by its content."""

    pip_options: tuple[str, ...]


# The strict schemas are only in the source distribution; its wheels ship none of 1.8.
VALIDATE_SDIST = Archive(
    "kubernetes-validate==1.11.0.2",
    "bfbf505f281ea67a1431cb4d1ea7a257d93047aa3f6c2425a025ffe034695d6a",
    ("--no-binary", ":all:"))
CLIENT_WHEEL = Archive(
    "kubernetes==1.0.2",
    "99c5925b8a077aa4cdaf38af24b8d3069ab06f4b51a99202ebd1c82f4e42e6e8",
    ("--only-binary", ":all:"))

# The current releases' strict schemas, as the wheel installs them.
VALIDATE_WHEEL = Archive(
    "kubernetes-validate==1.37.0",
    "85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9",
    ("--only-binary", ":all:"))

# The current releases vendored from VALIDATE_WHEEL, one a line: the profiles' default releases.
# paddlegen finds each directory written here; other releases use kubernetes-validate's files.
CURRENT_RELEASES = (
    "1.33",
    "1.34",
    "1.35",
    "1.36",
    "1.37",
)

VALIDATE_DIRECTORY = "v1.8.4-local-strict"
CLIENT_MODELS = "kubernetes/client/models/"
WHEEL_SCHEMAS = "kubernetes_validate/kubernetes-json-schema/v{release}.0-local-strict/"
# How kubernetes-validate's per-kind files refer into its shared _definitions.json (whose own
# refs are "#/$defs/<name>").
SHARED_PREFIX = "/api/_definitions.json#/$defs/"
DEFS_PREFIX = "#/$defs/"


@dataclass(frozen=True)
class Kind:
    kind: str
    group: str  # "" for the core group
    version: str

    @property
    def label(self) -> str:
        """The group's first label, as kubernetes-validate names files: rbac.authorization... ->
        rbac."""
        return self.group.split(".")[0]

    @property
    def file_name(self) -> str:
        group_version = f"{self.label}-{self.version}" if self.label else self.version
        return f"{self.kind.lower()}-{group_version}.json"


KINDS_15 = (
    Kind("Namespace", "", "v1"),
    Kind("ServiceAccount", "", "v1"),
    Kind("ConfigMap", "", "v1"),
    Kind("Service", "", "v1"),
    Kind("PersistentVolume", "", "v1"),
    Kind("PersistentVolumeClaim", "", "v1"),
    Kind("Pod", "", "v1"),
    Kind("Job", "batch", "v1"),
    # Not a kind: validates each container of the pod.beta.kubernetes.io/init-containers
    # annotation, which pod templates carried before PodSpec.initContainers existed.
    Kind("Container", "", "v1"),
)
KINDS_18 = (
    *KINDS_15,
    Kind("Role", "rbac.authorization.k8s.io", "v1"),
    Kind("RoleBinding", "rbac.authorization.k8s.io", "v1"),
    Kind("NetworkPolicy", "networking.k8s.io", "v1"),
)
KINDS_CURRENT = (
    *KINDS_18,
    Kind("StorageClass", "storage.k8s.io", "v1"),
    Kind("PodDisruptionBudget", "policy", "v1"),
)


# --- archives -----------------------------------------------------------------------------


def download(archive: Archive, directory: Path) -> Path:
    """The archive fetched by pip into its own empty directory, so it is the only file there."""
    directory.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--dest",
                    str(directory), *archive.pip_options, archive.name], check=True)
    [path] = directory.iterdir()
    return path


# --- 1.5 and 1.8: a file per kind, trimmed to what its root reaches -------------------------


def standalone(definitions: Schema, root: str) -> Schema:
    """One file that depends on no other: the root and only what it reaches."""
    keep = reached(definitions, [root], REF_PREFIX)
    return {"$ref": REF_PREFIX + root, "definitions": {name: definitions[name] for name in keep}}


def render(kinds: Iterable[Kind], definitions: Schema,
           root_of: Callable[[Kind], str]) -> dict[str, str]:
    """File name -> compact JSON text, for each kind."""
    return {kind.file_name: compact(checked(standalone(definitions, root_of(kind))))
            for kind in kinds}


# --- writing ----------------------------------------------------------------------------------


def written(releases: dict[str, dict[str, str]]) -> dict[Path, str]:
    """Path -> text of every file written for these releases (directory name -> its files)."""
    return {OUTPUT / release / name: text
            for release, files in releases.items() for name, text in files.items()}


def write_version(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(exist_ok=True)
    for stale in directory.glob("*.json"):
        stale.unlink()
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
        print(f"{directory.name}/{name}: {len(text)} bytes")
    print(f"{directory.name}: {sum(map(len, files.values()))} bytes in {len(files)} files")


def remove_version(directory: Path) -> None:
    """A release no longer vendored: paddlegen would otherwise still find its directory."""
    for stale in directory.glob("*.json"):
        stale.unlink()
    directory.rmdir()
    print(f"{directory.name}: removed")


# --- 1.8: kubernetes-validate's strict schemas ----------------------------------------------


def read_validate_files(sdist: Path, names: set[str]) -> dict[str, Schema]:
    """The named files of the 1.8.4 strict directory, in one pass over the 23 MB archive."""
    found: dict[str, Schema] = {}
    with tarfile.open(sdist) as tar:
        for member in tar:
            parent, _, name = member.name.rpartition("/")
            if parent.endswith("/" + VALIDATE_DIRECTORY) and name in names:
                content = tar.extractfile(member)
                if content is None:
                    raise VendorError(f"{sdist.name}: {member.name} is not a regular file")
                found[name] = json.load(content)
    missing = names - found.keys()
    if missing:
        raise VendorError(f"{sdist.name}: no {', '.join(sorted(missing))} in "
                          f"{VALIDATE_DIRECTORY}")
    return found


def definition_name(definitions: Schema, kind: Kind) -> str:
    """The non-deprecated definition: io.k8s.api.<group label or core>.<version>.<Kind>.

    In 1.8 the io.k8s.kubernetes.pkg.* names beside it are deprecated aliases of these."""
    name = f"io.k8s.api.{kind.label or 'core'}.{kind.version}.{kind.kind}"
    gvks = definitions[name].get("x-kubernetes-group-version-kind")
    # Container is no top-level kind and carries no group-version-kind.
    expected = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    if gvks is not None and expected not in gvks:
        raise VendorError(f"{name} is {gvks}, not {expected}")
    return name


def check_same_as_kubernetes_validate(kind_file: Schema, definitions: Schema, root: str) -> None:
    """kubernetes-validate's own file of that name must mean the same definition, so that the
    vendored schema is the one kubernetes-validate itself would have applied.

    Its file is either an alias `$ref` or an inline copy whose top-level fields are also
    allowed to be null; the copy in _definitions.json (vendored) does not allow null."""
    if "$ref" in kind_file:
        same = kind_file["$ref"].endswith(REF_PREFIX + root)
    else:
        same = (sorted(kind_file["properties"]) == sorted(definitions[root]["properties"])
                and kind_file.get("required") == definitions[root].get("required"))
    if not same:
        raise VendorError(f"kubernetes-validate's file for {root} differs from the definition")


def vendor_18(sdist: Path) -> dict[str, str]:
    files = read_validate_files(sdist, {"_definitions.json"} | {k.file_name for k in KINDS_18})
    definitions = files["_definitions.json"]["definitions"]

    def root_of(kind: Kind) -> str:
        root = definition_name(definitions, kind)
        check_same_as_kubernetes_validate(files[kind.file_name], definitions, root)
        return root

    return render(KINDS_18, definitions, root_of)


# --- 1.5: strict schemas generated from the models of the kubernetes 1.0.2 client ----------


@dataclass(frozen=True)
class Model:
    """One generated model class: what its swagger definition said about each field."""

    class_name: str
    types: dict[str, str]  # attribute -> swagger type string
    json_keys: dict[str, str]  # attribute -> JSON key
    required: list[str]  # attributes whose setter refuses None
    descriptions: dict[str, str]  # attribute -> the getter's documentation


# The client generated empty classes (no attributes) for these, as their swagger definitions
# had no properties. Taken literally they would refuse every value, so they are replaced by what
# the API server decodes for them.
SCALARS_15: dict[str, Schema] = {
    "IntstrIntOrString": {
        "type": ["integer", "string"],
        "description": "IntOrString: an integer or a string (a port number or name, a count or "
                       "a percentage)."},
    "ResourceQuantity": {
        "type": ["string", "number"],
        "description": "Quantity: a string such as 100Gi or 500m; the API server also decodes a "
                       "bare JSON number, as kubectl sends for unquoted YAML numbers."},
    "UnversionedTime": {
        "type": "string", "format": "date-time",
        "description": "Time: an RFC 3339 timestamp."},
}

SIMPLE_TYPES_15: dict[str, Schema] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "bool": {"type": "boolean"},
    "float": {"type": "number"},
    "datetime": {"type": "string", "format": "date-time"},
    "object": {},  # anything
}


def swagger_name(class_name: str) -> str:
    """The swagger definition a class was generated from: V1Job -> v1.Job,
    V1beta1HTTPIngressPath -> v1beta1.HTTPIngressPath, IntstrIntOrString -> intstr.IntOrString.

    The generator only capitalised the (lower-case) package part and dropped the dot."""
    match = re.fullmatch(r"([A-Z][a-z0-9]*)([A-Z]\w*)", class_name)
    if match is None:
        raise VendorError(f"unexpected model class name {class_name}")
    return f"{match.group(1).lower()}.{match.group(2)}"


def _assigned_in(init: ast.FunctionDef, attribute: str) -> dict[str, str]:
    """The dict literal that __init__ assigns to self.<attribute>."""
    for node in init.body:
        if (isinstance(node, ast.Assign) and isinstance(target := node.targets[0], ast.Attribute)
                and target.attr == attribute):
            value: dict[str, str] = ast.literal_eval(node.value)
            return value
    raise VendorError(f"__init__ assigns no self.{attribute}")


def _decorated_as(function: ast.FunctionDef, decorator: str) -> bool:
    return any((isinstance(d, ast.Name) and d.id == decorator)
               or (isinstance(d, ast.Attribute) and d.attr == decorator)
               for d in function.decorator_list)


def _getter_description(function: ast.FunctionDef) -> str:
    """The docstring between 'Gets the x of this Y.' and ':return:'."""
    lines = (ast.get_docstring(function) or "").splitlines()[1:]
    text = " ".join(line.strip() for line in lines if line.strip()).split(":return:")[0]
    return text.strip()


def parse_model(source: str) -> Model:
    tree = ast.parse(source)
    [cls] = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    methods = [node for node in cls.body if isinstance(node, ast.FunctionDef)]
    [init] = [m for m in methods if m.name == "__init__"]
    types = _assigned_in(init, "swagger_types")
    json_keys = _assigned_in(init, "attribute_map")
    # A required field's generated setter raises on None; optional ones just assign.
    required = [m.name for m in methods if _decorated_as(m, "setter")
                and "must not be `None`" in (ast.get_source_segment(source, m) or "")]
    descriptions = {m.name: _getter_description(m) for m in methods
                    if _decorated_as(m, "property")}
    return Model(cls.name, types, json_keys, required, descriptions)


def read_client_models(wheel: Path) -> dict[str, Model]:
    models: dict[str, Model] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith(CLIENT_MODELS) and not name.endswith("__init__.py"):
                model = parse_model(archive.read(name).decode("utf-8"))
                models[model.class_name] = model
    return models


def type_schema(swagger_type: str, models: dict[str, Model]) -> Schema:
    if swagger_type in SIMPLE_TYPES_15:
        return dict(SIMPLE_TYPES_15[swagger_type])
    if match := re.fullmatch(r"list\[(.+)\]", swagger_type):
        return {"type": "array", "items": type_schema(match.group(1), models)}
    if match := re.fullmatch(r"dict\(str, (.+)\)", swagger_type):
        return {"type": "object", "additionalProperties": type_schema(match.group(1), models)}
    if swagger_type in models:
        return {"$ref": REF_PREFIX + swagger_name(swagger_type)}
    raise VendorError(f"unknown swagger type {swagger_type!r}")


def model_definition(model: Model, models: dict[str, Model]) -> Schema:
    if model.class_name in SCALARS_15:
        if model.types:
            raise VendorError(f"{model.class_name} now has fields: revisit SCALARS_15")
        return SCALARS_15[model.class_name]
    if not model.types:
        # An empty strict object refuses every value: such a type needs a SCALARS_15 entry.
        raise VendorError(f"{model.class_name} has no fields and no scalar mapping")
    properties: Schema = {}
    for attribute, swagger_type in model.types.items():
        schema = type_schema(swagger_type, models)
        if model.descriptions.get(attribute):
            schema["description"] = model.descriptions[attribute]
        properties[model.json_keys[attribute]] = schema
    definition: Schema = {"type": "object", "properties": properties,
                          "additionalProperties": False}
    if model.required:
        definition["required"] = [model.json_keys[a] for a in model.required]
    return definition


def vendor_15(wheel: Path) -> dict[str, str]:
    models = read_client_models(wheel)
    definitions = {swagger_name(name): model_definition(model, models)
                   for name, model in sorted(models.items())}

    def root_of(kind: Kind) -> str:
        # 1.5's swagger names carry the version only: batch/v1 Job is v1.Job.
        return f"{kind.version}.{kind.kind}"

    return render(KINDS_15, definitions, root_of)


# --- current releases: kubernetes-validate's per-kind files, made self-contained -------------


# The keywords of the current releases' schemas. Any other stops the tool: it might hold
# subschemas that would be copied without being rewritten.
KEYWORDS_CURRENT = Keywords(
    one=ONE_SUBSCHEMA,
    listed=LIST_OF_SUBSCHEMAS,
    named=frozenset({"properties", "$defs"}),
    plain=frozenset({"type", "enum", "required", "format", "description", "$ref", "$schema",
                     "$id"}),
    annotation_prefix="x-",
)


def read_wheel_files(wheel: Path, release: str, names: set[str]) -> dict[str, Schema]:
    """The named files of a release's strict directory in kubernetes-validate's wheel."""
    directory = WHEEL_SCHEMAS.format(release=release)
    with zipfile.ZipFile(wheel) as archive:
        missing = {directory + name for name in names} - set(archive.namelist())
        if missing:
            raise VendorError(f"{wheel.name}: no {', '.join(sorted(missing))}")
        return {name: json.loads(archive.read(directory + name)) for name in names}


def local_ref(schema: Schema, where: str) -> Schema:
    """A ref into the shared _definitions.json made a ref into the file's own $defs."""
    ref = schema.get("$ref")
    if ref is None or ref.startswith(DEFS_PREFIX):
        return schema
    if not ref.startswith(SHARED_PREFIX):
        raise VendorError(f"{where}: unexpected ref {ref}")
    return {**schema, "$ref": DEFS_PREFIX + ref.removeprefix(SHARED_PREFIX)}


# An annotation: no validator reads it, and it is three quarters of the bytes.
without_description = without("description")


def self_contained(kind_file: Schema, definitions: Schema) -> Schema:
    """kubernetes-validate's file of a kind, with its own copy of the definitions it reaches.

    Its $id goes: it names the file kubernetes-validate ships, and the refs are local now."""
    root = map_schemas({k: v for k, v in kind_file.items() if k != "$id"}, local_ref,
                       KEYWORDS_CURRENT)
    keep = reached(definitions, refs(root, DEFS_PREFIX), DEFS_PREFIX)
    document = {**root, "$defs": {name: definitions[name] for name in sorted(keep)}}
    trimmed: Schema = map_schemas(document, without_description, KEYWORDS_CURRENT)
    return trimmed


def render_current(files: dict[str, Schema]) -> dict[str, str]:
    """File name -> compact JSON text, for each kind, from a release's strict files (its
    _definitions.json and the kinds' files)."""
    definitions = files["_definitions.json"]["$defs"]
    rendered: dict[str, str] = {}
    for kind in KINDS_CURRENT:
        kind_file = files[kind.file_name]
        # The file must be the kind we mean, as the release's definition of it says.
        check_same_as_kubernetes_validate(kind_file, definitions,
                                          definition_name(definitions, kind))
        rendered[kind.file_name] = compact(checked(self_contained(kind_file, definitions)))
    return rendered


def vendor_current(wheel: Path, release: str) -> dict[str, str]:
    names = {"_definitions.json"} | {kind.file_name for kind in KINDS_CURRENT}
    return render_current(read_wheel_files(wheel, release, names))


# --- entry point ----------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--validate-sdist", type=Path,
                        help="kubernetes-validate-1.11.0.2.tar.gz (default: pip download)")
    parser.add_argument("--client-wheel", type=Path,
                        help="kubernetes-1.0.2-py2.py3-none-any.whl (default: pip download)")
    parser.add_argument("--validate-wheel", type=Path,
                        help="kubernetes_validate-1.37.0-py3-none-any.whl (default: pip download)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the files are not what would be written")
    return parser.parse_args(argv)


def vendor(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Release directory name -> its files (name -> text), from the pinned archives."""
    with tempfile.TemporaryDirectory() as scratch:
        sdist = args.validate_sdist or download(VALIDATE_SDIST, Path(scratch) / "validate")
        wheel = args.client_wheel or download(CLIENT_WHEEL, Path(scratch) / "client")
        current = args.validate_wheel or download(VALIDATE_WHEEL, Path(scratch) / "current")
        check_pin(sdist, VALIDATE_SDIST)
        check_pin(wheel, CLIENT_WHEEL)
        check_pin(current, VALIDATE_WHEEL)
        # All are built before any is written, so a failure leaves the old files whole.
        return {"v1.8": vendor_18(sdist), "v1.5": vendor_15(wheel),
                **{f"v{release}": vendor_current(current, release)
                   for release in CURRENT_RELEASES}}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        releases = vendor(args)
    except VendorError as error:
        print(error, file=sys.stderr)
        return 1
    if args.check:
        expected = written(releases)
        return report(out_of_date(expected, OUTPUT.glob("v1.*/*.json")), len(expected))
    for name, files in releases.items():
        write_version(OUTPUT / name, files)
    for directory in OUTPUT.glob("v1.*"):
        if directory.name not in releases:
            remove_version(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
