"""Ownership by record, not by name (compiler/ownership.py), and file names that stay put: a new
user's GitOps repository, with specs in jobs/*/ and their trees wherever they chose."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.artifact import MANIFEST, MANIFEST_HEADER
from paddlegen.compiler.build import KIND_RANKS, build, manifest_files
from paddlegen.compiler.ownership import (
    discover_trees,
    is_spec_record,
    recorded_spec,
    spec_below,
    spec_record,
)
from paddlegen.compiler.writer import WriteError, write_tree

from conftest import GOLDEN, GOLDEN_SPECS, run_cli

EKS = GOLDEN / "eks" / "spec.yaml"
LOCAL = GOLDEN / "local" / "spec.yaml"
SECRET = "hunter2-not-a-spec"


def snapshot(directory: Path) -> dict[str, object]:
    """Every entry below directory, byte for byte, with its mode and inode (links as links)."""
    found: dict[str, object] = {}
    for parent, directories, files in os.walk(directory):
        for name in directories + files:
            path = Path(parent) / name
            info = path.lstat()
            key = path.relative_to(directory).as_posix()
            found[key] = (os.readlink(path) if path.is_symlink() else
                          None if path.is_dir() else path.read_bytes(), info.st_mode, info.st_ino)
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two specs, jobs/a (eks) and jobs/b (local), and no tree yet."""
    for name, spec in (("a", EKS), ("b", LOCAL)):
        (tmp_path / "jobs" / name).mkdir(parents=True)
        shutil.copy(spec, tmp_path / "jobs" / name / "spec.yaml")
    return tmp_path


def lines_of(result_stderr: str) -> list[str]:
    return [line for line in result_stderr.splitlines() if line.startswith("paddlegen: ")]


# --- 1. the manifest records the spec ---------------------------------------------------------

def test_the_manifest_records_the_spec_relative_to_the_tree(repo: Path) -> None:
    assert run_cli("build", "jobs/a/spec.yaml", "-o", "deploy/a", cwd=repo).returncode == 0
    lines = (repo / "deploy" / "a" / MANIFEST).read_text().splitlines()
    assert lines[:2] == [MANIFEST_HEADER, "# spec: ../../jobs/a/spec.yaml"]
    assert recorded_spec(lines).path == "../../jobs/a/spec.yaml"
    assert spec_below(Path("deploy/a"), "../../jobs/a/spec.yaml") == Path("jobs/a/spec.yaml")
    assert spec_below(Path("deploy/a"), "../../../elsewhere.yaml") is None


def test_build_without_o_writes_out_beside_the_spec_where_check_looks(repo: Path) -> None:
    built = run_cli("build", "jobs/b/spec.yaml", cwd=repo)
    assert built.returncode == 0, built.stderr
    assert built.stderr.startswith("paddlegen: updated jobs/b/out from jobs/b/spec.yaml: ")
    assert (repo / "jobs" / "b" / "out" / "RUNBOOK.md").is_file()
    assert run_cli("check", cwd=repo).stderr == "paddlegen: 1 tree up to date with its spec\n"
    stdin = run_cli("build", "-", cwd=repo, stdin=LOCAL.read_bytes())
    assert stdin.returncode == 2 and "needs -o" in stdin.stderr


def test_a_renamed_tree_edited_by_hand_is_drift(repo: Path) -> None:
    assert run_cli("build", "jobs/a/spec.yaml", "-o", "manifests", cwd=repo).returncode == 0
    assert run_cli("check", cwd=repo).returncode == 0
    runbook = repo / "manifests" / "RUNBOOK.md"
    runbook.write_text(runbook.read_text() + "edited by hand\n")
    for args in (["check"], ["check", "jobs/a/spec.yaml"]):
        result = run_cli(*args, cwd=repo)
        assert result.returncode == 1, result.stderr
        assert "+++ RUNBOOK.md (from spec)" in result.stdout
        assert lines_of(result.stderr)[-1] == (
            "paddlegen: manifests is not what jobs/a/spec.yaml compiles to; to update it: "
            "paddlegen build jobs/a/spec.yaml -o manifests")


