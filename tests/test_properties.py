"""Property tests: valid specs across the schema's space build, and nothing breaks the compiler."""

from __future__ import annotations

import io
import string
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from paddlegen.compiler.build import ManifestError, build
from paddlegen.compiler.kube_schema import violations
from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.writer import drift, write_tree

REGIONS = ["us-west-2", "us-east-1", "eu-west-1", "ap-southeast-2", "sa-east-1"]
IMAGES = ["paddlepaddle/paddle-tutorial:k8s_train", "registry.example.com:5000/team/paddle:v1.2",
          "mypaddle/paddle:quickstart", "paddle@sha256:" + "a" * 64,
          "gcr.io/my-project/paddle_train-v2:1.0", "localhost:5000/a/b-c-d:1",
          "myorg/paddle-k8s-train:v1"]
labels = st.from_regex(r"\A[a-z]([a-z0-9-]{0,55}[a-z0-9])?\Z")
settings.register_profile("paddlegen", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("paddlegen")


def dump(data: dict[str, Any]) -> bytes:
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return stream.getvalue().encode()


@st.composite
def parameter_server(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.integers(1, 40))
    dense, sparse = draw(st.integers(1, 8)), draw(st.integers(0, 8))
    return {"image": draw(st.sampled_from(IMAGES)), "nodes": nodes,
            "port": draw(st.integers(1, 65536 - dense - sparse)), "portsNum": dense,
            "portsNumForSparse": sparse,
            "gradientServers": draw(st.integers(1, nodes)),
            "trainerCount": draw(st.integers(1, 64)),
            "nic": draw(st.sampled_from(["eth0", "ens5", "bond0.12"])),
            "configDir": draw(st.from_regex(r"\A[A-Za-z0-9_]{1,20}\Z"))}


@st.composite
def kube_aws_specs(draw: st.DrawFn) -> dict[str, Any]:
    region = draw(st.sampled_from(REGIONS))
    account = draw(st.from_regex(r"\A[0-9]{12}\Z"))
    training = draw(parameter_server())
    capacity = draw(st.integers(1, 10_000))
    name, data_job = draw(labels), draw(labels)
    assume(name != data_job)
    efs_id = draw(st.from_regex(r"\A[0-9a-f]{8}\Z"))
    return {
        "apiVersion": "paddlegen/v1", "kind": "TrainingJob", "profile": "kube-aws",
        "metadata": {"name": name, "namespace": draw(labels)},
        "cluster": {
            "name": draw(st.from_regex(r"\A[A-Za-z][A-Za-z0-9-]{0,30}\Z")), "region": region,
            "availabilityZone": region + draw(st.sampled_from("abc")), "accountId": account,
            "keyName": draw(st.text(string.ascii_letters + "-_ .", min_size=1, max_size=30)),
            "kmsKeyArn": f"arn:aws:kms:{region}:{account}:key/{draw(st.uuids())}",
            "externalDNSName": draw(labels),
            "workerCount": training["nodes"] + draw(st.integers(0, 5)),
            "s3Uri": f"s3://{draw(labels)[:40]}-bucket/{draw(labels)}",
            **draw(st.fixed_dictionaries({}, optional={
                "workerInstanceType": st.sampled_from(["m3.large", "c5.2xlarge"]),
                "controllerRootVolumeSize": st.integers(1, 500),
                "instanceCIDR": st.just("10.0.1.0/24"),
                "podCIDR": st.sampled_from(["10.2.0.0/16", "172.16.0.0/16"]),
                "recordSetTTL": st.integers(1, 3600)}))},
        "storage": {"efs": {"dnsName": f"fs-{efs_id}.efs.{region}.amazonaws.com"},
                    "claimName": draw(labels), "capacity": f"{capacity}Gi",
                    "request": f"{draw(st.integers(1, capacity))}Gi"},
        "dataset": {"image": draw(st.sampled_from(IMAGES)), "jobName": data_job},
        "training": training,
    }


@st.composite
def kube_up_specs(draw: st.DrawFn) -> dict[str, Any]:
    region = draw(st.sampled_from(REGIONS))
    training = draw(parameter_server())
    return {
        "apiVersion": "paddlegen/v1", "kind": "TrainingJob", "profile": "kube-up",
        "metadata": {"name": draw(labels)},
        "cluster": {"name": draw(st.from_regex(r"\A[a-z][a-z0-9-]{0,10}\Z")),
                    "availabilityZone": region + "b", "workerCount": training["nodes"],
                    "s3Uri": f"s3://{draw(labels)}-artifacts"},
        "storage": {"hostPath": "/" + draw(labels)},
        "training": training,
    }


@st.composite
def local_specs(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": "paddlegen/v1", "kind": "TrainingJob", "profile": "local",
        "metadata": {"name": draw(labels)},
        "storage": {"hostPath": "/data/" + draw(labels)},
        "training": {"numPasses": draw(st.integers(1, 1000)), "useGpu": draw(st.booleans()),
                     "trainerCount": draw(st.integers(1, 64)),
                     "testAllDataInOnePeriod": draw(st.booleans())},
    }


any_valid_spec = st.one_of(kube_aws_specs(), kube_up_specs(), local_specs())


@given(any_valid_spec)
def test_valid_specs_build_deterministically_into_strictly_valid_objects(spec: dict) -> None:
    raw = dump(spec)
    first = build(raw, "spec.yaml")
    assert build(raw, "spec.yaml").artifacts == first.artifacts
    for manifest in first.manifests:
        assert violations(manifest.obj, first.plan.spec.kube_version) == []


@given(any_valid_spec)
def test_built_trees_are_written_and_check_clean(spec: dict) -> None:
    artifacts = build(dump(spec), "spec.yaml").artifacts
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        write_tree(out, artifacts)
        assert drift(out, artifacts) == ""
        assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
            a.path for a in artifacts]


