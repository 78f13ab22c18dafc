"""The vendored strict schemas of Kubernetes (schema/kubernetes/): the old releases 1.5 and 1.8
and the current releases scripts/vendor_kubernetes.py lists, read with jsonschema alone: what
each release accepts and refuses, that every file stands alone, and that every file is what the
script makes."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, ValidationError

import vendor_kubernetes as vendor
import vendoring
from conftest import ROOT

VENDORED = ROOT / "schema" / "kubernetes"
OLD_RELEASES = ("v1.5", "v1.8")
# Every other directory is a current release, written by the script from kubernetes-validate.
CURRENT_RELEASES = tuple(sorted(
    (path.name for path in VENDORED.glob("v1.*") if path.name not in OLD_RELEASES),
    key=lambda name: int(name.rpartition(".")[2])))
RELEASES = (*OLD_RELEASES, *CURRENT_RELEASES)
NEWER_THAN_15 = RELEASES[1:]
CORE_FILES = {"namespace-v1.json", "serviceaccount-v1.json", "configmap-v1.json",
              "service-v1.json", "persistentvolume-v1.json", "persistentvolumeclaim-v1.json",
              "job-batch-v1.json", "container-v1.json", "pod-v1.json"}
FILES_18 = CORE_FILES | {"role-rbac-v1.json", "rolebinding-rbac-v1.json",
                         "networkpolicy-networking-v1.json"}
FILES = {"v1.5": CORE_FILES, "v1.8": FILES_18,
         **{release: FILES_18 | {"storageclass-storage-v1.json",
                                 "poddisruptionbudget-policy-v1.json"}
            for release in CURRENT_RELEASES}}
ALL_FILES = [(release, name) for release in RELEASES for name in sorted(FILES[release])]
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "paddle-cluster-job", "namespace": "default", "labels": {"app": "x"}},
    "spec": {
        "parallelism": 3,
        "completions": 3,
        "activeDeadlineSeconds": 86400,
        "template": {
            "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
            "spec": {
                "restartPolicy": "Never",
                "serviceAccountName": "sa",
                "volumes": [{"name": "efs", "persistentVolumeClaim": {"claimName": "efsvol"}},
                            {"name": "h", "hostPath": {"path": "/home/admin/efs"}}],
                "containers": [{
                    "name": "trainer",
                    "image": "paddlepaddle/paddle-tutorial:k8s_train",
                    "command": ["/bin/bash", "-c", "/root/start.sh"],
                    "env": [{"name": "JOB_NAME", "value": "paddle-cluster-job"}],
                    "ports": [{"name": "jobport0", "containerPort": 7164, "hostPort": 7164}],
                    "volumeMounts": [{"name": "efs", "mountPath": "/home/jobpath"}],
                }],
            },
        },
    },
}
PV: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "efsvol"},
    "spec": {
        "capacity": {"storage": "100Gi"},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "nfs": {"server": "fs-1234.efs.us-west-2.amazonaws.com", "path": "/"},
        "claimRef": {"namespace": "default", "name": "efsvol"},
    },
}
PVC: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "efsvol", "namespace": "default"},
    "spec": {"accessModes": ["ReadWriteMany"], "volumeName": "efsvol",
             "resources": {"requests": {"storage": "50Gi"}}},
}
SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "master", "namespace": "default"},
    "spec": {"selector": {"app": "x"}, "clusterIP": "None",
             "ports": [{"name": "etcd", "port": 2379, "targetPort": 2379, "protocol": "TCP"}]},
}
SERVICE_ACCOUNT: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": "sa", "namespace": "default"}}
CONTAINER: dict[str, Any] = {"name": "init", "image": "busybox",
                             "command": ["sh", "-c", "true"],
                             "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}
POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}
STORAGE_CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "efs-sc"},
    "provisioner": "efs.csi.aws.com",
    "parameters": {"provisioningMode": "efs-ap", "fileSystemId": "fs-1234",
                   "directoryPerms": "700"},
    "reclaimPolicy": "Retain",
    "volumeBindingMode": "Immediate",
    "mountOptions": ["tls"],
}


@cache
def schema_of(release: str, file_name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((VENDORED / release / file_name).read_text("utf-8"))
    return loaded


@cache
def validator(release: str, file_name: str) -> Draft202012Validator:
    """Built once per file for the whole module."""
    return Draft202012Validator(schema_of(release, file_name))


def errors(release: str, file_name: str, obj: Any) -> list[ValidationError]:
    return list(validator(release, file_name).iter_errors(obj))


def definitions_member(release: str) -> str:
    """Where a file keeps its definitions: as in its source."""
    return "definitions" if release in OLD_RELEASES else "$defs"


def _copy_at(obj: dict[str, Any], path: str) -> tuple[dict[str, Any], Any, str]:
    """A deep copy of `obj`, the node in it holding the dotted `path`'s last key, and that key
    (list indexes are numbers)."""
    result = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node: Any = result
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    return result, node, last


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    result, node, key = _copy_at(obj, path)
    node[key] = value
    return result


def removed(obj: dict[str, Any], path: str) -> dict[str, Any]:
    result, node, key = _copy_at(obj, path)
    del node[key]
    return result


@cache
def check_definition(text: str) -> None:
    """check_schema of a definition (as JSON text: the same one recurs across files and
    releases, and checking one takes milliseconds)."""
    Draft202012Validator.check_schema(json.loads(text))


def refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.add(node["$ref"])
        for value in node.values():
            found |= refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= refs(item)
    return found


# --- every file stands alone ----------------------------------------------------------------


def test_the_profiles_default_releases_are_vendored() -> None:
    assert {"v1.33", "v1.34", "v1.35"} <= set(CURRENT_RELEASES)


def test_vendor_script_writes_exactly_the_current_release_directories() -> None:
    # Adding a release is one line in the script; paddlegen and these tests find its directory.
    assert tuple(f"v{release}" for release in vendor.CURRENT_RELEASES) == CURRENT_RELEASES
    assert vendor.OUTPUT == VENDORED


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_has_exactly_its_kinds(release: str) -> None:
    assert {p.name for p in (VENDORED / release).glob("*.json")} == FILES[release]


@pytest.mark.parametrize(("release", "file_name"), ALL_FILES)
def test_file_is_a_compact_standalone_schema(release: str, file_name: str) -> None:
    text = (VENDORED / release / file_name).read_text(encoding="utf-8")
    schema = json.loads(text)
    member = definitions_member(release)
    # A valid 2020-12 schema: the metaschema holds each definition to the whole metaschema, so
    # this is check_schema(schema), with each distinct definition checked once for all files.
    Draft202012Validator.check_schema({k: v for k, v in schema.items() if k != member})
    for definition in schema[member].values():
        check_definition(json.dumps(definition, sort_keys=True))
    prefix = f"#/{member}/"
    if release in OLD_RELEASES:
        assert set(schema) == {"$ref", "definitions"}
    else:  # kubernetes-validate's file of the kind, with its own definitions and no $id
        assert schema["$schema"] == DRAFT_2020_12
        assert "$id" not in schema and "definitions" not in schema
    assert text == json.dumps(schema, separators=(",", ":"), sort_keys=True) + "\n"

    definitions = schema[member]
    every_ref = refs(schema)
    assert all(ref.startswith(prefix) for ref in every_ref)
    assert {ref.removeprefix(prefix) for ref in every_ref} <= set(definitions)

    root = {keyword: value for keyword, value in schema.items() if keyword != member}
    reached, pending = set(), [r.removeprefix(prefix) for r in refs(root)]
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending += [r.removeprefix(prefix) for r in refs(definitions[name])]
    assert reached == set(definitions), "definitions unreachable from the root"


@pytest.mark.parametrize(("release", "file_name", "root"), [
    ("v1.5", "job-batch-v1.json", "v1.Job"),
    ("v1.5", "container-v1.json", "v1.Container"),
    ("v1.8", "job-batch-v1.json", "io.k8s.api.batch.v1.Job"),
    ("v1.8", "container-v1.json", "io.k8s.api.core.v1.Container"),
    ("v1.8", "rolebinding-rbac-v1.json", "io.k8s.api.rbac.v1.RoleBinding"),
    ("v1.8", "networkpolicy-networking-v1.json", "io.k8s.api.networking.v1.NetworkPolicy"),
])
def test_root_keeps_the_source_definition_name(release: str, file_name: str, root: str) -> None:
    assert schema_of(release, file_name)["$ref"] == f"#/definitions/{root}"


@pytest.mark.parametrize("release", CURRENT_RELEASES)
@pytest.mark.parametrize(("file_name", "group", "kind"), [
    ("job-batch-v1.json", "batch", "Job"),
    ("pod-v1.json", "", "Pod"),
    ("rolebinding-rbac-v1.json", "rbac.authorization.k8s.io", "RoleBinding"),
    ("networkpolicy-networking-v1.json", "networking.k8s.io", "NetworkPolicy"),
    ("storageclass-storage-v1.json", "storage.k8s.io", "StorageClass"),
    ("poddisruptionbudget-policy-v1.json", "policy", "PodDisruptionBudget"),
])
def test_current_root_is_the_kind(release: str, file_name: str, group: str, kind: str) -> None:
    schema = schema_of(release, file_name)
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": group, "kind": kind, "version": "v1"}]
    api_version = f"{group}/v1" if group else "v1"
    assert schema["properties"]["apiVersion"]["enum"] == [api_version]
    assert schema["properties"]["kind"]["enum"] == [kind]


@pytest.mark.parametrize(("release", "file_name"), ALL_FILES)
def test_every_object_definition_is_strict(release: str, file_name: str) -> None:
    schema = schema_of(release, file_name)
    root = {"(root)": schema} if release in CURRENT_RELEASES else {}
    for name, definition in {**root, **schema[definitions_member(release)]}.items():
        if "properties" in definition:
            assert definition["additionalProperties"] is False, name


def installed_kubernetes_validate() -> tuple[str, Path] | None:
    """The installed kubernetes-validate's version and schema directory, if any."""
    package = importlib.util.find_spec("kubernetes_validate")
    if package is None or not package.submodule_search_locations:
        return None
    try:
        installed = version("kubernetes-validate")
    except PackageNotFoundError:
        return None
    return installed, Path(package.submodule_search_locations[0]) / "kubernetes-json-schema"


