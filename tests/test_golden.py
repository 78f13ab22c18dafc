"""Every golden spec compiles to its committed tree, byte for byte (a check of every golden of
tests/profile_harness.py: every profile has one, tests/test_profiles_harness.py).

Regenerate after an intended change with:  pytest tests/test_golden.py --update-golden
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from paddlegen.compiler.build import build

from conftest import GOLDEN_SPECS, run_cli, tree


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_golden_tree_is_what_the_spec_compiles_to(spec: Path, update_golden: bool) -> None:
    expected_dir = spec.parent / "out"
    result = build(spec.read_bytes(), "spec.yaml")
    produced = {a.path: a.text.encode() for a in result.artifacts}
    if update_golden:
        shutil.rmtree(expected_dir, ignore_errors=True)
        for path, content in produced.items():
            (expected_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (expected_dir / path).write_bytes(content)
    assert tree(expected_dir) == produced


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_check_reports_no_drift_on_the_committed_tree(spec: Path) -> None:
    result = run_cli("build", "--check", spec, "-o", spec.parent / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