def test_each_tree_is_checked_against_its_own_spec_only(repo: Path) -> None:
    # two specs beside one directory, each with its tree of another name: two clean checks,
    # not four diffs
    shutil.copy(LOCAL, repo / "jobs" / "a" / "second.yaml")
    for spec, out in (("spec.yaml", "out"), ("second.yaml", "out-second")):
        assert run_cli("build", f"jobs/a/{spec}", "-o", f"jobs/a/{out}", cwd=repo).returncode == 0
    result = run_cli("check", cwd=repo)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert lines_of(result.stderr)[-1] == "paddlegen: 2 trees up to date with their specs"
    assert discover_trees(repo) == ([repo / "jobs" / "a" / "out",
                                     repo / "jobs" / "a" / "out-second"], [])


def test_a_spec_beside_its_own_output_is_still_a_spec(repo: Path) -> None:
    job = repo / "jobs" / "b"
    assert run_cli("build", "spec.yaml", "-o", ".", cwd=job).returncode == 0
    validated = run_cli("validate", "--only-specs", "--", "spec.yaml", "kustomization.yaml",
                        cwd=job)
    assert validated.returncode == 0, validated.stderr
    assert validated.stderr.endswith("paddlegen: 1 spec valid\n")
    assert run_cli("check", cwd=job).stderr.endswith("1 tree up to date with its spec\n")
    assert run_cli("check", "spec.yaml", cwd=job).returncode == 0
    (job / "spec.yaml").write_text(LOCAL.read_text().replace("trainerCount: 4", "trainerCount: 3"))
    assert run_cli("check", cwd=repo).returncode == 1  # from the root: the tree is jobs/b


def test_a_build_never_writes_over_its_own_spec(tmp_path: Path) -> None:
    shutil.copy(LOCAL, tmp_path / "kustomization.yaml")
    before = snapshot(tmp_path)
    result = run_cli("build", "kustomization.yaml", "-o", ".", "--force", cwd=tmp_path)
    assert result.returncode == 2
    assert lines_of(result.stderr) == [
        "paddlegen: kustomization.yaml is where the build writes kustomization.yaml of .; "
        "choose another -o DIR"]
    assert snapshot(tmp_path) == before


# --- another spec's tree ----------------------------------------------------------------------

def test_building_another_spec_into_a_tree_is_refused_and_leaves_it_as_it_was(repo: Path) -> None:
    assert run_cli("build", "jobs/a/spec.yaml", "-o", "deploy", cwd=repo).returncode == 0
    before = snapshot(repo / "deploy")
    for args in (["jobs/b/spec.yaml"], ["jobs/b/spec.yaml", "--force"], ["-"]):
        result = run_cli("build", *args, "-o", "deploy", cwd=repo, stdin=LOCAL.read_bytes())
        assert result.returncode == 2
        assert lines_of(result.stderr) == [
            "paddlegen: deploy is the tree of jobs/a/spec.yaml (its .paddlegen-manifest records "
            "it); build jobs/a/spec.yaml there, or this spec into another directory (-o DIR)"]
        assert snapshot(repo / "deploy") == before
    # the same spec by another way (a symlinked directory) is the same spec
    (repo / "link").symlink_to(repo / "jobs" / "a")
    assert run_cli("build", "link/spec.yaml", "-o", "deploy", cwd=repo).returncode == 0
    assert snapshot(repo / "deploy") == before


def test_a_tree_whose_spec_is_gone_is_reported_and_may_be_taken_over(repo: Path) -> None:
    assert run_cli("build", "jobs/b/spec.yaml", cwd=repo).returncode == 0
    (repo / "jobs" / "b" / "spec.yaml").rename(repo / "jobs" / "b" / "train.yaml")
    result = run_cli("check", cwd=repo)
    assert result.returncode == 2 and result.stdout == ""
    assert lines_of(result.stderr) == [
        "paddlegen: jobs/b/out was built from jobs/b/spec.yaml, which is gone; restore the "
        "spec, or remove the tree: rm -r -- jobs/b/out"]
    # renamed: its build takes the tree over, and records the new name
    assert run_cli("build", "jobs/b/train.yaml", "-o", "jobs/b/out", cwd=repo).returncode == 0
    assert "# spec: ../train.yaml\n" in (repo / "jobs" / "b" / "out" / MANIFEST).read_text()
    assert run_cli("check", cwd=repo).returncode == 0


