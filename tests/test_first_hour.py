"""What a user meets in the first hour: which files are specs (for the hooks and `check`), a build
option remembered where `check` finds it, and messages that say what happened and how to fix it.

In-process (typer's runner): the process itself is tested in test_cli.py and test_precommit.py.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from paddlegen.compiler import cli
from paddlegen.compiler.artifact import MANIFEST
from paddlegen.compiler.build import build, manifest_text
from paddlegen.compiler.cli import app, build_command, is_spec
from paddlegen.compiler.ownership import discover_trees
from paddlegen.compiler.writer import (
    Changes,
    RecordedOptionError,
    kube_version_of,
    recorded_kube_version,
    write_tree,
)

from conftest import GOLDEN, GOLDEN_SPECS, ROOT
from profile_harness import goldens_of

EKS = GOLDEN / "eks" / "spec.yaml"  # a profile that lets --kube-version choose: 1.33-1.35
SPEC = b"apiVersion: paddlegen/v1\nkind: TrainingJob\n"


def run(*args: str | Path) -> Result:
    """The command, in this process; one line per message, never a traceback."""
    result = CliRunner().invoke(app, [str(arg) for arg in args], catch_exceptions=False)
    assert "Traceback" not in result.stderr
    return result


# --- which files are specs -------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    SPEC,
    b"# a comment\n---\napiVersion: paddlegen/v2beta1  # any version\nkind: TrainingJob\n",
    b"'apiVersion': \"paddlegen/v1\"\n\"kind\": 'TrainingJob'\n",  # quoted
    b"kind: TrainingJob\nmetadata: {name: x}\napiVersion: paddlegen/v1\n",  # any order
    b"apiVersion:\n  paddlegen/v1\nkind: TrainingJob\n",  # the value on the next line
    b"{apiVersion: paddlegen/v1, kind: TrainingJob}\n",  # flow style
    "\ufeffapiVersion: paddlegen/v1\nkind: TrainingJob\n".encode(),  # byte order mark
    SPEC + b"training: {port: [\n",  # broken further down: validate reports it
    SPEC + b"---\nkind: Other\n",  # a second document: validate reports it
], ids=lambda text: repr(text[:60]))
def test_a_spec_is_a_document_whose_top_level_says_so(text: bytes) -> None:
    assert is_spec(text)


@pytest.mark.parametrize("text", [
    b"",
    b"apiVersion: paddlegen/v1\n",  # no kind
    b"apiVersion: paddlegen/v1\nkind: TrainingJobs\n",
    b"apiVersion: batch/v1\nkind: TrainingJob\nimage: paddlegen/trainer\n",
    b"apiVersion: paddlegen\nkind: TrainingJob\n",  # no slash
    # paddlegen's own output: its launcher's mount path holds the word
    b"apiVersion: batch/v1\nkind: Job\nspec:\n  volumeMounts:\n  - mountPath: /opt/paddlegen/x\n",
    # nested under another key
    b"spec:\n  apiVersion: paddlegen/v1\n  kind: TrainingJob\n",
    b"items:\n- apiVersion: paddlegen/v1\n  kind: TrainingJob\n",
    b"- apiVersion: paddlegen/v1\n  kind: TrainingJob\n",  # the root is a sequence
    b"apiVersion: {v: paddlegen/v1}\nkind: TrainingJob\n",
    b"? {apiVersion: paddlegen/v1}\n: 1\nkind: TrainingJob\n",
    b"x: &v paddlegen/v1\napiVersion: *v\nkind: TrainingJob\n",  # an alias is no declaration
    # in comments
    b"# apiVersion: paddlegen/v1\n# kind: TrainingJob\na: 1\n",
    b"a: 1  # apiVersion: paddlegen/v1\nb: 2 # kind: TrainingJob\n",
    # in block scalars, quoted scalars and flow collections, however they are indented
    b"doc: |\n  apiVersion: paddlegen/v1\n  kind: TrainingJob\n",
    b"--- |\napiVersion: paddlegen/v1\nkind: TrainingJob\n",
    b"doc: >-\n apiVersion: paddlegen/v1\n kind: TrainingJob\n",
    b'doc: "x\napiVersion: paddlegen/v1\nkind: TrainingJob"\n',
    b"doc: 'x\napiVersion: paddlegen/v1\nkind: TrainingJob'\n",
    b"doc: [\napiVersion: paddlegen/v1,\nkind: TrainingJob]\n",
    # another document of the stream
    b"a: 1\n---\napiVersion: paddlegen/v1\nkind: TrainingJob\n",
    b"a: 1\n...\napiVersion: paddlegen/v1\nkind: TrainingJob\n",
    # not YAML before the keys, or not UTF-8 / text at all
    b"a: [\napiVersion: paddlegen/v1\nkind: TrainingJob\n",
    b"\tapiVersion: paddlegen/v1\nkind: TrainingJob\n",
    SPEC + b"\xff\xfe",
    b"apiVersion: paddlegen/v1\x00\nkind: TrainingJob\n",
    "apiVersion: paddlegen/v1\nkind: TrainingJob\n".encode("utf-16"),
    b"%YAML 9.9\n---\n" + SPEC,
], ids=lambda text: repr(text[:60]))
def test_nothing_else_is_a_spec(text: bytes) -> None:
    assert not is_spec(text)


def test_only_the_head_of_a_file_is_read() -> None:
    # the keys past the head: not a spec; a character cut by the head's end: still one
    assert not is_spec(b"# padding\n" * (cli.SPEC_HEAD_BYTES // 10) + SPEC)
    assert is_spec(SPEC + b"note: '" + "\u00e9".encode() * cli.SPEC_HEAD_BYTES + b"'\n")
    assert is_spec(SPEC + b"note: x\n" * cli.SPEC_HEAD_BYTES)  # a long spec stops at its keys


def test_every_golden_spec_and_starter_is_a_spec_and_no_output_file_is_one() -> None:
    starters = sorted((ROOT / "profiles" / "starters").glob("*.yaml"))
    assert starters and all(is_spec(path.read_bytes()) for path in [*GOLDEN_SPECS, *starters])
    outputs = [path for spec in GOLDEN_SPECS for path in (spec.parent / "out").rglob("*")
               if path.is_file()]
    assert len(outputs) > 50
    assert [path for path in outputs if is_spec(path.read_bytes())] == []
    # the regression: the kube-aws launcher's Job mounts /opt/paddlegen/...
    assert any(b"paddlegen/" in path.read_bytes() for path in outputs
               if path.suffix == ".yaml")


def built(spec: Path, out: Path, kube_version: str | None = None) -> None:
    write_tree(out, build(spec.read_bytes(), "spec.yaml", kube_version).artifacts)


def test_check_finds_trees_by_their_manifests_not_specs_by_an_out_beside_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = tmp_path / "team"
    team.mkdir()
    shutil.copy(EKS, team / "spec.yaml")
    built(EKS, team / "out")
    # specs with an out/ beside them that no manifest marks: not trees, never looked at
    for inside in (team / "out" / "aws", tmp_path / "archive" / "old"):
        inside.mkdir(parents=True, exist_ok=True)
        (inside / "spec.yaml").write_text("apiVersion: paddlegen/v1\nkind: TrainingJob\n")
        (inside / "out").mkdir()
    found, problems = discover_trees(tmp_path)
    assert found == [team / "out"] and problems == []
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "paddlegen: 1 tree up to date with its spec\n"


def test_validate_for_hooks_skips_the_files_of_a_tree_but_never_a_spec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built(EKS, tmp_path / "out")
    monkeypatch.chdir(tmp_path)
    owned = sorted(str(path.relative_to(tmp_path)) for path in (tmp_path / "out").rglob("*.yaml"))
    skipped = run("validate", "--only-specs", *owned)
    assert skipped.exit_code == 0, skipped.stderr
    assert skipped.stderr == "paddlegen: 0 specs valid (no paddlegen spec among the files)\n"
    copy = tmp_path / "out" / "k8s" / "spec-copy.yaml"  # a spec, broken, where no spec belongs
    copy.write_text("apiVersion: paddlegen/v1\nkind: TrainingJob\nprofile: nope\n")
    hooked = run("validate", "--only-specs", "--", *owned, "out/k8s/spec-copy.yaml")
    assert hooked.exit_code == 2 and "out/k8s/spec-copy.yaml:3:10: profile: " in hooked.stderr


# --- build options remembered ----------------------------------------------------------------

def test_a_kube_version_given_to_build_is_what_check_compares_with(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(EKS, tmp_path / "spec.yaml")
    monkeypatch.chdir(tmp_path)
    assert run("build", "--kube-version", "1.33", "spec.yaml", "-o", "out/").exit_code == 0
    lines = Path("out", MANIFEST).read_text().splitlines()
    assert lines[:4] == ["# Files paddlegen wrote here and may replace or remove; it touches "
                         "no other file.", "# spec: ../spec.yaml", "# kube-version: 1.33",
                         ".paddlegen-manifest"]
    assert recorded_kube_version(Path("out")) == "1.33"
    assert "version: '1.33'" in Path("out", "aws", "eksctl-cluster.yaml").read_text()

    checked = run("check")
    assert (checked.exit_code, checked.stdout) == (0, ""), checked.stderr
    assert run("build", "--check", "spec.yaml", "-o", "out").exit_code == 0
    # given again: the command line wins, and the fix names it
    other = run("build", "--check", "--kube-version", "1.35", "spec.yaml", "-o", "out")
    assert other.exit_code == 1 and "# kube-version: 1.35" in other.stdout
    assert other.stderr.endswith("paddlegen: out is not what spec.yaml compiles to; to update "
                                 "it: paddlegen build spec.yaml -o out --kube-version 1.35\n")
    assert run("check", "--kube-version", "1.35").exit_code == 1

    # the spec changes: check's fix keeps the tree's release
    Path("spec.yaml").write_text(EKS.read_text().replace("trainerCount: 3", "trainerCount: 2"))
    drifted = run("check")
    assert drifted.exit_code == 1
    command = drifted.stderr.splitlines()[-1].split("; to update it: ")[1]
    assert command == "paddlegen build spec.yaml -o out --kube-version 1.33"
    assert run(*shlex.split(command)[1:]).exit_code == 0
    assert run("check").exit_code == 0

    # a build without the option builds for the spec's own release, and records none
    assert run("build", "spec.yaml", "-o", "out").exit_code == 0
    assert "kube-version" not in Path("out", MANIFEST).read_text()
    assert recorded_kube_version(Path("out")) is None
    assert run("check").exit_code == 0


def test_a_tree_built_without_options_has_the_manifest_it_always_had() -> None:
    result = build(EKS.read_bytes(), "spec.yaml")
    [manifest] = [a.text for a in result.artifacts if a.path == MANIFEST]
    assert manifest == manifest_text(sorted(a.path for a in result.artifacts))
    assert [line for line in manifest.splitlines() if line.startswith("#")] == [
        "# Files paddlegen wrote here and may replace or remove; it touches no other file."]
    for spec in GOLDEN_SPECS:
        assert "kube-version" not in (spec.parent / "out" / MANIFEST).read_text()
    with pytest.raises(ValueError):
        manifest_text(["a"], "1.34\nk8s/evil.yaml")


def test_check_builds_each_tree_for_its_own_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    releases = {"a": "1.35", "b": None, "c": "1.33", "d": "1.35"}
    for name, release in releases.items():
        (tmp_path / name).mkdir()
        shutil.copy(EKS, tmp_path / name / "spec.yaml")
        built(EKS, tmp_path / name / "out", release)
    monkeypatch.chdir(tmp_path)
    # (a release past its standard support may be warned about: the last line sums up)
    assert run("check").stderr.splitlines()[-1] == "paddlegen: 4 trees up to date with their specs"
    for name in releases:
        (tmp_path / name / "out" / "RUNBOOK.md").write_text("edited\n")
    drifted = run("check")
    assert drifted.exit_code == 1
    assert [line.rsplit(" -o ", 1)[1] for line in drifted.stderr.splitlines()
            if line.startswith("paddlegen: ")] == [
        "a/out --kube-version 1.35", "b/out", "c/out --kube-version 1.33",
        "d/out --kube-version 1.35"]


@pytest.mark.parametrize(("recorded", "reason"), [
    ("1.x", "'1.x', which is not a Kubernetes release (1.N)"),
    ("1.34; rm -rf ~", "'1.34; rm -rf ~', which is not a Kubernetes release (1.N)"),
    ("", "'', which is not a Kubernetes release (1.N)"),
    ("1.1234", "'1.1234', which is not a Kubernetes release (1.N)"),
    ("\x1b[31m1.34", "'\\x1b[31m1.34', which is not a Kubernetes release (1.N)"),
    ("1." + "9" * 5000, "which is not a Kubernetes release (1.N)"),
    ("1.99", "1.99, a release this paddlegen has no schemas for"),
    ("1.34\n# kube-version: 1.35", "kube-version 2 times; a build records it once"),
], ids=["letters", "command", "empty", "long-minor", "escape", "huge", "unsupported", "twice"])
def test_a_recorded_kube_version_is_untrusted(
        recorded: str, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(EKS, tmp_path / "spec.yaml")
    built(EKS, tmp_path / "out", "1.33")
    manifest = tmp_path / "out" / MANIFEST
    manifest.write_text(manifest.read_text().replace("1.33", recorded, 1))
    monkeypatch.chdir(tmp_path)
    for args in (["check"], ["build", "--check", "spec.yaml", "-o", "out"]):
        result = run(*args)
        assert result.exit_code == 2 and result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith("paddlegen: out/.paddlegen-manifest records kube-version ")
        assert reason in line and len(line) < 400
        assert line.endswith("; to rebuild it: paddlegen build spec.yaml -o out")
    # a release given is used without reading the record (which is drift); a build rewrites it
    given = run("check", "--kube-version", "1.33")
    assert given.exit_code == 1 and given.stderr.endswith("--kube-version 1.33\n")
    assert run("build", "spec.yaml", "-o", "out").exit_code == 0
    assert run("check").exit_code == 0


def test_kube_version_of_reads_only_its_own_line() -> None:
    where = Path("out") / MANIFEST
    assert kube_version_of(["# Files ...", "k8s/x.yaml"], where) is None
    assert kube_version_of(["# kube-version: 1.8", "# kube-version-other: 2"], where) == "1.8"
    assert kube_version_of(["#  kube-version: x", "kube-version: x"], where) is None
    with pytest.raises(RecordedOptionError, match="not a Kubernetes release"):
        kube_version_of(["# kube-version: 1.8 extra"], where)


# --- messages ----------------------------------------------------------------------------------

def test_build_says_what_it_changed_or_that_nothing_did(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(EKS, tmp_path / "spec.yaml")
    monkeypatch.chdir(tmp_path)
    count = len(build(EKS.read_bytes(), "spec.yaml").artifacts)
    first = run("build", "spec.yaml", "-o", "out/")
    assert first.stderr == f"paddlegen: updated out from spec.yaml: {count} new files\n"
    again = run("build", "spec.yaml", "-o", "out/")
    assert (again.exit_code, again.stderr) == (0, "paddlegen: out is up to date with spec.yaml\n")

    Path("spec.yaml").write_text(EKS.read_text().replace("trainerCount: 3", "trainerCount: 2"))
    Path("out", "k8s", "99-old.yaml").write_text("kind: Old\n")  # a file an earlier build wrote
    with Path("out", MANIFEST).open("a") as manifest:
        manifest.write("k8s/99-old.yaml\n")
    Path("out", "RUNBOOK.md").unlink()
    changed = run("build", "spec.yaml", "-o", "out")
    replaced = changed.stderr.splitlines()[-1]
    assert changed.stderr.splitlines()[:-1] == ["removed stale out/k8s/99-old.yaml"]
    assert replaced.startswith("paddlegen: updated out from spec.yaml: 1 new file, ")
    assert replaced.endswith(" files replaced, 1 stale file removed")


def test_write_tree_returns_what_it_changed(tmp_path: Path) -> None:
    artifacts = build(EKS.read_bytes(), "spec.yaml").artifacts
    first = write_tree(tmp_path, artifacts)
    assert first.added == tuple(a.path for a in artifacts) and not first.replaced
    assert not write_tree(tmp_path, artifacts) and write_tree(tmp_path, artifacts) == Changes()


def test_the_drift_message_prints_the_command_that_fixes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "my specs"
    home.mkdir()
    shutil.copy(EKS, home / "spec.yaml")
    built(EKS, home / "out")
    (home / "out" / "RUNBOOK.md").write_text("edited\n")
    monkeypatch.chdir(tmp_path)
    for args in (["check"], ["build", "--check", "my specs/spec.yaml", "-o", "my specs/out"]):
        result = run(*args)
        assert result.exit_code == 1
        assert result.stderr.splitlines()[-1] == (
            "paddlegen: my specs/out is not what my specs/spec.yaml compiles to; to update it: "
            "paddlegen build 'my specs/spec.yaml' -o 'my specs/out'")
    fix = shlex.split(result.stderr.splitlines()[-1].split("; to update it: ")[1])
    assert run(*fix[1:]).exit_code == 0
    assert run("check").exit_code == 0


def test_a_command_is_pasted_as_it_is_printed() -> None:
    assert build_command(Path("spec.yaml"), Path("out"), None) == \
        "paddlegen build spec.yaml -o out"
    assert build_command(Path("-x.yaml"), Path("-out"), "1.34") == \
        "paddlegen build ./-x.yaml -o ./-out --kube-version 1.34"
    assert build_command(Path("it's.yaml"), Path("$(rm -rf ~)"), None) == \
        "paddlegen build 'it'\"'\"'s.yaml' -o '$(rm -rf ~)'"
    assert build_command(Path("-"), Path("out"), None) == "paddlegen build - -o out"
    assert "\n" not in build_command(Path("a\nb.yaml"), Path("out\x1b[2J"), None)


# --- values the runbook makes ---------------------------------------------------------------

@pytest.mark.parametrize("golden", goldens_of("kube-aws"))
def test_a_kube_aws_spec_builds_before_the_runbook_has_made_its_key_and_file_system(
        golden: str) -> None:
    full = (GOLDEN / golden / "spec.yaml").read_text()
    lines = [line for line in full.splitlines(keepends=True)
             if not line.lstrip().startswith(("kmsKeyArn:", "dnsName:", "efs:"))]
    first = build("".join(lines).encode(), "spec.yaml")
    assert [(w.path, w.rule, w.severity) for w in first.warnings] == [
        ("cluster.kmsKeyArn", "pending", "warning"), ("storage.efs.dnsName", "pending", "warning")]
    assert [a.path for a in first.artifacts] == [
        ".paddlegen-manifest", "RUNBOOK.md", "aws/efs.cfn.yaml", "kustomization.yaml"]
    runbook = next(a.text for a in first.artifacts if a.path == "RUNBOOK.md")
    steps = [line for line in runbook.splitlines() if line.startswith("## ")]
    assert [step.split(".")[0] for step in steps] == [
        "## Before you start", "## 0", "## 1", "## 2", "## 3"]
    assert 'echo "cluster.kmsKeyArn: $KMS_KEY_ARN"' in runbook  # printed, not compared
    assert "(`cluster.kmsKeyArn` and `storage.efs.dnsName`)" in runbook
    assert not build(full.encode(), "spec.yaml").warnings
