"""The training image's Dockerfile in every runbook that has one, read by a real Dockerfile parser
(dockerfile-parse): every instruction one Docker knows, FROM naming one image, the GPU build of
PaddlePaddle exactly for a GPU run, AWS's EFA software exactly where the pods get EFA. The goldens'
runbooks, and builds of a CPU, a GPU and a GPU+EFA variant of the eks-paddle golden."""

from __future__ import annotations

import io
import re

import pytest
from dockerfile_parse import DockerfileParser

from paddlegen.compiler.build import Build, build
from paddlegen.compiler.collective import CollectiveTraining
from paddlegen.profiles import eks

from conftest import GOLDEN
from profile_harness import built, golden_names, spec_of

DOCKERFILE_BLOCK = re.compile(r"```dockerfile\n(.*?)```", re.S)
# Docker's instructions (docs.docker.com/reference/dockerfile, "Overview"); COMMENT is how
# dockerfile-parse gives a comment line.
INSTRUCTIONS = {"ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
                "LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME",
                "WORKDIR", "COMMENT"}
# The eks-paddle golden (2 g5.xlarge, one GPU each) with one edit each.
VARIANTS = {
    "cpu": [("workerInstanceType: g5.xlarge", "workerInstanceType: m5.xlarge"),
            ("gpusPerNode: 1", "gpusPerNode: 0")],
    "gpu": [],
    "gpu-efa": [("workerInstanceType: g5.xlarge", "workerInstanceType: p4d.24xlarge\n  efa: true"),
                ("gpusPerNode: 1", "gpusPerNode: 8")],
}


def variant(name: str) -> Build:
    text = spec_of("eks-paddle").read_text()
    for old, new in VARIANTS[name]:
        assert old in text, (name, old)
        text = text.replace(old, new)
    return build(text.encode(), "spec.yaml")


def runbook_of(result: Build) -> str:
    return next(a.text for a in result.artifacts if a.path == "RUNBOOK.md")


def dockerfiles(markdown: str) -> list[str]:
    return DOCKERFILE_BLOCK.findall(markdown)


def parsed(dockerfile: str) -> list[tuple[str, str]]:
    """dockerfile-parse's instructions of a Dockerfile (comments among them), each with its
    value."""
    parser = DockerfileParser(fileobj=io.StringIO(dockerfile))
    return [(i["instruction"], i["value"]) for i in parser.structure]


def problems(dockerfile: str, gpus: int, efa: bool) -> list[str]:
    """What is wrong with a runbook's Dockerfile for a run with `gpus` per pod and EFA or not."""
    found = []
    instructions = parsed(dockerfile)
    unknown = {instruction for instruction, _ in instructions} - INSTRUCTIONS
    if unknown:
        found.append(f"unknown instructions {sorted(unknown)}")
    froms = [value.split() for instruction, value in instructions if instruction == "FROM"]
    for words in froms:
        # one image, or `image AS name`
        if not (len(words) == 1 or (len(words) == 3 and words[1].upper() == "AS")):
            found.append(f"FROM takes one image, not {words}")
    bases = [words[0] for words in froms]
    expected = eks.PADDLE_GPU_IMAGE if gpus else eks.PADDLE_CPU_IMAGE
    if bases[-1:] != [expected]:
        found.append(f"the base is {bases}, not {expected}")
    runs = " ".join(value for instruction, value in instructions if instruction == "RUN")
    installs = "./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify" in runs
    verified = f"VALIDSIG .*{eks.EFA_INSTALLER_KEY}" in runs and eks.EFA_INSTALLER in runs
    if installs != efa or verified != efa:
        found.append(f"EFA's installer (run {installs}, verified {verified}), EFA {efa}")
    return found


def gpus_and_efa(result: Build) -> tuple[int, bool]:
    training = result.plan.training
    assert isinstance(training, CollectiveTraining)
    efa = any(name == eks.EFA_RESOURCE for name, _ in training.device_limits)
    return training.gpus_per_node, efa


