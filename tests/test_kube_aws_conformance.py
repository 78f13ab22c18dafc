"""The real kube-aws of each dialect accepts every cluster.yaml paddlegen writes for it.

The binaries (kube-aws v0.9.1 and v0.9.9, ../shared/tools/kube-aws/) run offline through
kube_aws_tool; the tests skip, saying why, where they are absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from paddlegen.compiler.build import build

from kube_aws_tool import binary, check_cluster_yaml, check_cluster_yamls, missing_reason
from profile_harness import goldens_of, spec_of
from strategies import KUBE_AWS_VERSIONS, dump, kube_aws_specs

pytestmark = pytest.mark.conformance
GENERATED_PER_DIALECT = 50


def needs(version: str) -> None:
    if binary(version) is None:
        pytest.skip(missing_reason(version))


def cluster_yaml(raw: bytes) -> tuple[str, str]:
    """The kube-aws release a spec targets, and the cluster.yaml paddlegen writes for it."""
    result = build(raw, "spec.yaml")
    [text] = [a.text for a in result.artifacts if a.path == "aws/cluster.yaml"]
    return result.plan.cluster.kube_aws_version, text


KUBE_AWS_GOLDENS = [spec_of(golden) for golden in goldens_of("kube-aws")]


def test_there_is_a_golden_for_each_dialect() -> None:
    assert sorted(cluster_yaml(spec.read_bytes())[0] for spec in KUBE_AWS_GOLDENS) == \
        KUBE_AWS_VERSIONS


@pytest.mark.parametrize("spec", KUBE_AWS_GOLDENS, ids=lambda p: p.parent.name)
def test_the_real_kube_aws_accepts_the_golden_cluster_yaml(spec: Path, tmp_path: Path) -> None:
    version, text = cluster_yaml(spec.read_bytes())
    needs(version)
    assert text == (spec.parent / "out" / "aws" / "cluster.yaml").read_text()
    verdict = check_cluster_yaml(version, text, tmp_path)
    assert verdict.accepted, verdict.output


@pytest.mark.parametrize("version", KUBE_AWS_VERSIONS)
def test_the_real_kube_aws_accepts_generated_specs(version: str, tmp_path: Path) -> None:
    needs(version)
    found: dict[str, None] = {}  # distinct cluster.yaml files, in the order generated

    # hypothesis only generates here; the binary then checks the whole batch in threads
    @settings(max_examples=3 * GENERATED_PER_DIALECT, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow])
    @given(kube_aws_specs(version))
    def generate(spec: dict[str, object]) -> None:
        found[cluster_yaml(dump(spec))[1]] = None

    generate()
    texts = list(found)
    assert len(texts) >= GENERATED_PER_DIALECT
    verdicts = check_cluster_yamls(version, texts, tmp_path)
    refused = [(text, verdict.output) for text, verdict in zip(texts, verdicts, strict=True)
               if not verdict.accepted]
    assert refused == [], refused[0]


def test_v0_9_9_refuses_the_v0_9_1_dialect(tmp_path: Path) -> None:
    needs("v0.9.9")
    [v091] = [s for s in KUBE_AWS_GOLDENS if cluster_yaml(s.read_bytes())[0] == "v0.9.1"]
    verdict = check_cluster_yaml("v0.9.9", cluster_yaml(v091.read_bytes())[1], tmp_path)
    assert not verdict.accepted
    assert "unknown keys found: workerCount" in verdict.output


def test_v0_9_1_refuses_a_wrong_type_and_an_unknown_key(tmp_path: Path) -> None:
    needs("v0.9.1")
    [v091] = [s for s in KUBE_AWS_GOLDENS if cluster_yaml(s.read_bytes())[0] == "v0.9.1"]
    text = cluster_yaml(v091.read_bytes())[1]
    wrong_type = check_cluster_yaml("v0.9.1", text.replace("workerCount: 3", "workerCount: abc"),
                                    tmp_path / "type")
    assert not wrong_type.accepted and "cannot unmarshal" in wrong_type.output
    unknown = check_cluster_yaml("v0.9.1", text + "workerNodeCount: 3\n", tmp_path / "key")
    assert not unknown.accepted and "workerNodeCount" in unknown.output