@given(st.one_of(kube_aws_specs(), kube_up_specs()))
def test_derived_invariants_hold(spec: dict) -> None:
    result = build(dump(spec), "spec.yaml")
    t = spec["training"]
    [job] = [m.obj for m in result.manifests
             if m.obj["kind"] == "Job" and m.obj["metadata"]["name"] == spec["metadata"]["name"]]
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == t["nodes"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    ports = [p["containerPort"] for p in container["ports"]]
    assert ports == list(range(t["port"], t["port"] + t["portsNum"] + t["portsNumForSparse"]))
    assert all(p["hostPort"] == p["containerPort"] for p in container["ports"])
    env = {e["name"]: e["value"] for e in container["env"]}
    assert all(isinstance(value, str) for value in env.values())
    assert env["CONF_PADDLE_PORT"] == str(t["port"])
    assert env["CONF_PADDLE_GRADIENT_NUM"] == str(t["gradientServers"])
    if spec["profile"] == "kube-aws":
        [data] = [m.obj for m in result.manifests
                  if m.obj["metadata"]["name"] == spec["dataset"]["jobName"]
                  and m.obj["kind"] == "Job"]
        data_env = {e["name"]: e["value"]
                    for e in data["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert data_env["SPLIT_COUNT"] == str(t["nodes"])


junk = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                 st.floats(allow_nan=True), st.text(max_size=40),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5),
                                                                      st.integers(), max_size=3))


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(any_valid_spec)
    for _ in range(draw(st.integers(1, 4))):
        parent = spec
        path = []
        while isinstance(parent, dict) and parent:
            key = draw(st.sampled_from(sorted(parent)))
            path.append(key)
            if not isinstance(parent[key], dict) or draw(st.booleans()):
                break
            parent = parent[key]
        if not isinstance(parent, dict) or not path:
            continue
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        if action == "delete":
            parent.pop(path[-1], None)
        elif action == "replace":
            parent[path[-1]] = draw(junk)
        else:
            parent[draw(st.text(min_size=1, max_size=12))] = draw(junk)
    return spec


@given(mutated_specs())
def test_mutated_specs_never_crash(spec: dict) -> None:
    try:
        build(dump(spec), "spec.yaml")
    except SpecError as error:
        assert error.problems
        assert all(str(p).startswith("spec.yaml:") for p in error.problems)
    except ManifestError:
        raise AssertionError("a spec that validates produced an invalid object") from None


@given(st.binary(max_size=300))
def test_random_bytes_never_crash(raw: bytes) -> None:
    try:
        build(raw, "spec.yaml")
    except SpecError as error:
        assert error.problems