@pytest.mark.parametrize("release", [
    # the same code makes each from the same package, and checks what it makes (seconds a
    # release): the newest in the fast part, every one in the conformance part
    *(pytest.param(release, marks=pytest.mark.conformance) for release in CURRENT_RELEASES[:-1]),
    CURRENT_RELEASES[-1]])
def test_current_files_are_what_the_script_makes_of_kubernetes_validate(release: str) -> None:
    """The files regenerated from the installed kubernetes-validate, if it is the pinned one
    (the wheel holds the same files: checked when this was vendored)."""
    found = installed_kubernetes_validate()
    pinned = vendor.VALIDATE_WHEEL.name.partition("==")[2]
    if found is None or found[0] != pinned:
        pytest.skip(f"kubernetes-validate {pinned} is not installed")
    directory = found[1] / f"{release}.0-local-strict"
    names = {"_definitions.json"} | {kind.file_name for kind in vendor.KINDS_CURRENT}
    sources = {name: json.loads((directory / name).read_bytes()) for name in names}
    rendered = vendor.render_current(sources)
    assert rendered == {name: (VENDORED / release / name).read_text(encoding="utf-8")
                        for name in FILES[release]}


@pytest.mark.parametrize(("release", "file_name"), ALL_FILES)
def test_file_is_what_the_script_makes_of_its_own_definitions(release: str,
                                                               file_name: str) -> None:
    """The script's pure part, run on a vendored file as its source, makes that file again:
    its walk over the keywords knows every one in it, and its trimming to what the root reaches
    keeps every definition. (Its sources proper are archives, which the tests do not download:
    scripts/vendor_kubernetes.py --check compares with them.)"""
    text = (VENDORED / release / file_name).read_text(encoding="utf-8")
    schema = json.loads(text)
    if release in OLD_RELEASES:
        root = schema["$ref"].removeprefix(vendor.REF_PREFIX)
        again = vendor.standalone(schema["definitions"], root)
    else:
        kind_file = {keyword: value for keyword, value in schema.items() if keyword != "$defs"}
        again = vendor.self_contained(kind_file, schema["$defs"])
    assert vendoring.compact(again) == text


