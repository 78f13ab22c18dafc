"""The command line as users and pipelines meet it: streams, exit codes, errors, the output tree."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.build import build
from paddlegen.compiler.writer import write_tree

from conftest import GOLDEN, GOLDEN_SPECS, PADDLEGEN, ROOT, kubectl_or_skip, run_cli

ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<path>[\w.\[\]]+): .+$")


def edited(spec: Path, tmp_path: Path, old: str, new: str) -> Path:
    text = spec.read_text()
    assert old in text
    path = tmp_path / "spec.yaml"
    path.write_text(text.replace(old, new))
    return path


def test_build_writes_the_design_tree(kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("build", kube_aws_spec, "-o", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {"aws/cluster.yaml", "aws/iam-policy.json", "kustomization.yaml", "RUNBOOK.md",
            ".paddlegen-manifest"} <= files
    assert len([f for f in files if f.startswith("k8s/")]) == 4


def test_console_script_is_installed(kube_aws_spec: Path) -> None:
    script = shutil.which("paddlegen", path=str(Path(sys.executable).parent))
    assert script, "the paddlegen entry point is not installed next to this Python"
    result = subprocess.run([script, "--version"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.startswith("paddlegen ")


def test_stdout_stream_holds_only_kubernetes_objects(kube_aws_spec: Path) -> None:
    result = run_cli("build", kube_aws_spec, "-o", "-")
    assert result.returncode == 0, result.stderr
    documents = list(YAML(typ="safe", pure=True).load_all(result.stdout))
    assert all(set(d) >= {"apiVersion", "kind", "metadata"} for d in documents)
    assert [d["kind"] for d in documents] == ["PersistentVolume", "PersistentVolumeClaim", "Job",
                                              "Job"]


def test_out_of_range_port_fails_with_position_and_writes_nothing(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    spec = edited(kube_aws_spec, tmp_path, "port: 7164", "port: 70000")
    out = tmp_path / "out"
    result = run_cli("build", spec, "-o", out)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    match = ERROR_LINE.match(line)
    assert match, line
    assert (match["file"], match["line"], match["col"], match["path"]) == (
        str(spec), "31", "9", "training.port")
    assert "65535" in line
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_port_range_past_65535_is_caught_by_the_rule(kube_aws_spec: Path, tmp_path: Path) -> None:
    spec = edited(kube_aws_spec, tmp_path, "port: 7164", "port: 65534")
    result = run_cli("build", spec, "-o", "-")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"{spec}:31:9: training.port: ports 65534-65537 run past")


def test_every_problem_is_reported_on_its_own_line(kube_aws_spec: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(kube_aws_spec.read_text()
                    .replace("portsNum: 2", "portsNumm: 2")
                    .replace('accountId: "123456789012"', "accountId: 123456789012")
                    .replace("nodes: 3", "nodes: 0"))
    result = run_cli("validate", spec)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert [match["path"] for line in lines if (match := ERROR_LINE.match(line))] == [
        "cluster.accountId", "training.nodes", "training.portsNumm"]
    assert "did you mean 'portsNum'?" in lines[2]
    assert "write \"123456789012\" in quotes" in lines[0]


def test_invalid_spec_does_not_touch_an_existing_tree(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", kube_aws_spec, "-o", out).returncode == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    spec = edited(kube_aws_spec, tmp_path, "nodes: 3", "nodes: 4")  # workerCount 3 < 4
    result = run_cli("build", spec, "-o", out)
    assert result.returncode == 2
    assert "cluster.workerCount" in result.stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_check_exits_1_with_a_diff_on_drift_and_writes_nothing(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", kube_aws_spec, "-o", out).returncode == 0
    assert run_cli("build", "--check", kube_aws_spec, "-o", out).returncode == 0
    spec = edited(kube_aws_spec, tmp_path, "trainerCount: 3", "trainerCount: 4")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    result = run_cli("build", "--check", spec, "-o", out)
    assert result.returncode == 1
    assert "-              value: '3'\n+              value: '4'\n" in result.stdout
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_check_sees_missing_and_stale_files(kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_cli("build", kube_aws_spec, "-o", out)
    (out / "RUNBOOK.md").unlink()
    result = run_cli("build", "--check", kube_aws_spec, "-o", out)
    assert result.returncode == 1 and "+++ RUNBOOK.md (from spec)" in result.stdout


def test_foreign_files_survive_and_stale_owned_files_go(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "k8s").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    (out / "k8s" / "extra.yaml").write_text("mine too")
    spec = edited(kube_aws_spec, tmp_path, "", "")
    assert run_cli("build", spec, "-o", out).returncode == 0
    renamed = edited(kube_aws_spec, tmp_path, "name: paddle-cluster-job", "name: other-job")
    result = run_cli("build", renamed, "-o", out)
    assert result.returncode == 0, result.stderr
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "k8s" / "extra.yaml").read_text() == "mine too"
    assert not (out / "k8s" / "90-job-paddle-cluster-job.yaml").exists()
    assert (out / "k8s" / "90-job-other-job.yaml").exists()
    assert "removed stale" in result.stderr


def test_a_foreign_file_is_never_overwritten_without_force(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "aws").mkdir(parents=True)
    (out / "aws" / "cluster.yaml").write_text("hand-written")
    result = run_cli("build", kube_aws_spec, "-o", out)
    assert result.returncode == 2
    assert "aws/cluster.yaml" in result.stderr and "--force" in result.stderr
    assert (out / "aws" / "cluster.yaml").read_text() == "hand-written"
    assert sorted(p.name for p in out.rglob("*")) == ["aws", "cluster.yaml"]
    assert run_cli("build", kube_aws_spec, "-o", out, "--force").returncode == 0
    assert (out / "aws" / "cluster.yaml").read_text().startswith("clusterName: paddle-cluster")


@pytest.mark.conformance
@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_kubectl_kustomize_renders_the_tree(spec: Path) -> None:
    kubectl = kubectl_or_skip()
    out = spec.parent / "out"
    rendered = subprocess.run([kubectl, "kustomize", str(out)], capture_output=True, text=True,
                              check=True).stdout
    yaml = YAML(typ="safe", pure=True)
    assert sorted(d["kind"] for d in yaml.load_all(rendered)) == sorted(
        yaml.load(path)["kind"] for path in (out / "k8s").glob("*.yaml"))


def test_schema_command_prints_the_committed_schema() -> None:
    result = run_cli("schema")
    assert result.returncode == 0
    assert result.stdout == (ROOT / "schema" / "paddlegen.schema.json").read_text()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli("build").returncode == 2
    assert run_cli("build", tmp_path / "missing.yaml", "-o", "-").returncode == 2
    assert run_cli("frobnicate").returncode == 2


def test_an_unreadable_file_does_not_hide_the_others(kube_aws_spec: Path, tmp_path: Path) -> None:
    bad = edited(kube_aws_spec, tmp_path, "port: 7164", "port: 0")
    result = run_cli("validate", tmp_path / "missing.yaml", bad, tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert any(line.startswith(f"{tmp_path / 'missing.yaml'}:1:1: ") for line in lines)
    assert any(line.startswith(f"{bad}:31:9: training.port: ") for line in lines)
    assert any(line.startswith(f"{tmp_path}:1:1: ") for line in lines)  # a directory
    checked = run_cli("check", tmp_path / "missing.yaml", kube_aws_spec)
    assert checked.returncode == 2 and "Traceback" not in checked.stderr


def test_endless_input_is_refused_after_reading_one_mebibyte() -> None:
    with open("/dev/zero", "rb") as zeros:
        result = subprocess.run([*PADDLEGEN, "validate", "-"],
                                stdin=zeros, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "a spec may be at most 1048576" in result.stderr
    device = run_cli("validate", "/dev/zero")  # not even opened for long: not a regular file
    assert device.returncode == 2 and "/dev/zero:1:1: not a regular file [io]" in device.stderr


def test_spec_from_stdin(kube_aws_spec: Path) -> None:
    result = run_cli("build", "-", "-o", "-", stdin=kube_aws_spec.read_bytes())
    assert result.returncode == 0 and "kind: Job" in result.stdout


def test_contradictory_output_options_are_refused_before_compiling(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    assert "needs an output directory" in run_cli("build", "--check", kube_aws_spec,
                                                  "-o", "-").stderr
    empty = run_cli("build", kube_aws_spec, "-o", "", cwd=tmp_path)
    assert empty.returncode == 2 and list(tmp_path.iterdir()) == []


def test_check_alone_finds_every_spec_with_an_out_tree(kube_aws_spec: Path,
                                                      tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    spec = tmp_path / "team" / "spec.yaml"
    shutil.copy(kube_aws_spec, spec)
    (tmp_path / "unbuilt.yaml").write_text(kube_aws_spec.read_text())  # no out/: not checked
    assert run_cli("build", spec, "-o", tmp_path / "team" / "out").returncode == 0
    assert run_cli("check", cwd=tmp_path).returncode == 0
    (tmp_path / "team" / "out" / "RUNBOOK.md").write_text("edited by hand\n")
    drifted = run_cli("check", cwd=tmp_path)
    assert drifted.returncode == 1 and "RUNBOOK.md" in drifted.stdout


# `paddlegen check`, its usable cores made sys.argv[1] (1: every spec in this process, N: N
# forked workers, compiler/batch.py), recording in the file sys.argv[2] each worker it forks.
CHECK_ON_CPUS = """
import os, sys
from paddlegen.compiler import batch
cpus, forks = int(sys.argv.pop(1)), sys.argv.pop(1)
batch.usable_cpus = lambda: cpus
fork = os.fork
def recorded():
    pid = fork()
    if pid:
        with open(forks, "a") as record:
            record.write(f"{pid}\\n")
    return pid