CASES = ([pytest.param(lambda g=golden: built(g), id=golden) for golden in golden_names()
          if dockerfiles((GOLDEN / golden / "out" / "RUNBOOK.md").read_text())]
         + [pytest.param(lambda v=name: variant(v), id=f"variant-{name}") for name in VARIANTS])


@pytest.mark.parametrize("result_of", CASES)
def test_each_runbook_dockerfile_parses_and_fits_its_run(result_of: object) -> None:
    assert callable(result_of)
    result: Build = result_of()
    [dockerfile] = dockerfiles(runbook_of(result))
    gpus, efa = gpus_and_efa(result)
    assert problems(dockerfile, gpus, efa) == []


def test_the_goldens_and_variants_cover_cpu_gpu_and_efa() -> None:
    seen = {gpus_and_efa(variant(name)) for name in VARIANTS}
    assert seen == {(0, False), (1, False), (8, True)}
    # every PaddlePaddle 3 golden on EKS has its Dockerfile in its runbook
    for golden in golden_names():
        result = built(golden)
        if result.profile.name == "eks" and isinstance(result.plan.training, CollectiveTraining):
            assert len(dockerfiles(runbook_of(result))) == 1, golden


def test_the_checker_rejects_a_comment_after_from_and_the_cpu_base_of_a_gpu_run() -> None:
    """The Dockerfile the runbook had: Docker takes `#` for a comment only at a line's start, so
    FROM got four more arguments, and its base was the CPU build for a GPU run."""
    old = "FROM paddlepaddle/paddle:3.3.1   # for GPUs: the 3.3.1 GPU tag of your CUDA release\n" \
          "COPY . /workspace\n"
    found = problems(old, gpus=1, efa=False)
    assert any(p.startswith("FROM takes one image") for p in found)
    assert any(p.startswith("the base is") for p in found)
    assert problems("FROM paddlepaddle/paddle:3.3.1 AS base\nCOPY . /w\n", 0, False) == []
    assert problems("FROM paddlepaddle/paddle:3.3.1\nCOPIE . /w\n", 0, False) == [
        "unknown instructions ['COPIE']"]


def test_a_gpu_image_is_checked_before_the_cluster_and_on_a_node_after_it() -> None:
    runbook = runbook_of(variant("gpu"))
    image = runbook.index("`image`: the training image, before any node is paid for")
    cluster = runbook.index("eksctl create cluster")
    cuda = "docker run --rm 123456789012.dkr.ecr.us-west-2.amazonaws.com/paddle-linear:1.0 " \
           "python -c 'import paddle; assert paddle.is_compiled_with_cuda()'"
    assert image < runbook.index(cuda) < runbook.index("docker push") < cluster
    node = runbook.index("kubectl --namespace=default get pod linear-cuda-check -o jsonpath")
    assert cluster < node < runbook.index("`storage`: the file system")
    assert "nvidia.com/gpu: '1'" in runbook[cluster:node]
    assert "paddle.device.cuda.device_count()" in runbook[cluster:node]
    # bounded, ended at once by a failed check, and the pod goes whether it passed or not
    assert "deadline=$((SECONDS + 1200))" in runbook[cluster:node]
    assert '[ "$PHASE" = Failed ]' in runbook[node:]
    assert runbook[node:].count("delete pod linear-cuda-check") == 2
    assert "delete pod linear-cuda-check --ignore-not-found" in runbook[cluster:node]
    cpu = runbook_of(variant("cpu"))
    assert "is_compiled_with_cuda" not in cpu and "cuda-check" not in cpu


def test_an_efa_image_proves_its_plugin_and_the_runbook_names_nccls_lines() -> None:
    result = variant("gpu-efa")
    runbook = runbook_of(result)
    assert "sh -c 'ldconfig -p | grep -qF libnccl-net.so'" in runbook
    for line in ("NET/OFI Selected provider is efa,", "NCCL INFO Using network Libfabric",
                 "NCCL INFO Using network Socket"):
        assert line in runbook, line
    training = result.plan.training
    assert isinstance(training, CollectiveTraining)
    assert ("NCCL_DEBUG", "INFO") in training.device_env
    plain = runbook_of(variant("gpu"))
    assert "libnccl-net" not in plain and "Using network" not in plain
