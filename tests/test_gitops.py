"""Good citizenship in GitOps and CI: determinism, atomic writes, CLI conventions."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from paddlegen.compiler import writer
from paddlegen.compiler.build import build

from conftest import GOLDEN_SPECS, run_cli, run_cli_process, tree


def test_same_bytes_whatever_hash_seed_time_zone_locale_or_directory(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    # the same spec in two places, each built into the out/ beside it (so that the manifests
    # record the same way to it), by absolute path and relative to the current directory
    first, second = tmp_path / "a" / "out", tmp_path / "b" / "out"
    for copy in (first.parent, second.parent):
        copy.mkdir()
        shutil.copy(kube_aws_spec, copy / "spec.yaml")
    # processes (the hash seed, time zone and locale are read as one starts), side by side
    with ThreadPoolExecutor() as pool:
        builds = [
            pool.submit(run_cli_process, "build", first.parent / "spec.yaml", "-o", first,
                        env={"PYTHONHASHSEED": "1", "TZ": "UTC", "LC_ALL": "C"}),
            pool.submit(run_cli_process, "build", "spec.yaml", cwd=second.parent,
                        env={"PYTHONHASHSEED": "4242", "TZ": "Asia/Tokyo", "LC_ALL": "C.UTF-8"})]
        outputs = [pool.submit(run_cli_process, "build", kube_aws_spec, "-o", "-",
                               env={"PYTHONHASHSEED": seed}) for seed in ("0", "7")]
    assert [built.result().returncode for built in builds] == [0, 0]
    assert tree(first) == tree(second)
    streams = {output.result().stdout for output in outputs}
    assert len(streams) == 1


@pytest.mark.parametrize("environment", [
    {"PYTHONHASHSEED": "0", "TZ": "Pacific/Kiritimati", "LC_ALL": "C"},
    {"PYTHONHASHSEED": "987654", "TZ": "America/Adak", "LC_ALL": "C.UTF-8"},
])
def test_every_golden_tree_is_reproduced_under_other_seeds_and_zones(
        environment: dict[str, str]) -> None:
    result = run_cli_process("check", *GOLDEN_SPECS, env=environment)  # read as it starts
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_build_failing_while_staging_leaves_the_previous_tree(
        kube_aws_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    result = build(kube_aws_spec.read_bytes(), "spec.yaml")
    writer.write_tree(out, result.artifacts)
    before = tree(out)
    changed = build(kube_aws_spec.read_bytes().replace(b"trainerCount: 3", b"trainerCount: 5"),
                    "spec.yaml")
    real_fsync, calls = os.fsync, list[int]()

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(writer.WriteError, match="No space left"):
        writer.write_tree(out, changed.artifacts)
    assert tree(out) == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".paddlegen-staging")] == []


def test_a_build_failing_while_moving_files_in_puts_everything_back(
        kube_aws_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, build(kube_aws_spec.read_bytes(), "spec.yaml").artifacts)
    before = tree(out)
    renamed = build(kube_aws_spec.read_bytes().replace(b"name: paddle-cluster-job",
                                                       b"name: renamed-job"), "spec.yaml")
    real_replace, calls = os.replace, list[object]()

    def failing_replace(source: str, target: str, **fds: int) -> None:
        calls.append(target)
        if len(calls) == 9:
            raise OSError(5, "Input/output error")
        real_replace(source, target, **fds)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(writer.WriteError, match="Input/output error"):
        writer.write_tree(out, renamed.artifacts)
    assert tree(out) == before


def test_paths_in_the_way_are_refused_before_anything_changes(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "k8s").write_text("a file where a directory goes")
    result = run_cli("build", kube_aws_spec, "-o", out, "--force")
    assert result.returncode == 2
    assert "k8s is not a directory" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["k8s"]
    (out / "k8s").unlink()
    (tmp_path / "elsewhere").mkdir()
    (out / "k8s").symlink_to(tmp_path / "elsewhere")
    result = run_cli("build", kube_aws_spec, "-o", out)
    assert result.returncode == 2 and "k8s is a symlink" in result.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["k8s"]


def test_a_hand_edited_manifest_cannot_make_a_build_delete_files(
        kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (tmp_path / "victim").write_text("keep me")
    (out / "notes").mkdir(parents=True)
    assert run_cli("build", kube_aws_spec, "-o", out).returncode == 0
    with open(out / ".paddlegen-manifest", "a") as manifest:
        manifest.write("./RUNBOOK.md\nk8s//07-job-paddle-cluster-job.yaml\n../victim\n"
                       "/etc/hostname\nnotes\n")
    result = run_cli("build", kube_aws_spec, "-o", out)
    assert result.returncode == 0, result.stderr
    assert "removed" not in result.stderr
    assert (tmp_path / "victim").read_text() == "keep me"
    assert (out / "notes").is_dir()
    assert run_cli("build", "--check", kube_aws_spec, "-o", out).returncode == 0
    (out / ".paddlegen-manifest").write_bytes(b"\xff\xfe")
    result = run_cli("build", kube_aws_spec, "-o", out)
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_check_counts_foreign_files_in_k8s_as_drift(kube_aws_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_cli("build", kube_aws_spec, "-o", out)
    (out / "k8s" / "99-extra.yaml").write_text("kind: Secret\n")
    result = run_cli("build", "--check", kube_aws_spec, "-o", out)
    assert result.returncode == 1
    # named, never shown: paddlegen prints no file it did not write; with the advice that
    # removes it (a build leaves it where it is: advising one would go round in a loop)
    assert (f"{out}/k8s/99-extra.yaml: not written by paddlegen, and `kubectl apply -f k8s/` "
            f"would apply it; move it out of k8s/ or remove it: rm -- {out}/k8s/99-extra.yaml\n"
            ) in result.stdout
    assert "Secret" not in result.stdout
    assert result.stderr == (f"paddlegen: {out} holds files paddlegen did not write (above); "
                             "move them out or remove them\n")
    assert "up to date" in run_cli("build", kube_aws_spec, "-o", out).stderr


def test_validate_reports_every_file_and_json_gives_data(kube_aws_spec: Path,
                                                         tmp_path: Path) -> None:
    bad_port = tmp_path / "a.yaml"
    bad_port.write_text(kube_aws_spec.read_text().replace("port: 7164", "port: 0"))
    bad_key = tmp_path / "b.yaml"
    bad_key.write_text(kube_aws_spec.read_text().replace("nic: eth0", "nics: eth0"))
    result = run_cli("validate", "--format", "json", bad_port, kube_aws_spec, bad_key)
    assert result.returncode == 2
    problems = json.loads(result.stdout)
    assert [(p["file"], p["line"], p["column"], p["path"], p["rule"]) for p in problems] == [
        (str(bad_port), 31, 9, "training.port", "out-of-range"),
        (str(bad_key), 36, 3, "training.nics", "unknown-key")]
    assert all(p["message"] and p["severity"] == "error" for p in problems)


def test_only_specs_skips_other_yaml(tmp_path: Path) -> None:
    other = tmp_path / "deployment.yaml"
    other.write_text("apiVersion: apps/v1\nkind: Deployment\n")
    assert run_cli("validate", other).returncode == 2
    assert run_cli("validate", "--only-specs", other).returncode == 0


def test_init_refuses_an_unknown_profile() -> None:
    assert run_cli("init", "--profile", "nope").returncode == 2


def test_every_command_has_help_with_an_example() -> None:
    for command in ("build", "validate", "check", "explain", "schema", "rules", "init"):
        result = run_cli(command, "--help")
        assert result.returncode == 0
        assert "Example: paddlegen " in result.stdout, command


def test_version_completion_and_no_color() -> None:
    assert run_cli("--version").stdout.startswith("paddlegen 0.")
    # processes: completion reads the program's own name, and in this process CliRunner
    # strips colour whatever the environment says
    completion = run_cli_process("--show-completion", "bash", env={"SHELL": "/bin/bash"})
    assert completion.returncode == 0 and "complete" in completion.stdout
    plain = run_cli_process("--help", env={"NO_COLOR": "1", "FORCE_COLOR": "1",
                                           "TERM": "xterm"})
    assert "\x1b[" not in plain.stdout + plain.stderr
