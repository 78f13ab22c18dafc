"""`paddlegen --help` as an 80-column terminal shows it: each command's summary a whole sentence
on its own line; and `init --profile` with a name that is no profile, which lists them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

import pytest

from conftest import run_cli, run_cli_process
from profile_harness import profile_names

WIDTH = 80


def command_rows(help_text: str) -> list[str]:
    """The lines of the help's command list."""
    rows = help_text.split("\nCommands:\n", 1)[1].rstrip("\n").splitlines()
    assert rows
    return rows


@pytest.mark.parametrize("run", [run_cli, run_cli_process], ids=["in-process", "process"])
def test_every_command_summary_is_one_whole_sentence_at_80_columns(
        run: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    result = run("--help", env={"COLUMNS": str(WIDTH)})
    assert result.returncode == 0, result.stderr
    rows = command_rows(result.stdout)
    for row in rows:  # no row is a wrapped summary's second line, none is cut short
        assert re.fullmatch(r"  [a-z][a-z-]*  +[A-Z][^\n]*[^.]\.", row), row
        assert "..." not in row and len(row) <= WIDTH, row


def test_the_command_list_is_every_command() -> None:
    rows = command_rows(run_cli("--help", env={"COLUMNS": str(WIDTH)}).stdout)
    listed = [row.split()[0] for row in rows]
    assert {"build", "validate", "check", "explain", "schema", "rules", "init"} <= set(listed)


def test_init_with_no_such_profile_names_every_profile() -> None:
    result = run_cli("init", "--profile", "bogus")
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("paddlegen: no profile 'bogus'; the profiles: ")
    named = lines[0].split("; the profiles: ", 1)[1].split(", ")
    assert named == sorted(profile_names())
