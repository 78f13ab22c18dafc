"""The repository's pre-commit hooks, run by the real pre-commit framework (`try-repo`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from paddlegen.compiler.build import build

from conftest import ROOT

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
    """A user's repository: a spec with its committed out/ tree and an unrelated YAML file."""
    repo = tmp_path / "repo"
    (repo / "training").mkdir(parents=True)
    spec = (ROOT / "golden" / "kube-aws" / "spec.yaml").read_bytes()
    (repo / "training" / "spec.yaml").write_bytes(spec)
    for artifact in build(spec, "spec.yaml").artifacts:
        target = repo / "training" / "out" / artifact.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(artifact.text)
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
    dirty = try_hooks()
    assert dirty.returncode == 1
    assert hook_result(dirty.stdout, "paddlegen validate") == "Failed"
    assert hook_result(dirty.stdout, "paddlegen check") == "Failed"
    assert "broken/spec.yaml:31:9: training.port: " in dirty.stdout
    assert "training/spec.yaml:" not in dirty.stdout.split("paddlegen check")[0]  # valid, drifted
    assert "+              value: '4'" in dirty.stdout
