"""Property tests: valid specs across the schema's space build, and nothing breaks the compiler."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paddlegen.compiler.build import ManifestError, build
from paddlegen.compiler.kube_schema import violations
from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.writer import drift, write_tree

from conftest import GOLDEN_SPECS, example_counts
from strategies import any_valid_spec, dump, kube_aws_specs, kube_up_specs


@pytest.mark.parametrize("max_examples", example_counts(30, 60))
def test_valid_specs_build_deterministically_into_strictly_valid_objects(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(any_valid_spec)
    def check(spec: dict[str, Any]) -> None:
        raw = dump(spec)
        first = build(raw, "spec.yaml")
        assert build(raw, "spec.yaml").artifacts == first.artifacts
        for manifest in first.manifests:
            assert violations(manifest.obj, first.plan.meta.target.kube.schema) == []

    check()


@pytest.mark.parametrize("max_examples", example_counts(20, 60))
def test_built_trees_are_written_and_check_clean(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(any_valid_spec)
    def check(spec: dict[str, Any]) -> None:
        artifacts = build(dump(spec), "spec.yaml").artifacts
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "out"
            write_tree(out, artifacts)
            assert drift(out, artifacts) == ""
            assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
                a.path for a in artifacts]

    check()


@pytest.mark.parametrize("max_examples", example_counts(30, 60))
def test_derived_invariants_hold(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(st.one_of(kube_aws_specs(), kube_up_specs()))
    def check(spec: dict[str, Any]) -> None:
        result = build(dump(spec), "spec.yaml")
        t = spec["training"]
        [job] = [m.obj for m in result.manifests if m.obj["kind"] == "Job"
                 and m.obj["metadata"]["name"] == spec["metadata"]["name"]]
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

    check()


junk = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                 st.floats(allow_nan=True), st.text(max_size=40),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5),
                                                                      st.integers(), max_size=3))


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = draw(any_valid_spec)
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


@pytest.mark.parametrize("max_examples", example_counts(25, 60))
def test_mutated_specs_never_crash(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(mutated_specs())
    def check(spec: dict[str, Any]) -> None:
        try:
            build(dump(spec), "spec.yaml")
        except SpecError as error:
            assert error.problems
            assert all(str(p).startswith("spec.yaml:") for p in error.problems)
        except ManifestError:
            raise AssertionError("a spec that validates produced an invalid object") from None

    check()


@given(st.binary(max_size=300))
def test_random_bytes_never_crash(raw: bytes) -> None:
    try:
        build(raw, "spec.yaml")
    except SpecError as error:
        assert error.problems


TAGS = ["!!int", "!!float", "!!bool", "!!str", "!!null", "!!binary", "!!timestamp", "!!map",
        "!!seq", "!!set", "!!omap", "!!python/object/apply:os.system", "!<tag:yaml.org,2002:int>",
        "!Ref", "!"]
HUGE_NUMBERS = ["9" * 5000, "-" + "9" * 40, "1e999999999", "0x" + "f" * 60, ".inf", "-.nan",
                "1_000_000_000_000_000_000_000", "0o" + "7" * 50, "1" + "0" * 100]
CONTROL = [chr(code) for code in range(32) if chr(code) not in "\n"] + [
    "\x7f", "\x85", "\u2028", "\u2029", "\ufeff", "\ud7ff", "\U0010ffff"]


@st.composite
def hostile_specs(draw: st.DrawFn) -> bytes:
    """A golden spec with values given YAML tags, swapped for huge numbers, or salted with
    control characters, a few lines at a time."""
    lines = draw(st.sampled_from(GOLDEN_SPECS)).read_text().splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        key, colon, value = lines[index].partition(": ")
        if not colon:
            continue
        how = draw(st.sampled_from(["tag", "number", "control"]))
        if how == "tag":
            value = f"{draw(st.sampled_from(TAGS))} {value}"
        elif how == "number":
            value = draw(st.sampled_from(HUGE_NUMBERS)) + "\n"
        else:
            at = draw(st.integers(0, len(value)))
            value = value[:at] + draw(st.sampled_from(CONTROL)) + value[at:]
        lines[index] = f"{key}{colon}{value}"
    return "".join(lines).encode("utf-8", errors="surrogatepass")


@pytest.mark.parametrize("max_examples", example_counts(40, 300))
def test_hostile_values_are_refused_with_positions_never_crash(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(hostile_specs())
    def check(raw: bytes) -> None:
        try:
            build(raw, "spec.yaml")
        except SpecError as error:
            assert error.problems
            assert all(str(p).startswith("spec.yaml:") for p in error.problems)

    check()