os.fork = recorded
from paddlegen.compiler.__main__ import main
main()
"""


def test_check_prints_the_same_bytes_in_spec_order_whatever_the_workers(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    # trees of two profiles, one built for a release its manifest records, clean and drifted,
    # one of another name, an invalid spec, a manifest recording a release no build writes, a
    # spec that cannot be read, an empty manifest and a YAML file that is no spec: enough for
    # five workers
    eks, kube_aws = (GOLDEN / "eks" / "spec.yaml").read_text(), kube_aws_spec.read_text()
    templates = tmp_path / "templates"
    for name, text, release in (("kube-aws", kube_aws, None), ("eks", eks, "1.33")):
        (templates / name).mkdir(parents=True)
        (templates / name / "spec.yaml").write_text(text)
        write_tree(templates / name / "out", build(text.encode(), "spec.yaml", release,
                                                   spec_record="../spec.yaml").artifacts)
    root = tmp_path / "trees"
    teams = [root / f"team{index:02d}" for index in range(44)]
    for index, team in enumerate(teams):
        shutil.copytree(templates / ("eks" if index % 6 == 0 else "kube-aws"), team)
    for index in (7, 31):
        (teams[index] / "out" / "RUNBOOK.md").write_text("edited by hand\n")
    (teams[12] / "spec.yaml").write_text(eks.replace("trainerCount: 3", "trainerCount: 2"))
    (teams[20] / "spec.yaml").write_text(kube_aws.replace("nodes: 3", "nodes: three"))
    manifest = teams[25] / "out" / ".paddlegen-manifest"
    manifest.write_text(manifest.read_text().replace("\n", "\n# kube-version: 1.x\n", 1))
    (teams[33] / "notes.yaml").write_text("kind: Notes\n")
    (teams[40] / "spec.yaml").unlink()
    os.mkfifo(teams[40] / "spec.yaml")
    (teams[41] / "notes").mkdir()
    (teams[41] / "notes" / ".paddlegen-manifest").touch()
    (teams[42] / "out").rename(teams[42] / "deploy")  # by hand: its record leads to ../spec.yaml
    (teams[42] / "deploy" / "RUNBOOK.md").write_text("edited by hand\n")

    outputs = set()
    for cpus in (1, 2, 5):
        forks = tmp_path / f"forks-{cpus}"
        forks.touch()
        # stdout and stderr into one pipe: the order of their lines is part of the output
        result = subprocess.run([sys.executable, "-c", CHECK_ON_CPUS, str(cpus), str(forks),
                                 "check"], cwd=root, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=120, check=False)
        assert len(forks.read_text().split()) == (0 if cpus == 1 else cpus)
        outputs.add((result.returncode, result.stdout))
    assert len(outputs) == 1, "the output depends on the workers"
    [(code, output)] = outputs
    text = output.decode()
    assert code == 2  # an invalid spec outweighs drift
    named = [int(team) for line in text.splitlines()
             for team in re.findall(r"\bteam(\d\d)/", line)]
    assert named == sorted(named)  # tree order
    expected = {7, 12, 20, 25, 31, 40, 41, 42}
    assert expected <= set(named)
    assert set(named) - expected <= set(range(0, 44, 6))  # the eks trees' warnings
    assert re.findall(r"^paddlegen: team(\d\d)/\w+ is not what", text, re.M) == [
        "07", "12", "31", "42"]
    assert sorted({line[4:10] for line in text.splitlines() if line.startswith("--- team")}) == [
        "team07", "team12", "team31", "team42"]  # a diff for each drifted tree
    assert re.findall(r"^(team\d\d)/spec.yaml:\d+:\d+: training.nodes", text, re.M) == ["team20"]
    assert "team25/out/.paddlegen-manifest records kube-version '1.x'" in text
    assert ("paddlegen: team40/out records its spec team40/spec.yaml, which is not a regular "
            "file") in text
    assert "paddlegen: team41/notes/.paddlegen-manifest is not a manifest paddlegen wrote" in text
    assert "notes.yaml" not in text
    assert "Traceback" not in text
