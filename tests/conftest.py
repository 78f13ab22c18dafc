"""Shared fixtures and helpers: the repository's paths, the installed CLI, the golden-update flag,
the hypothesis profile, and what several test files read or run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
GOLDEN_SPECS = sorted(GOLDEN.glob("*/spec.yaml"))
# The installed `paddlegen`, as a command line (the console script is tested on its own).
PADDLEGEN = (sys.executable, "-m", "paddlegen.compiler")
SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)

# Here, not in strategies.py, so that every test gets it whichever files run and in what order.
settings.register_profile("paddlegen", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("paddlegen")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="Rewrite golden/*/out from golden/*/spec.yaml instead of comparing.")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def run_cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `paddlegen` in a child process, as a user would."""
    return subprocess.run(
        [*PADDLEGEN, *map(str, args)],
        cwd=cwd, env={**os.environ, **(env or {})}, input=stdin.decode() if stdin else None,
        capture_output=True, text=True, timeout=60, check=False,
    )


def kubectl_or_skip() -> str:
    """kubectl's path; the calling test is skipped where it is not installed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    return kubectl


def sh_blocks(markdown: str) -> list[str]:
    """The text of each ```sh block of a markdown document, in order."""
    return SH_BLOCK.findall(markdown)


def tree(directory: Path) -> dict[str, bytes]:
    """Every file below directory, by its relative POSIX path, with its bytes."""
    return {path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file()}


@pytest.fixture
def kube_aws_spec() -> Path:
    return GOLDEN / "kube-aws" / "spec.yaml"
