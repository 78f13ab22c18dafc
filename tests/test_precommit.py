"""The repository's pre-commit hooks, run by the real pre-commit framework (`try-repo`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from paddlegen.compiler.artifact import MANIFEST
from paddlegen.compiler.build import build
from paddlegen.compiler.writer import write_tree

from conftest import GOLDEN, GOLDEN_SPECS, ROOT

pytestmark = pytest.mark.conformance
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {**os.environ, "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
            "PRE_COMMIT_COLOR": "never"}


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree as a clean one-commit repository, so that pre-commit installs the hook
    environment once for the module (try-repo makes a fresh commit per call for a dirty tree)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    copy = tmp_path_factory.mktemp("hooks-repo")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-qm", "hooks under test")
    return copy


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's repository: every golden spec with its committed out/ tree (every profile and
    launcher; their k8s files mention /opt/paddlegen/...), a spec built here, one built with
    --kube-version (recorded in its manifest), and an unrelated YAML file."""
    repo = tmp_path / "repo"
    for golden in GOLDEN_SPECS:
        shutil.copytree(golden.parent, repo / "golden" / golden.parent.name)
    (repo / "training").mkdir(parents=True)
    spec = (ROOT / "golden" / "kube-aws" / "spec.yaml").read_bytes()
    (repo / "training" / "spec.yaml").write_bytes(spec)
    for artifact in build(spec, "spec.yaml").artifacts:
        target = repo / "training" / "out" / artifact.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(artifact.text)
    eks = repo / "eks-1.33" / "spec.yaml"
    eks.parent.mkdir()
    shutil.copy(GOLDEN / "eks" / "spec.yaml", eks)
    write_tree(eks.parent / "out", build(eks.read_bytes(), "spec.yaml", "1.33").artifacts)
    (repo / "other.yaml").write_text("not: [a, spec]\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


@pytest.fixture
def try_hooks(hooks_repo: Path, hook_env: dict[str, str],
              user_repo: Path) -> Callable[[], subprocess.CompletedProcess[str]]:
    """Run every hook of the repository under test on all files of the user's repository."""
    def run() -> subprocess.CompletedProcess[str]:
        git(user_repo, "add", "-A")
        return subprocess.run([*PRE_COMMIT, "try-repo", str(hooks_repo), "--all-files"],
                              cwd=user_repo, env=hook_env, capture_output=True, text=True,
                              timeout=900, check=False)
    return run


def hook_result(output: str, name: str) -> str:
    [line] = [line for line in output.splitlines() if line.startswith(name + ".")]
    return line.rsplit(".", 1)[1]


def hook_output(output: str, name: str) -> str:
    """What one hook printed: from its result line to the next hook's."""
    lines = output.splitlines(keepends=True)
    [start] = [index for index, line in enumerate(lines) if line.startswith(name + ".")]
    end = next((index for index in range(start + 1, len(lines))
                if re.match(r"\S.*\.{3,}(Passed|Failed|Skipped)", lines[index])), len(lines))
    return "".join(lines[start + 1:end])


def test_hooks_pass_on_good_specs_and_fail_on_bad_or_drifted_ones(
        user_repo: Path, try_hooks: Callable[[], subprocess.CompletedProcess[str]]) -> None:
    # each try-repo installs paddlegen into a fresh hook environment: so two runs, not four
    clean = try_hooks()
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert hook_result(clean.stdout, "paddlegen validate") == "Passed"
    assert hook_result(clean.stdout, "paddlegen check") == "Passed"

    spec = user_repo / "training" / "spec.yaml"
    (user_repo / "broken").mkdir()
    (user_repo / "broken" / "spec.yaml").write_text(
        spec.read_text().replace("port: 7164", "port: 99999"))
    spec.write_text(spec.read_text().replace("trainerCount: 3", "trainerCount: 4"))
    eks_out = user_repo / "eks-1.33" / "out" / "RUNBOOK.md"
    eks_out.write_text(eks_out.read_text() + "edited by hand\n")
    dirty = try_hooks()
    assert dirty.returncode == 1
    assert hook_result(dirty.stdout, "paddlegen validate") == "Failed"
    assert hook_result(dirty.stdout, "paddlegen check") == "Failed"
    validated, checked = hook_output(dirty.stdout, "paddlegen validate"), \
        hook_output(dirty.stdout, "paddlegen check")
    assert "broken/spec.yaml:31:9: training.port: " in validated
    assert "/out/" not in validated  # no file of an output tree is read as a spec
    assert "training/spec.yaml:" not in validated  # valid, drifted
    assert "+              value: '4'" in checked
    assert ("paddlegen: training/out is not what training/spec.yaml compiles to; to update "
            "it: paddlegen build training/spec.yaml -o training/out\n") in checked
    assert ("paddlegen: eks-1.33/out is not what eks-1.33/spec.yaml compiles to; to update "
            "it: paddlegen build eks-1.33/spec.yaml -o eks-1.33/out --kube-version 1.33\n"
            ) in checked
    # every golden tree is still what its spec compiles to (their specs may warn)
    assert not re.search(r"^(paddlegen: |--- )golden/", checked, re.M)


def test_hooks_see_renamed_trees_an_empty_manifest_and_names_that_look_like_options(
        user_repo: Path, try_hooks: Callable[[], subprocess.CompletedProcess[str]]) -> None:
    # the repository: a tree of another name edited by hand, `touch .paddlegen-manifest`
    # at the root, and specs whose names start with a dash
    spec = user_repo / "training" / "spec.yaml"
    deploy = user_repo / "deploy" / "training"
    write_tree(deploy, build(spec.read_bytes(), "spec.yaml",
                             spec_record="../../training/spec.yaml").artifacts)
    (deploy / "RUNBOOK.md").write_text((deploy / "RUNBOOK.md").read_text() + "edited by hand\n")
    (user_repo / MANIFEST).touch()
    (user_repo / "--help.yaml").write_text(spec.read_text().replace("port: 7164", "port: 99999"))
    (user_repo / "-notes").mkdir()
    (user_repo / "-notes" / "x.yaml").write_text(spec.read_text())
    result = try_hooks()
    assert result.returncode == 1
    assert hook_result(result.stdout, "paddlegen validate") == "Failed"
    assert hook_result(result.stdout, "paddlegen check") == "Failed"
    validated, checked = hook_output(result.stdout, "paddlegen validate"), \
        hook_output(result.stdout, "paddlegen check")
    assert "--help.yaml:31:9: training.port: " in validated  # a file, not an option
    assert "Usage:" not in validated and "No such option" not in validated
    assert ("paddlegen: deploy/training is not what training/spec.yaml compiles to; to update "
            "it: paddlegen build training/spec.yaml -o deploy/training\n") in checked
    assert ("paddlegen: .paddlegen-manifest is not a manifest paddlegen wrote (empty), so it "
            "marks no tree; remove it: rm -- .paddlegen-manifest\n") in checked
    assert not re.search(r"^(paddlegen: |--- )golden/", checked, re.M)
