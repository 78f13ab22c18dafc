"""Every generated Kubernetes object passes the official OpenAPI schema in strict mode."""

from __future__ import annotations

import copy

import pytest

from paddlegen.compiler.build import ManifestError, build, check_manifests
from paddlegen.compiler.kube_schema import UnsupportedVersion, supported_versions, violations

from conftest import GOLDEN_SPECS

BUILDS = [build(spec.read_bytes(), str(spec)) for spec in GOLDEN_SPECS]
MANIFESTS = [m for result in BUILDS for m in result.manifests]
KUBE_VERSION = BUILDS[0].plan.spec.kube_version


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda m: m.path)
def test_object_is_valid_in_strict_mode(manifest) -> None:
    assert violations(manifest.obj, KUBE_VERSION) == []


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda m: m.path)
def test_object_survives_the_official_client_models(manifest) -> None:
    """A second, independent reading: the kubernetes client's own models keep every field."""
    from kubernetes.client import ApiClient

    client = ApiClient()
    model = f"V1{manifest.obj['kind']}"
    typed = client._ApiClient__deserialize(copy.deepcopy(manifest.obj), model)
    assert client.sanitize_for_serialization(typed) == manifest.obj


def test_strict_mode_rejects_an_unknown_field() -> None:
    job = copy.deepcopy(next(m.obj for m in MANIFESTS if m.obj["kind"] == "Job"))
    job["spec"]["template"]["spec"]["containers"][0]["hostPorts"] = [7164]
    [problem] = violations(job, KUBE_VERSION)
    assert problem.startswith("spec.template.spec.containers[0]: ")
    assert "hostPorts" in problem


def test_a_wrong_type_is_reported_with_its_path() -> None:
    job = copy.deepcopy(next(m.obj for m in MANIFESTS if m.obj["kind"] == "Job"))
    job["spec"]["parallelism"] = "3"
    assert violations(job, KUBE_VERSION) == [
        "spec.parallelism: '3' is not of type 'integer', 'null'"]


def test_build_fails_naming_the_file_and_object() -> None:
    manifest = copy.deepcopy(MANIFESTS[0])
    manifest.obj["spec"]["bogus"] = 1
    with pytest.raises(ManifestError) as raised:
        check_manifests((manifest,), KUBE_VERSION)
    [line] = raised.value.lines
    assert line.startswith(f"{manifest.path}: PersistentVolume/default-efsvol: spec: ")
    assert "strict" in line


def test_unknown_kubernetes_release_is_refused() -> None:
    with pytest.raises(UnsupportedVersion, match="available: "):
        violations(MANIFESTS[0].obj, "1.2")


def test_default_release_is_bundled() -> None:
    assert KUBE_VERSION in supported_versions()
