"""A repository cannot turn paddlegen against its user: whatever a clone carries into out/
(journal, staging, manifest, symlinks) and whatever another process swaps while a build runs,
nothing outside out/ moves, changes or disappears, and nothing from outside appears inside.

Each test asserts that property, not a message; the CLI's answer is only required to be clean."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paddlegen.compiler import writer
from paddlegen.compiler.artifact import MANIFEST
from paddlegen.compiler.build import build

from conftest import GOLDEN, example_counts, run_cli, run_cli_process

KUBE_AWS = GOLDEN / "kube-aws" / "spec.yaml"  # writes aws/
LOCAL = GOLDEN / "local" / "spec.yaml"  # writes no aws/: a build after kube-aws removes files
SECRET = b"the user's private key\n"


def snapshot(directory: Path) -> dict[str, object]:
    """Everything below directory (symlinks as links, never followed), with file modes."""
    found: dict[str, object] = {}
    for parent, directories, files in os.walk(directory):
        for name in directories + files:
            path = Path(parent) / name
            info = path.lstat()
            relative = path.relative_to(directory).as_posix()
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path))
            elif path.is_dir():
                found[relative] = ("dir", info.st_mode)
            else:
                found[relative] = (path.read_bytes(), info.st_mode, info.st_ino)
    return found


def home(tmp_path: Path) -> Path:
    """A stand-in for the user's home: what a hostile out/ points at."""
    victim = tmp_path / "home"
    (victim / ".ssh").mkdir(parents=True)
    (victim / ".ssh" / "id_ed25519").write_bytes(SECRET)
    (victim / "cluster.yaml").write_bytes(SECRET)
    (victim / "RUNBOOK.md").write_bytes(SECRET)
    return victim


def nothing_from_outside_inside(out: Path) -> None:
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert path.read_bytes() != SECRET, f"{path} came from outside out/"


