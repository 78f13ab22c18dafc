"""Shared fixtures: the repository's paths, the installed CLI, and the golden-update flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
GOLDEN_SPECS = sorted(GOLDEN.glob("*/spec.yaml"))


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
        [sys.executable, "-m", "paddlegen.compiler", *map(str, args)],
        cwd=cwd, env={**os.environ, **(env or {})}, input=stdin.decode() if stdin else None,
        capture_output=True, text=True, timeout=60, check=False,
    )


@pytest.fixture
def kube_aws_spec() -> Path:
    return GOLDEN / "kube-aws" / "spec.yaml"
