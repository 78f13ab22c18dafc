"""README's commands, as a new user runs them: the set-up, CI, every command of "Use", and the
first ten minutes from `paddlegen init` to a built tree."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from conftest import GOLDEN, ROOT, run_cli, sh_blocks, tree
from profile_harness import profile_names

README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command_and_times_each_part() -> None:
    test_command = next(block for block in sh_blocks(README) if "pytest" in block).strip()
    readme_parts = [part.strip() for part in test_command.split(" && ")]
    ci_lines = [line.removeprefix("time ")
                for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line and not line.startswith(("#", "set ", "cd ", "rm "))]
    ci_parts = [part.strip() for line in ci_lines for part in line.split(" && ")]
    assert ci_parts == readme_parts
    assert sum(line.startswith("time ") for line in
               (ROOT / ".ci" / "run").read_text().splitlines()) == 4


def use_commands() -> list[list[str]]:
    """Each `paddlegen ...` of the Use section, as argv, without comments and redirections."""
    use = sh_blocks(README[README.index("## Use"):])
    assert use
    commands = []
    for line in use[0].splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["paddlegen"]:
            for end in ("|", ">"):
                words = words[:words.index(end)] if end in words else words
            commands.append(words[1:])
    return commands


@pytest.mark.parametrize("words", use_commands(), ids=lambda words: " ".join(words))
def test_every_use_command_is_a_real_subcommand_with_real_options(words: list[str]) -> None:
    subcommand = [] if words[0].startswith("-") else [words[0]]
    help_text = run_cli(*subcommand, "--help").stdout
    for option in (w for w in words if w.startswith("-") and w != "-"):
        assert re.search(rf"(^|[\s,]){re.escape(option)}\b", help_text), (option, words)


def test_the_first_ten_minutes(tmp_path: Path) -> None:
    """init, the schema its modeline names, a refusal naming each placeholder, then a tree."""
    starter = run_cli("init", "--profile", "kube-aws")
    assert starter.returncode == 0
    spec = tmp_path / "spec.yaml"
    spec.write_text(starter.stdout)
    schema = run_cli("schema")
    modeline = re.match(r"# yaml-language-server: \$schema=(\S+)\n", starter.stdout)
    assert modeline
    (tmp_path / modeline[1]).write_text(schema.stdout)  # README: paddlegen schema > that file

    refused = run_cli("validate", spec)
    placeholders = re.findall(r"^\s*(\w+): \"?<", starter.stdout, re.M)
    assert refused.returncode == 2
    lines = [line for line in refused.stderr.splitlines() if "[pending]" not in line]
    assert len(lines) == len(placeholders) == 5
    assert all(re.match(rf"{re.escape(str(spec))}:\d+:\d+: [\w.]+: still a placeholder: put .+ "
                        r"here \[placeholder\]$", line) for line in lines)

    golden = dict(re.findall(r"^\s*(\w+): (.+)$", (GOLDEN / "kube-aws" / "spec.yaml").read_text(),
                             re.M))
    filled = re.sub(r"^(\s*(\w+): )\"?<[^\n]*>\"?(.*)$",
                    lambda m: f"{m[1]}{golden[m[2]]}", starter.stdout, flags=re.M)
    spec.write_text(filled)
    valid = run_cli("validate", spec)
    assert valid.returncode == 0, valid.stderr
    *pending, summary = valid.stderr.splitlines()
    assert summary == "paddlegen: 1 spec valid"
    assert [re.findall(r"warning: (\S+): not set yet: RUNBOOK.md step 2 makes", line)
            for line in pending] == [["storage.efs.dnsName"], ["cluster.kmsKeyArn"]]
    assert run_cli("build", spec, "-o", tmp_path / "out").returncode == 0
    first = tree(tmp_path / "out")  # the runbook's steps 0 to 3 make the two values
    assert sorted(first) == [".paddlegen-manifest", "RUNBOOK.md", "aws/efs.cfn.yaml",
                             "kustomization.yaml"]
    assert b"## 3. The two values only AWS knows" in first["RUNBOOK.md"]
    assert b"## 4." not in first["RUNBOOK.md"]
    checked = run_cli("check", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout == ""
    assert checked.stderr.endswith("paddlegen: 1 tree up to date with its spec\n")

    efs_dns = re.search(r"dnsName: (\S+)", (GOLDEN / "kube-aws" / "spec.yaml").read_text())
    assert efs_dns
    spec.write_text(filled.replace("  # kmsKeyArn:", f"  kmsKeyArn: {golden['kmsKeyArn']} #")
                    + f"storage:\n  efs:\n    dnsName: {efs_dns[1]}\n")
    assert run_cli("build", spec, "-o", tmp_path / "out").returncode == 0
    assert sorted(tree(tmp_path / "out")) == sorted(tree(GOLDEN / "kube-aws" / "out"))


def test_check_with_nothing_to_check_says_so(tmp_path: Path) -> None:
    result = run_cli("check", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert "no spec with an out/ beside it" in result.stderr


def test_usage_lines_read_like_other_clis() -> None:
    usages = {command: run_cli(command, "--help").stdout.splitlines()[0]
              for command in ("build", "validate", "check", "explain")}
    assert usages == {"build": "Usage: paddlegen build [OPTIONS] SPEC",
                      "validate": "Usage: paddlegen validate [OPTIONS] SPEC...",
                      "check": "Usage: paddlegen check [OPTIONS] [SPEC]...",
                      "explain": "Usage: paddlegen explain [OPTIONS] SPEC"}


# The one use users see: `seed`, a value of training.launcher, always named as such.
LAUNCHER_VALUE = re.compile(r"\bseed(?= launcher| \(the image's|: the image's|\")")


def test_no_user_facing_text_speaks_of_seeds() -> None:
    """The word belongs to the project's history; users never see it defined (but as the
    launcher value)."""
    texts = [run_cli("schema").stdout, run_cli("rules").stdout,
             run_cli("explain", GOLDEN / "kube-aws" / "spec.yaml").stdout,
             *(run_cli("init", "--profile", p).stdout for p in profile_names()),
             *(p.read_text() for p in GOLDEN.glob("*/out/RUNBOOK.md"))]
    assert [text for text in texts
            if re.search(r"\bseeds?\b", LAUNCHER_VALUE.sub("", text), re.I)] == []


def test_readme_names_no_missing_file() -> None:
    named = set(re.findall(r"`((?:golden|schema|docs|tests|compiler|profiles)/[\w./-]+)`", README))
    assert named and {path for path in named if not (ROOT / path).exists()} == set()


def test_explain_keeps_a_space_between_each_label_and_its_value() -> None:
    text = run_cli("explain", GOLDEN / "kube-aws" / "spec.yaml").stdout
    rows = [line for line in text.splitlines() if line.startswith("  ") and "  " in line[2:]]
    assert "  trainers wait for   /home/jobpath/" in text
    assert all(re.match(r"  \S.{0,18}?\s{2,}\S", row) for row in rows[:10])


def test_the_bundled_example_command_runs(tmp_path: Path) -> None:
    example = next(block for block in sh_blocks(README) if "paddlegen build" in block).strip()
    command = shlex.split(example.split(" && ")[-1])
    assert command[:2] == [".venv/bin/paddlegen", "build"] and command[-2:] == ["-o", "out/"]
    result = run_cli(*command[1:-1], tmp_path / "out", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "aws" / "eksctl-cluster.yaml").is_file()  # eks, today's path


def test_readmes_example_problems_come_in_one_report(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text((GOLDEN / "kube-aws" / "spec.yaml").read_text()
                    .replace("port: 7164", "port: 65534").replace("portsNum: 2", "portsNumm: 2"))
    result = run_cli("validate", spec)
    assert result.returncode == 2
    shown = re.findall(r"^spec\.yaml:\d+:\d+: .+$", README, re.M)[:2]
    assert [line.replace(f"{spec}:", "spec.yaml:", 1) for line in result.stderr.splitlines()] \
        == shown