def clean(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    assert len(result.stdout + result.stderr) < 20_000


def built(tmp_path: Path) -> Path:
    """A repository with the kube-aws spec and the out/ it compiles to."""
    (tmp_path / "repo").mkdir()
    shutil.copy(KUBE_AWS, tmp_path / "repo" / "spec.yaml")
    out = tmp_path / "repo" / "out"
    assert run_cli("build", KUBE_AWS, "-o", out).returncode == 0
    return out


def journal_text(staging: str, install: list[str], remove: list[str],
                 out: tuple[int, int] = (1, 2), staging_id: tuple[int, int] = (1, 3)) -> str:
    return json.dumps({"version": 2, "out": out, "staging": staging, "stagingId": staging_id,
                       "install": install, "remove": remove})


# 1. The crafted repository of the report: staging/new is a symlink into the user's home.

@pytest.mark.parametrize("journal", ["old format", "bound to a guessed directory"])
def test_a_cloned_journal_cannot_move_the_users_files_in(tmp_path: Path, journal: str) -> None:
    victim = home(tmp_path)
    out = built(tmp_path)
    staging = out / ".paddlegen-staging-x1234567"
    staging.mkdir()
    (staging / "new").symlink_to(os.path.relpath(victim, staging))
    (out / writer.JOURNAL).write_text(
        json.dumps({"staging": staging.name, "install": [".ssh"], "remove": []})
        if journal == "old format" else journal_text(staging.name, [".ssh", "cluster.yaml"], []))
    with open(out / MANIFEST, "a") as manifest:
        manifest.write(".ssh/id_ed25519\n.ssh\n")
    before, inside = snapshot(victim), snapshot(out)
    for command in (("build", KUBE_AWS, "-o", out), ("build", LOCAL, "-o", out),
                    ("build", "--check", KUBE_AWS, "-o", out)):
        result = run_cli(*command)
        clean(result)
        assert result.returncode in (1, 2)
        assert "finishes it" not in result.stdout + result.stderr  # never advises that build
    assert snapshot(victim) == before and snapshot(out) == inside
    nothing_from_outside_inside(out)
    refusal = run_cli("build", KUBE_AWS, "-o", out).stderr
    assert str(out / writer.JOURNAL) in refusal and "rm " in refusal


def test_a_journal_bound_to_this_directory_still_moves_only_regular_files(
        tmp_path: Path) -> None:
    victim = home(tmp_path)
    out = built(tmp_path)
    staging = out / ".paddlegen-staging-y1234567"
    (staging / "new").mkdir(parents=True)
    (staging / "new" / "RUNBOOK.md").symlink_to(victim / "RUNBOOK.md")
    (staging / "new" / "k8s").symlink_to(victim)
    identity = [(os.stat(d).st_dev, os.stat(d).st_ino) for d in (out, staging)]
    (out / writer.JOURNAL).write_text(journal_text(
        staging.name, ["RUNBOOK.md", "k8s/cluster.yaml"], [], identity[0], identity[1]))
    before, inside = snapshot(victim), snapshot(out)
    result = run_cli("build", KUBE_AWS, "-o", out)
    clean(result)
    assert result.returncode == 2
    assert snapshot(victim) == before and snapshot(out) == inside


@pytest.mark.parametrize("what", ["a symlink", "a file", "a name of another shape"])
def test_staging_that_is_not_a_builds_own_is_refused_untouched(tmp_path: Path,
                                                                 what: str) -> None:
    victim = home(tmp_path)
    out = built(tmp_path)
    if what == "a symlink":
        (out / ".paddlegen-staging-z1234567").symlink_to(victim)
    elif what == "a file":
        (out / ".paddlegen-staging-z1234567").write_bytes(b"x")
    else:
        (out / ".paddlegen-staging-../").mkdir(exist_ok=True)
        (out / ".paddlegen-staging-x").symlink_to(victim / ".ssh")
    before, inside = snapshot(victim), snapshot(out)
    for command in (("build", LOCAL, "-o", out), ("check", tmp_path / "repo" / "spec.yaml")):
        result = run_cli(*command)
        clean(result)
        assert result.returncode in (1, 2)
    assert snapshot(victim) == before and snapshot(out) == inside


def test_a_manifest_cannot_make_a_build_delete_outside(tmp_path: Path) -> None:
    victim = home(tmp_path)
    out = built(tmp_path)
    (out / "aws").rename(out / "aws.real")
    (out / "aws").symlink_to(victim)
    with open(out / MANIFEST, "a") as manifest:
        manifest.write("aws/cluster.yaml\naws/RUNBOOK.md\n../home/cluster.yaml\n")
    before = snapshot(victim)
    result = run_cli("build", KUBE_AWS, "-o", out)  # its own spec: another's is refused first
    clean(result)
    assert result.returncode == 2 and "aws is a symlink" in result.stderr
    assert snapshot(victim) == before


# 2. Bounded: crafted manifests and journals are refused or handled in linear time, cleanly.

def test_a_deep_manifest_is_refused_before_any_file_system_call(tmp_path: Path) -> None:
    out = built(tmp_path)
    fd = os.open(out, os.O_RDONLY)
    for _ in range(2000):  # 2,000 nested directories, made relative to each other
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    deep = "/".join(["d"] * 2000)
    with open(out / MANIFEST, "a") as manifest:
        manifest.writelines(f"{deep}/f{index}\n" for index in range(100))
    try:
        for command in (("build", KUBE_AWS, "-o", out),
                        ("build", "--check", KUBE_AWS, "-o", out)):
            result = run_cli(*command)
            clean(result)
            assert result.returncode == 0
    finally:
        remove_deep(out / "d")  # pytest's own clean-up recurses, and would fail on it


def remove_deep(top: Path) -> None:
    """Remove a chain of nested directories of any depth, bottom up, through descriptors."""
    fds = [os.open(top, os.O_RDONLY)]
    while "d" in os.listdir(fds[-1]):
        fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
    for parent, child in zip(reversed(fds[:-1]), reversed(fds[1:]), strict=True):
        os.close(child)
        os.rmdir("d", dir_fd=parent)
    os.close(fds[0])
    top.rmdir()


def test_a_huge_flat_manifest_is_refused(tmp_path: Path) -> None:
    out = built(tmp_path)
    (out / MANIFEST).write_text("".join(f"k8s/{index}.yaml\n" for index in range(390_000)))
    before = snapshot(out)
    for command in (("build", KUBE_AWS, "-o", out), ("build", "--check", KUBE_AWS, "-o", out)):
        result = run_cli(*command)
        clean(result)
        assert result.returncode == 2 and str(out / MANIFEST) in result.stderr
    assert snapshot(out) == before


HOSTILE_JOURNALS = [
    '{"staging": 7, "install": [], "remove": []}',
    '{"staging": null, "install": [], "remove": []}',
    "[" * 100_000 + "]" * 100_000,
    journal_text(".paddlegen-staging-a1234567", ["k8s/\u0000x"], []),
    journal_text(".paddlegen-staging-a1234567", ["k8s/\ud800"], []),
    journal_text(".paddlegen-staging-a1234567", [], ["/".join(["d"] * 5000)]),
    journal_text("../../home", [".ssh"], []),
    '{"version": true, "out": [1, 2], "staging": ".paddlegen-staging-a1234567", '
    '"stagingId": [1, 3], "install": [], "remove": []}',
    "\xff\xfe not even text",
]


@pytest.mark.parametrize("journal", HOSTILE_JOURNALS, ids=range(len(HOSTILE_JOURNALS)))
def test_a_hostile_journal_is_refused_cleanly(tmp_path: Path, journal: str) -> None:
    victim = home(tmp_path)
    out = built(tmp_path)
    (out / writer.JOURNAL).write_bytes(journal.encode("utf-8", "surrogatepass"))
    before, inside = snapshot(victim), snapshot(out)
    for command in (("build", KUBE_AWS, "-o", out), ("build", "--check", KUBE_AWS, "-o", out)):
        result = run_cli(*command)
        clean(result)
        assert result.returncode in (1, 2)
    assert snapshot(victim) == before and snapshot(out) == inside


def test_file_names_that_are_not_utf8_are_printed_escaped(tmp_path: Path) -> None:
    out = built(tmp_path)
    (out / "k8s" / "\udcff\x1b[31m.yaml").write_text("kind: Secret\n")
    os.mkdir(os.fsencode(out) + b"/.paddlegen-staging-\xfe")
    result = run_cli_process("check", tmp_path / "repo" / "spec.yaml",  # streams as it starts
                             env={"LC_ALL": "C", "PYTHONIOENCODING": "ascii"})
    clean(result)
    assert result.returncode == 1
    assert "\\xff\\x1b[31m.yaml: not written by paddlegen" in result.stdout
    assert "\\xfe" in result.stdout and "\x1b" not in result.stdout


# 3. Bound to what it checked: a process swapping directories for symlinks while builds run.

SWAPPER = """
import os, sys
target, outside, stop = sys.argv[1], sys.argv[2], sys.argv[3]
aside = target + ".real"
print("ready", flush=True)
while not os.path.exists(stop):
    try:
        os.rename(target, aside)
        os.symlink(outside, target)
        os.unlink(target)
        os.rename(aside, target)
    except OSError:
        pass
if os.path.islink(target):
    os.unlink(target)
if os.path.lexists(aside):
    os.rename(aside, target)
"""


@pytest.mark.conformance
@pytest.mark.parametrize("swapped", ["out/aws", "out/k8s", "out"])
def test_a_concurrent_swap_cannot_redirect_a_build(tmp_path: Path, swapped: str) -> None:
    victim = home(tmp_path)
    for name in ("aws", "k8s"):  # what a redirected build would write, replace or remove
        (victim / name).mkdir()
        for path in writer_paths():
            if path.startswith(f"{name}/"):
                (victim / path).write_bytes(SECRET)
        (victim / name / "cluster.yaml").write_bytes(SECRET)
    for path in writer_paths():
        if "/" not in path:
            (victim / path).write_bytes(SECRET)
    out = built(tmp_path)
    before = snapshot(victim)
    stop = tmp_path / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(tmp_path / "repo" / swapped),
         str(victim / swapped.removeprefix("out").strip("/")), str(stop)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        specs = [LOCAL, KUBE_AWS, KUBE_AWS.with_name("spec.yaml")]
        results = [build(spec.read_bytes(), "spec.yaml").artifacts for spec in specs]
        for index in range(60):
            try:
                writer.write_tree(out, results[index % 2])
                writer.drift(out, results[index % 2])
            except writer.WriteError:
                pass  # refusing is fine; touching outside is not
    finally:
        stop.touch()
        swapper.wait(timeout=60)
    assert snapshot(victim) == before
    nothing_from_outside_inside(out)


def writer_paths() -> list[str]:
    return [a.path for spec in (KUBE_AWS, LOCAL)
            for a in build(spec.read_bytes(), "spec.yaml").artifacts]


# 4. Any hostile tree a repository can carry: generated.

NAMES = st.sampled_from(["aws", "k8s", "RUNBOOK.md", ".ssh", "cluster.yaml", "x",
                         ".paddlegen-staging-a1234567", ".paddlegen-staging-b", "new", "old",
                         "kustomization.yaml", MANIFEST, writer.JOURNAL])
RELATIVE = st.lists(NAMES, min_size=1, max_size=4).map("/".join)
PATHS = st.one_of(RELATIVE, st.sampled_from(["../home/.ssh", "/etc/hostname", "k8s//x", "."]),
                  st.text(max_size=20))
ENTRY = st.one_of(
    st.tuples(st.just("dir"), RELATIVE),
    st.tuples(st.just("file"), RELATIVE),
    st.tuples(st.just("link-out"), RELATIVE),  # a symlink to the user's home, or into it
    st.tuples(st.just("manifest"), st.lists(PATHS, max_size=6)),
    st.tuples(st.just("journal"), st.tuples(st.sampled_from([
        ".paddlegen-staging-a1234567", "../home", ".paddlegen-staging-b"]),
        st.lists(PATHS, max_size=4), st.lists(PATHS, max_size=4), st.booleans())),
)


def plant(out: Path, victim: Path, entry: tuple[str, object]) -> None:
    """Put one hostile thing into out/, as a clone could (errors: it could not be there)."""
    kind, value = entry
    try:
        if kind == "manifest":
            assert isinstance(value, list)
            (out / MANIFEST).write_text("".join(f"{p}\n" for p in value), errors="replace")
        elif kind == "journal":
            assert isinstance(value, tuple)
            staging, install, remove, bound = value
            ids = [(os.stat(d).st_dev, os.stat(d).st_ino) if os.path.isdir(d) else (0, 0)
                   for d in (out, out / staging)]
            text = (journal_text(staging, install, remove, ids[0], ids[1]) if bound
                    else journal_text(staging, install, remove))
            (out / writer.JOURNAL).write_text(text, errors="surrogatepass")
        else:
            assert isinstance(value, str)
            target = out / value
            target.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                target.mkdir()
            elif kind == "file":
                target.write_bytes(b"planted\n")
            else:
                target.symlink_to(victim / value.rsplit("/", 1)[-1])
    except (OSError, ValueError):
        pass


@pytest.mark.parametrize("max_examples", example_counts(15, 60))
def test_no_hostile_tree_makes_paddlegen_touch_anything_outside(max_examples: int) -> None:
    @settings(max_examples=max_examples)
    @given(st.lists(ENTRY, max_size=8), st.sampled_from([KUBE_AWS, LOCAL]), st.booleans())
    def check(entries: list[tuple[str, object]], spec: Path, force: bool) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            victim = home(root)
            for name in (".ssh", "aws", "k8s", "new"):
                (victim / name).mkdir(exist_ok=True)
                (victim / name / "cluster.yaml").write_bytes(SECRET)
            out = root / "out"
            writer.write_tree(out, ARTIFACTS[KUBE_AWS])
            for entry in entries:
                plant(out, victim, entry)
            before = snapshot(victim)
            operations: list[Callable[[], object]] = [
                lambda: writer.drift(out, ARTIFACTS[spec]),
                lambda: writer.write_tree(out, ARTIFACTS[spec], force=force),
                lambda: writer.drift(out, ARTIFACTS[spec]),
            ]
            for operation in operations:
                try:
                    operation()
                except writer.WriteError as error:
                    assert "\n" not in str(error)
            assert snapshot(victim) == before
            nothing_from_outside_inside(out)

    check()


ARTIFACTS = {spec: build(spec.read_bytes(), "spec.yaml").artifacts for spec in (KUBE_AWS, LOCAL)}