def test_check_of_a_spec_without_a_tree_says_so(repo: Path) -> None:
    result = run_cli("check", "jobs/b/spec.yaml", cwd=repo)
    assert result.returncode == 1
    assert lines_of(result.stderr) == [
        "paddlegen: no output tree below the current directory records jobs/b/spec.yaml; build "
        "one: paddlegen build jobs/b/spec.yaml"]
    # the out/ beside it is another spec's: named, not diffed
    assert run_cli("build", "jobs/a/spec.yaml", "-o", "jobs/b/out", cwd=repo).returncode == 0
    other = run_cli("check", "jobs/b/spec.yaml", cwd=repo)
    assert other.returncode == 1 and other.stdout == ""
    assert lines_of(other.stderr) == [
        "paddlegen: no output tree below the current directory records jobs/b/spec.yaml "
        "(jobs/b/out is the tree of jobs/a/spec.yaml); build one: paddlegen build "
        "jobs/b/spec.yaml -o DIR"]


# --- manifests paddlegen did not write --------------------------------------------------------

@pytest.mark.parametrize(("text", "why"), [
    ("", "is not a manifest paddlegen wrote (empty)"),
    ("RUNBOOK.md\n", "is not a manifest paddlegen wrote (without the header a build writes)"),
    (f"{MANIFEST_HEADER}\n# spec: jobs/b/spec.yaml\n.paddlegen-manifest\nk8s/none.yaml\n",
     "lists no file that is there"),
], ids=["empty", "foreign", "listing nothing there"])
def test_a_manifest_paddlegen_did_not_write_is_reported_never_obeyed(
        repo: Path, text: str, why: str) -> None:
    assert run_cli("build", "jobs/b/spec.yaml", cwd=repo).returncode == 0
    (repo / MANIFEST).write_text(text)  # `touch .paddlegen-manifest` at the root, or worse
    (repo / "RUNBOOK.md").write_text("the repository's own\n")
    checked = run_cli("check", cwd=repo)
    assert checked.returncode == 2
    assert lines_of(checked.stderr) == [
        f"paddlegen: .paddlegen-manifest {why}, so it marks no tree; remove it: rm -- "
        ".paddlegen-manifest"]  # and jobs/b/out is still checked: up to date, so quiet
    validated = run_cli("validate", "--only-specs", "--", "jobs/b/spec.yaml", cwd=repo)
    assert validated.stderr.endswith("paddlegen: 1 spec valid\n")
    # it owns nothing: a build there refuses to replace the repository's own file
    refused = run_cli("build", "jobs/b/spec.yaml", "-o", ".", cwd=repo)
    assert refused.returncode == 2 and "RUNBOOK.md was not written by paddlegen" in refused.stderr
    assert (repo / "RUNBOOK.md").read_text() == "the repository's own\n"


HOSTILE_RECORDS = {
    "leaves the repository": ("../../../../../../../../etc/passwd", "outside the current"),
    "absolute": ("/etc/passwd", "not a plain relative path"),
    "NUL": ("spec\0.yaml", "not a plain relative path"),
    "escape": ("\x1b[2Jspec.yaml", "not a plain relative path"),
    "very long": ("a/" * 600 + "spec.yaml", "not a plain relative path"),
    "dot": ("./../spec.yaml", "not a plain relative path"),
    "up inside": ("../x/../spec.yaml", "not a plain relative path"),
    "twice": ("../spec.yaml\n# spec: ../spec.yaml", "records its spec 2 times"),
    "not a spec": ("../notes.yaml", "which is not a paddlegen spec"),
    "symlink": ("../linked.yaml", "which is a symlink or lies behind one"),
    "behind a symlink": ("../linked-dir/spec.yaml", "which is a symlink or lies behind one"),
}


