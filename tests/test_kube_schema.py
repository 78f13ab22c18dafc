"""Every generated Kubernetes object passes the schema of the release its profile targets, in
strict mode, and the check can fail."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paddlegen.compiler import kube_schema
from paddlegen.compiler.build import Manifest, ManifestError, build, check_manifests
from paddlegen.compiler.kube_schema import (
    INIT_CONTAINERS_ANNOTATION,
    SchemaSource,
    UnsupportedVersion,
    fast_valid,
    source,
    sources,
    supported_versions,
    violations,
)

from conftest import GOLDEN_SPECS
from profile_harness import spec_values

BUILDS = {spec.parent.name: build(spec.read_bytes(), str(spec)) for spec in GOLDEN_SPECS}
CHECKED = [(m, result.plan.meta.target.kube.schema)
           for result in BUILDS.values() for m in result.manifests]
# Custom resources (the kinds of the vendored CRDs: PaddleJob, JobSet, TrainJob, Kueue's) have no
# model in the official client.
BUILT_IN = [m for m, _ in CHECKED
            if not any(crds.file(m.obj["apiVersion"], m.obj["kind"]).is_file()
                       for crds in kube_schema.extra_sources())]


def job(name: str) -> dict[str, Any]:
    """A copy of the training Job of golden `name` (applied last)."""
    training = BUILDS[name].manifests[-1].obj
    assert training["kind"] == "Job"
    return copy.deepcopy(training)


@pytest.mark.parametrize(("manifest", "schema"), CHECKED, ids=lambda c: getattr(c, "path", c))
def test_object_is_valid_in_strict_mode_for_its_release(manifest: Manifest, schema: str) -> None:
    assert violations(manifest.obj, schema) == []


@pytest.mark.parametrize("golden", sorted(BUILDS))
def test_each_golden_is_checked_against_its_own_release(golden: str) -> None:
    """The release the golden's build targets (the spec's kubeVersion, where it names one), or,
    for a release older than every published schema (kube-aws v0.9.1's 1.4), the oldest."""
    kube = BUILDS[golden].plan.meta.target.kube
    named = spec_values(golden).get("kubeVersion")
    assert named is None or kube.minor == named
    releases = supported_versions()
    if kube.minor in releases:
        assert kube.schema == kube.minor
    else:
        assert kube.schema == releases[0]
        assert kube.since(int(releases[0].split(".")[1])) is False


@pytest.mark.parametrize("manifest", BUILT_IN, ids=lambda m: m.path)
def test_object_survives_the_official_client_models(manifest: Manifest) -> None:
    """A second, independent reading: the kubernetes client's own models keep every field."""
    from kubernetes.client import ApiClient, models

    model = f"V1{manifest.obj['kind']}"
    assert hasattr(models, model)
    client = ApiClient()
    typed = client._ApiClient__deserialize(copy.deepcopy(manifest.obj), model)  # type: ignore[attr-defined]
    assert client.sanitize_for_serialization(typed) == manifest.obj  # type: ignore[no-untyped-call]


@pytest.mark.parametrize(("path", "value"), [
    (("spec", "backoffLimit"), 0),
    (("spec", "template", "spec", "initContainers"), [{"name": "wait", "image": "busybox"}]),
    (("spec", "template", "spec", "automountServiceAccountToken"), False),
])
def test_the_1_5_schema_refuses_what_1_8_added(path: tuple[str, ...], value: object) -> None:
    obj = job("kube-aws")  # for Kubernetes 1.4.6, checked against 1.5
    assert violations(obj, "1.5") == []
    node = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert violations(obj, "1.8") == []
    [(where, message)] = violations(obj, "1.5")
    assert where == path[:-1] and repr(path[-1]) in message


def test_the_1_5_schema_refuses_the_1_8_volume_fields() -> None:
    pv = next(m.obj for m in BUILDS["kube-aws-v0.9.9"].manifests
              if m.obj["kind"] == "PersistentVolume")
    assert pv["spec"]["mountOptions"] and pv["spec"]["storageClassName"] == ""
    assert violations(pv, "1.8") == []
    assert sorted(message for _, message in violations(pv, "1.5")) == [
        "Additional properties are not allowed ('mountOptions', 'storageClassName' were "
        "unexpected)"]


def test_strict_mode_rejects_an_unknown_field() -> None:
    obj = job("local")
    obj["spec"]["template"]["spec"]["containers"][0]["hostPorts"] = [7164]
    [(path, message)] = violations(obj, "1.35")
    assert path == ("spec", "template", "spec", "containers", 0)
    assert "hostPorts" in message


def test_a_wrong_type_is_reported_with_its_path() -> None:
    obj = job("local")
    obj["spec"]["parallelism"] = "3"
    assert violations(obj, "1.35") == [
        (("spec", "parallelism"), "'3' is not of type 'integer', 'null'")]


def test_init_containers_inside_the_1_5_annotation_are_checked_as_containers() -> None:
    obj = job("kube-aws")
    annotations = obj["spec"]["template"]["metadata"]["annotations"]
    key = INIT_CONTAINERS_ANNOTATION
    annotations[key] = annotations[key].replace('"image"', '"imagee"')
    [(path, message)] = violations(obj, "1.5")
    assert path[-1] == key
    assert "'imagee' was unexpected" in message


def test_a_kind_the_release_lacks_is_a_clean_violation() -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": []}
    assert violations(role, "1.5") == [
        ((), "Kubernetes 1.5 serves no Role in rbac.authorization.k8s.io/v1")]
    assert violations({"apiVersion": "example.com/v1", "kind": "Widget"}, "1.35") == [
        ((), "Kubernetes 1.35 serves no Widget in example.com/v1")]


def test_build_fails_with_problems_positioned_in_the_generated_file() -> None:
    manifest = BUILDS["kube-aws"].manifests[0]
    obj = copy.deepcopy(manifest.obj)
    obj["spec"]["bogus"] = 1
    broken = Manifest(manifest.path, obj)
    with pytest.raises(ManifestError) as raised:
        check_manifests((broken,), "1.5")
    [problem] = raised.value.problems
    line = broken.text.splitlines().index("spec:") + 2  # where the value of spec begins
    assert str(problem).startswith(f"{manifest.path}:{line}:3: spec: PersistentVolume/")
    assert "'bogus' was unexpected" in str(problem)
    assert "kubernetes==1.0.2" in str(problem) and str(problem).endswith("[kube-schema]")


def test_unknown_kubernetes_release_is_refused() -> None:
    with pytest.raises(UnsupportedVersion, match=r"available: 1\.5, 1\.8, "):
        source("1.2")


def test_vendored_and_bundled_releases_are_supported() -> None:
    assert supported_versions()[:2] == ["1.5", "1.8"]
    assert {"1.33", "1.34", "1.35"} <= set(supported_versions())


# --- the boolean validator on the success path, the vendored current releases -----------------


SUCCESS_PATH = """
import json, sys
from pathlib import Path
from paddlegen.compiler.build import build
from paddlegen.compiler.kube_schema import violations
for spec in sorted(Path(sys.argv[1]).glob("*/spec.yaml")):
    for manifest in build(spec.read_bytes(), str(spec)).manifests:  # checks every object
        for release in ("1.33", "1.34", "1.35"):
            assert violations(manifest.obj, release) == [], (spec, release)
print(json.dumps(sorted(name for name in ("jsonschema", "referencing") if name in sys.modules)))
invalid = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": "3"}}
assert violations(invalid, "1.35")
print(json.dumps("jsonschema" in sys.modules))
"""


def test_the_success_path_never_imports_jsonschema() -> None:
    from conftest import GOLDEN

    run = subprocess.run([sys.executable, "-c", SUCCESS_PATH, str(GOLDEN)], capture_output=True,
                         text=True, timeout=120, check=True)
    imported_while_valid, imported_once_invalid = map(json.loads, run.stdout.splitlines())
    assert imported_while_valid == []
    assert imported_once_invalid  # so the check above can see an import


def test_current_releases_use_their_vendored_files_then_kubernetes_validate() -> None:
    vendored, bundled, *crds = sources("1.35")
    assert [crd.directory.name for crd in crds] == ["kubeflow", "jobset", "trainer", "kueue"]
    assert str(vendored.directory).endswith("kubernetes/v1.35") and not vendored.shared_definitions
    assert bundled.shared_definitions
    assert vendored.origin == bundled.origin == "the Kubernetes 1.35 API (kubernetes-validate)"
    # A kind not vendored: kubernetes-validate's file, through jsonschema.
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "x"}},
                 "template": {"metadata": {"labels": {"app": "x"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert violations(deployment, "1.35") == []
    deployment["spec"]["replica"] = 2
    [(path, message)] = violations(deployment, "1.35")
    assert path == ("spec",) and "'replica' was unexpected" in message


def test_a_kind_the_boolean_validator_cannot_decide_goes_through_jsonschema(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "replicas": {"type": "integer", "exclusiveMinimum": 0}}}
    (tmp_path / "gadget-example-v1.json").write_text(json.dumps(schema))
    monkeypatch.setattr(kube_schema, "extra_sources", lambda: (SchemaSource(tmp_path, "a test"),))
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "replicas": 2}
    assert not fast_valid(gadget, "1.35")  # exclusiveMinimum: not implemented, never "valid"
    assert violations(gadget, "1.35") == []
    assert violations({**gadget, "replicas": 0}, "1.35") == [
        (("replicas",), "0 is less than or equal to the minimum of 0")]


@pytest.mark.parametrize(("golden", "release"), [("kube-aws-v0.9.9", "1.8"), ("local", "1.35")])
def test_format_is_no_assertion(golden: str, release: str) -> None:
    obj = job(golden)
    obj["metadata"]["creationTimestamp"] = "yesterday"
    assert fast_valid(obj, release)
    assert violations(obj, release) == []


def test_a_spec_that_is_no_object_is_a_violation() -> None:
    # It used to raise AttributeError, looking for the init-containers annotation in it.
    obj = job("kube-aws")
    obj["spec"] = "parallel"
    assert violations(obj, "1.5") == [(("spec",), "'parallel' is not of type 'object'")]


@pytest.mark.parametrize(("api_version", "kind"), [
    ({"a": "dict"}, "Job"), ("batch/v1", "x" * 300), ("../../etc/v1", "Job"),
    ("batch/v1", "job/../../Pod"), (None, None)])
def test_what_names_no_kind_is_a_clean_violation(api_version: Any, kind: Any) -> None:
    [(path, message)] = violations({"apiVersion": api_version, "kind": kind}, "1.35")
    assert path == () and "serves no" in message
