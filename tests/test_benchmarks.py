"""The benchmark script runs and prints a row for every target (its numbers are not asserted:
timing belongs to benchmarks, not tests)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

ROWS = ["cold `build -o -`", "the same for", "cold `validate`", "floor:", "warm build",
        "warm validate", "`check` of 16 spec+out pairs", "2 cores: wall; speed-up", "serial:",
        "`check` of 4 specs near", "`explain` output at 1,000 nodes", "peak RSS"]
INFORMATION = ("the same for", "floor:", "`check` of 16 spec+out pairs")


@pytest.mark.conformance
@pytest.mark.skipif(shutil.which("taskset") is None,
                    reason="benchmarks/bench.py needs taskset (util-linux)")
def test_the_benchmark_prints_every_row() -> None:
    result = subprocess.run([sys.executable, ROOT / "benchmarks" / "bench.py", "--pairs", "1",
                             "--specs", "8", "--trees", "16", "--runs", "1", "--huge", "4"],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[0] == "what"
    for line in lines[1:]:  # each row but those for information says whether it is met
        assert line.endswith((" yes", " NO")) or line.lstrip().startswith(INFORMATION), line
    assert [row for row in ROWS if not any(line.lstrip().startswith(row) for line in lines)] == []