@pytest.mark.parametrize("name", HOSTILE_RECORDS)
def test_a_hostile_spec_record_is_refused_in_one_line_showing_nothing(
        tmp_path: Path, name: str) -> None:
    record, why = HOSTILE_RECORDS[name]
    job = tmp_path / "job"
    job.mkdir()
    shutil.copy(LOCAL, job / "spec.yaml")
    (job / "notes.yaml").write_text(f"password: {SECRET}\n")
    (job / "linked.yaml").symlink_to(job / "notes.yaml")
    (job / "linked-dir").symlink_to(job)
    assert run_cli("build", "job/spec.yaml", cwd=tmp_path).returncode == 0
    manifest = job / "out" / MANIFEST
    manifest.write_text(manifest.read_text().replace("../spec.yaml", record, 1))
    result = run_cli("check", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("paddlegen: job/out") and why in line and len(line) < 400, line
    assert SECRET not in line and "root:" not in line and "\x1b" not in line and "\0" not in line


def test_a_tree_that_records_no_spec_is_checked_as_before_or_asks_for_one_build(
        tmp_path: Path) -> None:
    # what an earlier paddlegen wrote, or a spec on standard input: no record
    job = tmp_path / "job"
    job.mkdir()
    shutil.copy(LOCAL, job / "spec.yaml")
    write_tree(job / "out", build(LOCAL.read_bytes(), "spec.yaml").artifacts)
    assert run_cli("check", cwd=tmp_path).returncode == 0  # the one spec beside its out/
    shutil.copy(LOCAL, job / "second.yaml")
    two = run_cli("check", cwd=tmp_path)
    assert two.returncode == 2
    assert lines_of(two.stderr) == [
        "paddlegen: job/out/.paddlegen-manifest records no spec (an earlier paddlegen, or a spec "
        "on standard input, built it); build the tree again from its spec: paddlegen build SPEC "
        "-o job/out"]
    assert run_cli("build", "job/spec.yaml", cwd=tmp_path).returncode == 0  # records it
    assert run_cli("check", cwd=tmp_path).returncode == 0


def test_spec_records_have_one_shape() -> None:
    assert all(is_spec_record(text) for text in (
        "spec.yaml", "../spec.yaml", "../../jobs/a/spec.yaml", "a b/spec é.yaml"))
    assert not any(is_spec_record(text) for text in (
        "", "/spec.yaml", "..", "../", "./spec.yaml", "a/../spec.yaml", "a//spec.yaml",
        " spec.yaml", "spec.yaml ", "spec\n.yaml", "spec\0.yaml", "spec\udcff.yaml",
        "x" * 1025, "a/" * 64 + "s"))
    assert spec_record(Path("/r/jobs/a/spec.yaml"), Path("/r/deploy/a")) == \
        "../../jobs/a/spec.yaml"


# --- 2. stable file names ---------------------------------------------------------------------

def test_adding_an_object_renames_no_other_file() -> None:
    with_volume = build(EKS.read_bytes(), "spec.yaml")
    without = build(EKS.read_bytes().replace(b"  efs: {fileSystemId: fs-0123456789abcdef0}\n",
                                             b""), "spec.yaml")
    paths = {m.path for m in with_volume.manifests}
    assert paths - {m.path for m in without.manifests} == {
        "k8s/20-persistentvolume-paddle-efsvol.yaml"}
    assert {m.path for m in without.manifests} < paths


# What an object needs on an empty cluster, by kind: `kubectl apply -f k8s/` must meet it first.
NEEDS = {
    "PersistentVolumeClaim": {"PersistentVolume"},
    "RoleBinding": {"Role", "ServiceAccount"},
    "ClusterQueue": {"ResourceFlavor"},
    "LocalQueue": {"ClusterQueue"},
    "TrainJob": {"TrainingRuntime", "LocalQueue", "PersistentVolumeClaim", "ConfigMap"},
    "JobSet": {"LocalQueue", "PersistentVolumeClaim", "ConfigMap", "ServiceAccount"},
    "Job": {"PersistentVolumeClaim", "ConfigMap", "ServiceAccount", "Service", "LocalQueue"},
    "PaddleJob": {"PersistentVolumeClaim", "ConfigMap", "ServiceAccount"},
}
CRD_TYPED = {"ResourceFlavor", "ClusterQueue", "LocalQueue", "TrainingRuntime", "JobSet",
             "TrainJob", "PaddleJob"}


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_kubectl_apply_f_dir_meets_each_object_after_what_it_needs(spec: Path) -> None:
    manifests = build(spec.read_bytes(), "spec.yaml").manifests
    applied = sorted(manifests, key=lambda m: m.path)  # the order kubectl apply -f DIR reads
    kinds = [m.obj["kind"] for m in applied]
    if "Namespace" in kinds:
        assert kinds[0] == "Namespace"
    for later, needed in NEEDS.items():
        for index, kind in enumerate(kinds):
            if kind == later:
                assert not needed & set(kinds[index + 1:]), (spec, kinds)
    built_in = [index for index, kind in enumerate(kinds) if kind not in CRD_TYPED
                and kind not in ("Job", "Pod")]
    crd_typed = [index for index, kind in enumerate(kinds) if kind in CRD_TYPED]
    assert not built_in or not crd_typed or max(built_in) < min(crd_typed), kinds


@pytest.mark.parametrize("spec", GOLDEN_SPECS, ids=lambda p: p.parent.name)
def test_the_kustomization_and_the_runbook_keep_the_apply_order(spec: Path) -> None:
    result = build(spec.read_bytes(), "spec.yaml")
    paths = [m.path for m in result.manifests]
    [kustomization] = [a.text for a in result.artifacts if a.path == "kustomization.yaml"]
    assert YAML(typ="safe", pure=True).load(kustomization)["resources"] == paths
    assert paths[-1].split("/")[1].startswith("90-")  # the workload, which the runbook runs last


def test_every_kind_has_a_rank_and_no_two_objects_share_a_file() -> None:
    assert KIND_RANKS["Namespace"] == min(KIND_RANKS.values())
    namespace = {"kind": "Namespace", "metadata": {"name": "x"}}
    with pytest.raises(ValueError, match="no apply rank for kind Widget"):
        manifest_files([{"kind": "Widget", "metadata": {"name": "x"}}])
    with pytest.raises(ValueError, match="two objects would share a file"):
        manifest_files([namespace, dict(namespace)])


# --- the hooks' file names --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["--help.yaml", "-notes/x.yaml", "-o"])
def test_a_file_name_that_starts_with_a_dash_is_a_file_after_the_double_dash(
        tmp_path: Path, name: str) -> None:
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(LOCAL.read_text().replace("trainerCount: 4", "trainerCount: 0"))
    (tmp_path / "other.yaml").write_text(LOCAL.read_text())
    result = run_cli("validate", "--only-specs", "--", name, "other.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == "" and "Usage:" not in result.stderr
    assert f"{name}:" in result.stderr


def test_write_tree_refuses_before_touching_anything(tmp_path: Path) -> None:
    first = build(EKS.read_bytes(), "spec.yaml", spec_record="../a.yaml").artifacts
    shutil.copy(EKS, tmp_path / "a.yaml")
    shutil.copy(LOCAL, tmp_path / "b.yaml")
    write_tree(tmp_path / "out", first)
    before = snapshot(tmp_path / "out")
    other = build(LOCAL.read_bytes(), "spec.yaml", spec_record="../b.yaml").artifacts
    with pytest.raises(WriteError, match=r"is the tree of .*a\.yaml"):
        write_tree(tmp_path / "out", other, force=True)
    assert snapshot(tmp_path / "out") == before


def test_check_walks_a_repository_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    depth = 1200  # os.walk (Python 3.11) recurses: a RecursionError past ~1,000
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    try:
        result = run_cli("check", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stderr == "paddlegen: no output tree below the current directory\n"
    finally:
        for level in range(depth, 0, -1):  # bottom up: shutil.rmtree recurses too
            os.rmdir(tmp_path.joinpath(*["d"] * level))
