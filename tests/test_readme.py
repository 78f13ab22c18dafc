"""README's commands, as a new user runs them: the set-up, CI, the first screen from install to
`./run.sh`, every `paddlegen` command of the README and of docs/*.md, and the first ten minutes
from `paddlegen init` to a built tree."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import GOLDEN, ROOT, run_cli, sh_blocks, tree
from profile_harness import goldens_of, module_path, profile_names, spec_values

README = (ROOT / "README.md").read_text()
# The reference the README links to: docs/*.md, each read where a test needs its commands.
DOCS = sorted((ROOT / "docs").glob("*.md"))
# What a newcomer reads without scrolling, and how long the whole README may grow.
FIRST_SCREEN = 50
MAX_README_LINES = 250


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


def documents() -> dict[str, str]:
    """README.md and every docs/*.md, by their path in the repository."""
    return {"README.md": README,
            **{doc.relative_to(ROOT).as_posix(): doc.read_text() for doc in DOCS}}


def use_commands() -> list[list[str]]:
    """Each `paddlegen ...` line of a sh block of README.md or docs/*.md, as argv, without
    comments and redirections."""
    commands = []
    for text in documents().values():
        for block in sh_blocks(text):
            for line in block.replace("\\\n", " ").splitlines():
                if not line.startswith("paddlegen "):
                    continue
                words = shlex.split(line, comments=True)
                if words[:1] == ["paddlegen"]:
                    for end in ("|", ">", "&&"):
                        words = words[:words.index(end)] if end in words else words
                    commands.append(words[1:])
    assert commands
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
    assert result.stderr == "paddlegen: no output tree below the current directory\n"


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


# Pages that cite files of other projects by their paths there (argo-cd's docs/, ...).
CITES_OTHER_PROJECTS = {"docs/gitops.md", "docs/ci.md"}


def test_readme_names_no_missing_file() -> None:
    texts = [text for name, text in documents().items() if name not in CITES_OTHER_PROJECTS]
    named = {path for text in texts for path in re.findall(
        r"`((?:golden|schema|docs|tests|compiler|profiles|examples|benchmarks|scripts)/[\w./-]+)`",
        text) if "<" not in path}
    assert named and {path for path in named if not (ROOT / path).exists()} == set()


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, no punctuation but - and _,
    spaces as -."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", markdown, re.M)}


def test_every_link_of_the_readme_and_docs_leads_to_a_file_and_heading() -> None:
    """Relative links only, [text](path) and [text](path#anchor), from the file that holds them."""
    links = {(name, target, anchor) for name, text in documents().items()
             for target, anchor in re.findall(r"\]\(([^)#\s]+)(?:#([\w-]+))?\)", text)
             if not re.match(r"[a-z]+:", target)}
    assert links
    assert sorted((name, target) for name, target, _ in links
                  if not ((ROOT / name).parent / target).exists()) == []
    assert sorted((name, target, anchor) for name, target, anchor in links if anchor and
                  anchor not in anchors(((ROOT / name).parent / target).read_text())) == []


def test_readme_fits_and_its_first_screen_goes_from_install_to_the_runbook() -> None:
    lines = README.splitlines()
    assert len(lines) <= MAX_README_LINES
    first = "\n".join(lines[:FIRST_SCREEN])
    assert ".venv/bin/pip install" in first
    for step in (r"paddlegen init\b", r"paddlegen validate spec\.yaml\s",
                 r"paddlegen build spec\.yaml\s", r"\./run\.sh\s+#", r"\./run\.sh setup\s"):
        assert re.search(step, first), step
    assert "\n## Test\n" in README and "## Documentation" in README


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
    shown = re.findall(r"^spec\.yaml:\d+:\d+: .+$", (ROOT / "docs" / "usage.md").read_text(),
                       re.M)[:2]
    assert [line.replace(f"{spec}:", "spec.yaml:", 1) for line in result.stderr.splitlines()] \
        == shown


# The README's table of run.sh phases: a row per profile whose runbook comes in phases.
PHASE_TABLE = "| profile | `./run.sh` phases, in order |\n| --- | --- |\n"
RUN_SH_PHASE = re.compile(r"^  ([a-z][a-z-]*)\) phase_", re.M)


def readme_phases() -> dict[str, list[str]]:
    """Each row of the README's phase table: the profile and its phases, in order."""
    rows = README[README.index(PHASE_TABLE) + len(PHASE_TABLE):].split("\n\n")[0].splitlines()
    return {re.findall(r"`([\w-]+)`", row)[0]: re.findall(r"`([\w-]+)`", row)[1:]
            for row in rows}


def is_subsequence(part: list[str], whole: list[str]) -> bool:
    remaining = iter(whole)
    return all(item in remaining for item in part)


def test_readme_names_every_phase_of_each_runbook_in_order() -> None:
    """The README's phases are every one the profile can make, in its order; each golden's run.sh
    runs some of them, in the same order."""
    phases = readme_phases()
    assert sorted(phases) == ["eks", "kubernetes"]
    for profile, listed in phases.items():
        # a profile's Phase(...) list, in order; rb.train_phase(...) is the train phase's
        source = module_path(profile).read_text()
        made = re.findall(r'\bPhase\("([a-z-]+)"|\b(train)_phase\(', source)
        assert listed == ["".join(names) for names in made]
        for golden in goldens_of(profile):
            script = (GOLDEN / golden / "out" / "run.sh").read_text()
            assert is_subsequence(RUN_SH_PHASE.findall(script), listed), golden


def test_the_first_screen_runs(tmp_path: Path) -> None:
    """The README's path for eks: init, validate naming each placeholder, build with no -o into
    out/ beside the spec, and run.sh listing its phases in the README's order."""
    starter = run_cli("init")
    assert starter.returncode == 0
    spec = tmp_path / "spec.yaml"
    spec.write_text(starter.stdout)
    refused = run_cli("validate", "spec.yaml", cwd=tmp_path)
    placeholders = [line for line in refused.stderr.splitlines() if "[placeholder]" in line]
    assert refused.returncode == 2 and len(placeholders) == 6

    values = spec_values("eks-paddle")
    filled = {"region": values["cluster"]["region"], "accountId": values["cluster"]["accountId"],
              "image": values["training"]["image"], "script": values["training"]["script"]}
    text = re.sub(r"^(\s*(\w+): )\"?<[^\n]*>\"?", lambda m: f"{m[1]}\"{filled[m[2]]}\"",
                  starter.stdout, flags=re.M)
    zones = iter(values["cluster"]["availabilityZones"])
    spec.write_text(re.sub(r"^(\s*- )<[^\n]*>", lambda m: f"{m[1]}{next(zones)}", text,
                           flags=re.M))
    valid = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert valid.returncode == 0, valid.stderr
    built = run_cli("build", "spec.yaml", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    run_sh = tmp_path / "out" / "run.sh"
    assert (tmp_path / "out" / "RUNBOOK.md").is_file() and os.access(run_sh, os.X_OK)

    listing = subprocess.run(["bash", run_sh], capture_output=True, text=True, timeout=60,
                             check=False)
    assert listing.returncode == 0, listing.stderr
    listed = re.findall(r"^  ([a-z][a-z-]*)  ", listing.stdout, re.M)
    assert listed and is_subsequence(listed, readme_phases()["eks"])
    assert "bills:" in listing.stdout