def test_script_refuses_a_keyword_it_does_not_know() -> None:
    kind_file = {"type": "object", "properties": {"spec": {"unevaluatedProperties": False}}}
    with pytest.raises(vendoring.VendorError,
                       match=r"#/properties/spec: unknown keyword 'unevaluatedProperties'"):
        vendor.self_contained(kind_file, {})


# --- what every release accepts -------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_the_paddle_job_is_valid(release: str) -> None:
    assert errors(release, "job-batch-v1.json", JOB) == []


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("file_name", "obj"), [
    ("persistentvolume-v1.json", PV),
    ("persistentvolumeclaim-v1.json", PVC),
    ("service-v1.json", SERVICE),
    ("serviceaccount-v1.json", SERVICE_ACCOUNT),
    ("namespace-v1.json", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
    ("configmap-v1.json", {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "c"}, "data": {"k": "v"}}),
    ("container-v1.json", CONTAINER),
    ("pod-v1.json", POD),
], ids=lambda value: value if isinstance(value, str) else "")
def test_valid_object_in_every_release(release: str, file_name: str,
                                       obj: dict[str, Any]) -> None:
    assert errors(release, file_name, obj) == []


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("file_name", "obj", "path", "value"), [
    # resource.Quantity: kubectl sends an unquoted YAML number as a JSON number.
    ("persistentvolume-v1.json", PV, "spec.capacity.storage", 107374182400),
    ("container-v1.json", CONTAINER, "resources.limits.cpu", 2),
    # intstr.IntOrString: a port number or a port name.
    ("service-v1.json", SERVICE, "spec.ports.0.targetPort", "etcd"),
])
def test_scalar_types_accept(release: str, file_name: str, obj: dict[str, Any], path: str,
                             value: Any) -> None:
    assert errors(release, file_name, changed(obj, path, value)) == []


