"""Every golden spec compiles to its committed tree, byte for byte (a check of every golden of
tests/profile_harness.py: every profile has one, tests/test_profiles_harness.py).

Regenerate after an intended change with:  pytest tests/test_golden.py --update-golden
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from paddlegen.compiler.build import build

from conftest import GOLDEN_SPECS, run_cli, tree


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_golden_tree_is_what_the_spec_compiles_to(spec: Path, update_golden: bool) -> None:
    expected_dir = spec.parent / "out"
    result = build(spec.read_bytes(), "spec.yaml", spec_record="../spec.yaml")
    produced = {a.path: a.text.encode() for a in result.artifacts}
    executable = sorted(a.path for a in result.artifacts if a.executable)
    if update_golden:
        shutil.rmtree(expected_dir, ignore_errors=True)
        for path, content in produced.items():
            (expected_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (expected_dir / path).write_bytes(content)
        for path in executable:
            (expected_dir / path).chmod(0o755)
    assert tree(expected_dir) == produced
    # git keeps the execute bit: run.sh runs as `./run.sh` from a checkout
    assert sorted(path for path in produced
                  if os.access(expected_dir / path, os.X_OK)) == executable


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_check_reports_no_drift_on_the_committed_tree(spec: Path) -> None:
    result = run_cli("build", "--check", spec, "-o", spec.parent / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
