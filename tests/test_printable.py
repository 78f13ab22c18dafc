"""Every text output shows what a terminal would not show as itself (a control character, a
line break, DEL, a C1 control, a format character) as its escape, and keeps printable text,
non-ASCII too; the data formats (JSON, SARIF) carry the exact values, with nothing raw that a
terminal would act on. The terminal itself: tests/test_terminal.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paddlegen.compiler.explain import shell_words
from paddlegen.compiler.problems import Position, Problem, printable, printable_lines
from paddlegen.compiler.report_formats import as_json, as_sarif, documented_rules

from conftest import GOLDEN, run_cli

HOSTILE = "a\x1b[43D\x1b[K\x1b]0;t\x07\x1b]52;c;eA==\x07\x9b2J\x7f\r\n\t\u202e\x00"
SHOWN = "a\\x1b[43D\\x1b[K\\x1b]0;t\\x07\\x1b]52;c;eA==\\x07\\x9b2J\\x7f\\r\\n\\t\\u202e\\x00"
# What a terminal acts on or does not show: C0 and C1 controls, DEL, bidi overrides
UNSEEN = [chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA0)] + ["\u202e"]


def test_printable_escapes_what_a_terminal_would_not_show() -> None:
    assert printable(HOSTILE) == SHOWN
    assert printable("é 中 \\x1b ok") == "é 中 \\x1b ok"  # printable text as it is
    # lone surrogates: a file name's bytes that are not UTF-8, or nothing
    assert (printable("\udcff\x1b"), printable("\ud800")) == ("\\xff\\x1b", "\\ud800")
    assert all(c.isprintable() for c in printable("".join(UNSEEN)))
    assert printable(printable(HOSTILE)) == printable(HOSTILE)


def test_printable_lines_keeps_the_line_breaks_alone() -> None:
    assert printable_lines("- a\x1b[2J\n+ b\r\n") == "- a\\x1b[2J\n+ b\\r\n"


def test_shell_words_quote_unprintable_words_as_ansi_c() -> None:
    assert shell_words(["a b", "$x", "--k=\x1b[K'\\é\x9b\U000e0001"]) == (
        "'a b' '$x' $'--k=\\x1b[K\\'\\\\é\\u009b\\U000e0001'")


def test_problem_lines_and_workflow_commands_are_printable_json_and_sarif_exact() -> None:
    problem = Problem(Position(f"dir{HOSTILE}.yaml", 3, 7), f"training.{HOSTILE}", "unknown-key",
                      f"message {HOSTILE}")
    line = str(problem)
    assert line == f"dir{SHOWN}.yaml:3:7: training.{SHOWN}: message {SHOWN} [unknown-key]"
    [data] = json.loads(as_json([problem]))
    assert (data["file"], data["path"], data["message"]) == (
        problem.position.file, problem.path, problem.message)
    sarif = as_sarif([problem], documented_rules(), "0.0.0", "/")
    assert all(c not in sarif for c in UNSEEN if c != "\n")
    [result] = json.loads(sarif)["runs"][0]["results"]
    assert result["message"]["text"] == f"training.{HOSTILE}: message {HOSTILE}"


def hostile_spec(tmp_path: Path) -> Path:
    spec = (GOLDEN / "kubernetes" / "spec.yaml").read_text().replace(
        "args: [--out, /mnt/shared/linear/output]", f"args: {json.dumps([HOSTILE[:-1]])}")
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    return path


def test_explain_text_is_printable_and_its_json_exact(tmp_path: Path) -> None:
    spec = hostile_spec(tmp_path)
    text = run_cli("explain", spec)
    assert text.returncode == 0 and all(c not in text.stdout for c in UNSEEN if c != "\n")
    assert text.stdout.endswith(" /workspace/train_linear.py $'a\\x1b[43D\\x1b[K\\x1b]0;t\\x07"
                                "\\x1b]52;c;eA==\\x07\\u009b2J\\x7f\\x0d\\x0a\\x09\\u202e'\n")
    data = run_cli("explain", "--format", "json", spec)
    assert data.stdout.isascii()
    assert json.loads(data.stdout)["processes"][0]["trainer"]["argv"][-1] == HOSTILE[:-1]


@pytest.mark.parametrize("args", [
    ["validate", "--x\x1b]0;t\x07"],
    ["explain", "--format", "\x1b]0;t\x07", "spec.yaml"],
    ["build", "--kube-version", "\x1b]0;t\x07", "spec.yaml"],
    ["bo\x1b]0;t\x07gus"],
    ["init", "--profile", "\x1b]0;t\x07"],
    ["validate", "no\x1b]0;t\x07\x9b.yaml"],
    ["explain", "no\x1b[2J.yaml"],
])
def test_messages_about_what_was_given_are_printable(args: list[str], tmp_path: Path) -> None:
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert all(c not in result.stdout + result.stderr for c in UNSEEN if c != "\n")
    assert "\\x1b" in result.stderr


def test_a_drift_diff_of_a_file_anyone_can_edit_is_printable(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text((GOLDEN / "kubernetes" / "spec.yaml").read_text())
    assert run_cli("build", spec).returncode == 0
    kustomization = tmp_path / "out" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "# \x1b]0;t\x07\x1b[2J\n")
    for output in ("text", "json"):
        result = run_cli("check", "--format", output, spec, cwd=tmp_path)
        assert result.returncode == 1
        assert "\\x1b]0;t\\x07\\x1b[2J" in result.stdout + result.stderr
        assert "\x1b" not in result.stdout + result.stderr