# --- what every release refuses -------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("file_name", "obj", "path", "value"), [
    ("job-batch-v1.json", JOB, "spec.template.spec.containers.0.hostPorts", [7164]),
    ("job-batch-v1.json", JOB, "spec.template.spec.volumes.1.hostPath.readOnly", True),
    ("job-batch-v1.json", JOB, "metadata.label", {"app": "x"}),
    ("container-v1.json", CONTAINER, "imagePullSecrets", []),
    ("persistentvolume-v1.json", PV, "spec.nfs.mountOptions", ["hard"]),
], ids=lambda value: value if isinstance(value, str) else "")
def test_unknown_field_is_refused(release: str, file_name: str, obj: dict[str, Any], path: str,
                                  value: Any) -> None:
    [error] = errors(release, file_name, changed(obj, path, value))
    assert error.validator == "additionalProperties"
    assert repr(path.rpartition(".")[2]) in error.message


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("file_name", "obj", "path"), [
    ("job-batch-v1.json", JOB, "spec.template.spec.containers.0.name"),
    ("container-v1.json", CONTAINER, "name"),
    ("job-batch-v1.json", JOB, "spec.template.spec.containers.0.ports.0.containerPort"),
    ("job-batch-v1.json", JOB, "spec.template.spec.volumes.0.name"),
    ("job-batch-v1.json", JOB, "spec.template.spec.containers.0.volumeMounts.0.mountPath"),
    ("persistentvolume-v1.json", PV, "spec.nfs.server"),
    ("persistentvolume-v1.json", PV, "spec.nfs.path"),
    ("job-batch-v1.json", JOB, "spec.template"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_missing_required_field_is_refused(release: str, file_name: str, obj: dict[str, Any],
                                           path: str) -> None:
    [error] = errors(release, file_name, removed(obj, path))
    assert error.validator == "required"
    assert repr(path.rpartition(".")[2]) in error.message


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("file_name", "obj", "path", "value"), [
    ("job-batch-v1.json", JOB, "spec.parallelism", "3"),
    ("job-batch-v1.json", JOB, "spec.template.spec.containers.0.command", "/root/start.sh"),
    ("job-batch-v1.json", JOB, "metadata.labels.app", 1),
    ("job-batch-v1.json", JOB, "metadata.creationTimestamp", 1500000000),
    ("persistentvolume-v1.json", PV, "spec.capacity.storage", ["100Gi"]),
    ("container-v1.json", CONTAINER, "resources.limits.cpu", True),
    ("service-v1.json", SERVICE, "spec.ports.0.targetPort", 2379.5),
    ("service-v1.json", SERVICE, "spec.ports.0.port", "2379"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_wrong_type_is_refused(release: str, file_name: str, obj: dict[str, Any], path: str,
                               value: Any) -> None:
    assert errors(release, file_name, changed(obj, path, value)) != []


# --- what 1.8 added ---------------------------------------------------------------------------


NEWER_FIELDS = [
    ("job-batch-v1.json", JOB, "spec.backoffLimit", 6),
    ("job-batch-v1.json", JOB, "spec.template.spec.initContainers", [CONTAINER]),
    ("job-batch-v1.json", JOB, "spec.template.spec.automountServiceAccountToken", False),
    ("serviceaccount-v1.json", SERVICE_ACCOUNT, "automountServiceAccountToken", False),
    ("persistentvolume-v1.json", PV, "spec.mountOptions", ["hard", "nfsvers=4.1"]),
    ("persistentvolume-v1.json", PV, "spec.storageClassName", "efs"),
    ("persistentvolumeclaim-v1.json", PVC, "spec.storageClassName", "efs"),
    ("job-batch-v1.json", JOB, "spec.template.spec.volumes.1.hostPath.type", "Directory"),
]


@pytest.mark.parametrize(("file_name", "obj", "path", "value"), NEWER_FIELDS,
                         ids=[path for _, _, path, _ in NEWER_FIELDS])
def test_field_refused_by_15_and_accepted_by_18(file_name: str, obj: dict[str, Any], path: str,
                                                value: Any) -> None:
    newer = changed(obj, path, value)
    parent, _, field = path.rpartition(".")
    [error] = errors("v1.5", file_name, newer)
    assert error.validator == "additionalProperties"
    assert repr(field) in error.message
    assert ".".join(map(str, error.absolute_path)) == parent
    assert errors("v1.8", file_name, newer) == []


@pytest.mark.parametrize("release", NEWER_THAN_15)
@pytest.mark.parametrize(("file_name", "obj"), [
    ("role-rbac-v1.json", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "r", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    ("rolebinding-rbac-v1.json", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": "default"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
    ("networkpolicy-networking-v1.json", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "np", "namespace": "default"},
        "spec": {"podSelector": {"matchLabels": {"app": "x"}},
                 "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "x"}}}],
                              "ports": [{"protocol": "TCP", "port": 7164}]}]}}),
], ids=["role", "rolebinding", "networkpolicy"])
def test_kinds_since_18_are_usable(release: str, file_name: str, obj: dict[str, Any]) -> None:
    assert errors(release, file_name, obj) == []
    assert errors(release, file_name, {**obj, "status": {}}) != []


@pytest.mark.parametrize("release", CURRENT_RELEASES)
def test_storage_class_in_current_releases(release: str) -> None:
    assert errors(release, "storageclass-storage-v1.json", STORAGE_CLASS) == []
    [missing] = errors(release, "storageclass-storage-v1.json",
                       removed(STORAGE_CLASS, "provisioner"))
    assert missing.validator == "required"
    [wrong] = errors(release, "storageclass-storage-v1.json",
                     changed(STORAGE_CLASS, "parameters.directoryPerms", 700))
    assert list(wrong.absolute_path) == ["parameters", "directoryPerms"]
    [unknown] = errors(release, "storageclass-storage-v1.json",
                       changed(STORAGE_CLASS, "allowedTopology", []))
    assert unknown.validator == "additionalProperties"


@pytest.mark.parametrize("release", CURRENT_RELEASES)
def test_current_roots_take_null_for_their_own_fields(release: str) -> None:
    # As kubernetes-validate ships them: a kind's own file makes every field of its root
    # nullable; the definitions it refers to keep required fields non-null.
    assert errors(release, "container-v1.json", changed(CONTAINER, "name", None)) == []
    assert errors(release, "pod-v1.json", changed(POD, "spec.containers.0.name", None)) != []
    assert errors(release, "job-batch-v1.json", changed(JOB, "kind", None)) != []  # enum


# --- where the sources differ on purpose or by accident ---------------------------------------


def test_15_requires_service_ports_and_later_releases_do_not() -> None:
    # The 1.5 spec marks ServiceSpec.ports required (kubernetes 1.0.2's setter refuses None),
    # though the 1.5 API server accepts a headless Service without ports.
    portless = removed(SERVICE, "spec.ports")
    [error] = errors("v1.5", "service-v1.json", portless)
    assert error.validator == "required"
    for release in NEWER_THAN_15:
        assert errors(release, "service-v1.json", portless) == []


def test_fractional_quantity_number() -> None:
    # 1.5 (generated here) takes any JSON number as the API server does; kubernetes-validate's
    # 1.8 schema, vendored as shipped, takes integers only; its current schemas any number.
    half_cpu = changed(CONTAINER, "resources.limits.cpu", 0.5)
    assert errors("v1.5", "container-v1.json", half_cpu) == []
    assert errors("v1.8", "container-v1.json", half_cpu) != []
    for release in CURRENT_RELEASES:
        assert errors(release, "container-v1.json", half_cpu) == []


def test_origin_counts_the_files_and_bytes_of_every_release() -> None:
    origin = (VENDORED / "ORIGIN.md").read_text(encoding="utf-8")
    table = {release: (int(files), int(size.replace(",", "")))
             for release, files, size in re.findall(r"^\| `(v1\.\d+)/` \| (\d+) \| ([\d,]+) \|$",
                                                    origin, re.M)}
    assert table == {release: (len(FILES[release]),
                               sum(len(path.read_bytes())
                                   for path in (VENDORED / release).glob("*.json")))
                     for release in RELEASES}


def test_origin_names_every_archive_and_its_digest() -> None:
    origin = (VENDORED / "ORIGIN.md").read_text(encoding="utf-8")
    for text in ("kubernetes-validate-1.11.0.2.tar.gz", "kubernetes-1.0.2-py2.py3-none-any.whl",
                 "kubernetes_validate-1.37.0-py3-none-any.whl",
                 vendor.VALIDATE_SDIST.sha256, vendor.CLIENT_WHEEL.sha256,
                 vendor.VALIDATE_WHEEL.sha256,
                 "bfbf505f281ea67a1431cb4d1ea7a257d93047aa3f6c2425a025ffe034695d6a",
                 "99c5925b8a077aa4cdaf38af24b8d3069ab06f4b51a99202ebd1c82f4e42e6e8"):
        assert text in origin
