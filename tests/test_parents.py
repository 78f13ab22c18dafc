"""The way to out/, and what else may hold out/'s files: symlinked parents and hard links.

- A symlink among out/'s parents is the user's way (a repository under a symlinked home, macOS's
  /tmp): it is followed, but resolved once, and every later step stays on the directory found
  then. A parent swapped at any moment of a build redirects nothing, and every message names
  the directory written. out/ itself must still be a real directory.
- Hard links (cp -al, rsync --link-dest, a dedup tool) are no proof that a file is not
  paddlegen's: a build replaces files by rename, so a snapshot keeps its bytes, and a linked file
  whose content is not the spec's is named, never shown.

Each test asserts what lies where on disk; messages are checked where they are the point."""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from paddlegen.compiler import writer
from paddlegen.compiler.artifact import MANIFEST, Artifact
from paddlegen.compiler.build import build
from paddlegen.compiler.ownership import spec_record

from conftest import GOLDEN, run_cli, tree

KUBE_AWS = GOLDEN / "kube-aws" / "spec.yaml"  # writes aws/
LOCAL = GOLDEN / "local" / "spec.yaml"  # writes no aws/: a build after kube-aws removes files
SECRET = b"the user's private key\n"


def artifacts(spec: Path) -> tuple[Artifact, ...]:
    """What a spec on standard input compiles to (its tree records no spec)."""
    return build(spec.read_bytes(), "spec.yaml").artifacts


def files_of(spec: Path, out: Path | None = None) -> dict[str, bytes]:
    """The files spec builds (into out: its manifest records the way there; else from stdin)."""
    record = None if out is None else spec_record(spec, out)
    return {a.path: a.text.encode() for a in
            build(spec.read_bytes(), "spec.yaml", spec_record=record).artifacts}


def snapshot(directory: Path) -> dict[str, object]:
    """Everything below directory (symlinks as links, never followed), with inodes."""
    found: dict[str, object] = {}
    for parent, directories, names in os.walk(directory):
        for name in directories + names:
            path = Path(parent) / name
            relative = path.relative_to(directory).as_posix()
            info = path.lstat()
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path))
            elif path.is_dir():
                found[relative] = "dir"
            elif path.is_file():
                found[relative] = (path.read_bytes(), info.st_ino)
            else:  # a FIFO: never opened
                found[relative] = ("special", info.st_mode, info.st_ino)
    return found


def clean(result: Any) -> None:
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr


# 1. A symlinked parent given by the user: followed, resolved once, and named.

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """tmp/repo with a spec and a planted shared/p -> ../elsewhere."""
    root = tmp_path / "repo"
    (root / "shared").mkdir(parents=True)
    (root / "elsewhere").mkdir()
    (root / "shared" / "p").symlink_to("../elsewhere")
    shutil.copy(LOCAL, root / "spec.yaml")
    return root


@pytest.mark.parametrize("given", ["relative", "absolute"])
def test_a_symlinked_parent_is_followed_and_every_message_names_the_directory_written(
        repo: Path, given: str) -> None:
    out = "shared/p/out" if given == "relative" else str(repo / "shared" / "p" / "out")
    written = "elsewhere/out" if given == "relative" else str(repo / "elsewhere" / "out")
    result = run_cli("build", "spec.yaml", "-o", out, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(rf"paddlegen: updated {re.escape(written)} from spec\.yaml: \d+ new "
                        r"files\n", result.stderr)
    assert tree(repo / "elsewhere" / "out") == files_of(repo / "spec.yaml",
                                                       repo / "elsewhere" / "out")
    assert sorted(os.listdir(repo / "shared")) == ["p"]  # nothing made beside the link
    again = run_cli("build", "spec.yaml", "-o", out, cwd=repo)
    assert again.stderr == f"paddlegen: {written} is up to date with spec.yaml\n"
    assert run_cli("build", "--check", "spec.yaml", "-o", out, cwd=repo).returncode == 0
    found = run_cli("check", cwd=repo)  # finds elsewhere/out, never following the link
    assert found.returncode == 0, found.stdout + found.stderr


@pytest.mark.parametrize("target", ["../../outside", "absolute"])
def test_a_parent_leading_out_of_the_current_directory_is_named_from_the_root(
        repo: Path, target: str) -> None:
    outside = repo.parent / "outside"
    outside.mkdir()
    link = repo / "shared" / "q"
    link.symlink_to(outside if target == "absolute" else target)
    result = run_cli("build", "spec.yaml", "-o", "shared/q/out", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert f"paddlegen: updated {outside / 'out'} from spec.yaml" in result.stderr
    assert tree(outside / "out") == files_of(repo / "spec.yaml", outside / "out")


def test_missing_directories_behind_a_symlinked_parent_are_made_there(repo: Path) -> None:
    result = run_cli("build", "spec.yaml", "-o", "shared/p/team/a/out", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "updated elsewhere/team/a/out from" in result.stderr
    assert (repo / "elsewhere" / "team" / "a" / "out" / MANIFEST).is_file()
    assert sorted(os.listdir(repo / "shared")) == ["p"]


def test_a_link_to_a_missing_directory_is_not_made_to_lead_anywhere(repo: Path) -> None:
    """As mkdir -p refuses a dangling link: the directory a link points at is the link's
    maker's to make, not paddlegen's."""
    (repo / "shared" / "r").symlink_to("../gone/deep")
    result = run_cli("build", "spec.yaml", "-o", "shared/r/out", cwd=repo)
    assert (result.returncode, result.stderr) == (2, (
        "paddlegen: gone is missing where a symlink on the way to shared/r/out points; "
        "paddlegen makes no directory a link points at\n"))
    assert not (repo / "gone").exists()


@pytest.mark.parametrize(("out", "message"), [
    ("shared/p", "shared/p is a symlink; paddlegen writes only into a real directory"),
    ("shared/p/link", "elsewhere/link is a symlink; paddlegen writes only into a real directory"),
    ("shared/p/notes.txt/out", "elsewhere/notes.txt is not a directory"),
    ("shared/p/notes.txt", "elsewhere/notes.txt exists and is not a directory"),
    ("loop/out", "loop/out: too many symlinks on the way to it (a loop?)"),
])
def test_what_cannot_be_out_or_its_parent_is_refused_in_one_line(
        repo: Path, out: str, message: str) -> None:
    victim = repo.parent / "home"
    victim.mkdir()
    (victim / "cluster.yaml").write_bytes(SECRET)
    (repo / "elsewhere" / "link").symlink_to(victim)
    (repo / "elsewhere" / "notes.txt").write_bytes(SECRET)
    (repo / "loop").symlink_to("loop2")
    (repo / "loop2").symlink_to("loop")
    before = snapshot(repo.parent)
    result = run_cli("build", "spec.yaml", "-o", out, cwd=repo)
    clean(result)
    assert (result.returncode, result.stderr) == (2, f"paddlegen: {message}\n")
    assert snapshot(repo.parent) == before


# 2. A parent swapped while a build runs: the build stays on the directory it resolved.

FILE_CALLS = ("open", "mkdir", "readlink", "stat", "replace", "rename", "unlink", "rmdir",
              "fsync")


@contextmanager
def swapping(link: Path, targets: tuple[str, str], when: Callable[[int], bool]) -> Iterator[None]:
    """Point link at the other target, atomically (a symlink renamed over it), after each file
    system call n (counted from 1) for which when(n) holds, while the block runs."""
    real = {name: getattr(os, name) for name in FILE_CALLS}
    calls = 0

    def swap() -> None:
        other = targets[1] if real["readlink"](link) == targets[0] else targets[0]
        fresh = link.with_name(link.name + ".new")
        os.symlink(other, fresh)  # not counted: only the calls listed are
        real["replace"](fresh, link)

    def counted(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            try:
                return real[name](*args, **kwargs)
            finally:
                calls += 1
                if when(calls):
                    swap()
        return call

    with pytest.MonkeyPatch.context() as patch:
        for name in FILE_CALLS:
            patch.setattr(os, name, counted(name))
        yield


def two_targets(root: Path, tree_of: Path | None) -> tuple[Path, Path]:
    """root/shared/p -> ../a, and root/b; each with a copy of the tree tree_of holds (if any),
    which a build of local replaces and partly removes."""
    (root / "shared").mkdir(parents=True)
    for name in ("a", "b"):
        if tree_of is None:
            (root / name).mkdir()
        else:
            shutil.copytree(tree_of, root / name / "out", symlinks=True)
    (root / "shared" / "p").symlink_to("../a")
    return root / "a" / "out", root / "b" / "out"


def built_into_one(root: Path, outs: tuple[Path, Path], befores: dict[Path, dict[str, object]],
                   written: Path | None, spec: Path) -> Path:
    """The invariant of a build racing a swapped parent: it names the directory it wrote, that
    one holds the whole new tree, the other is as it was, and nothing else was made."""
    assert written in outs, written
    [other] = [out for out in outs if out != written]
    assert tree(written) == files_of(spec)
    assert snapshot(other.parent) == befores[other.parent]
    assert sorted(os.listdir(root)) == ["a", "b", "shared"]
    assert set(os.listdir(root / "shared")) <= {"p", "p.new"}  # p.new: a swap under way
    return written


@pytest.mark.parametrize("with_trees", [False, True], ids=["out made", "out replaced"])
def test_a_parent_swapped_at_any_moment_of_a_build_redirects_nothing(
        tmp_path: Path, with_trees: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    new = artifacts(LOCAL)
    old = None
    if with_trees:
        old = tmp_path / "old"
        writer.write_tree(old, artifacts(KUBE_AWS))
    # what is checked is where each call lands, not durability: a few hundred builds, unsynced
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    root = tmp_path / "count"
    two_targets(root, old)
    counted: list[int] = []

    def never(n: int) -> bool:
        counted.append(n)
        return False

    with swapping(root / "shared" / "p", ("../a", "../b"), never):
        writer.write_tree(root / "shared" / "p" / "out", new)  # how many calls a build makes
    calls = len(counted)
    assert calls > 20
    landed = set()
    # a swap after each call in turn, then after every call (starting from either target)
    schedules: list[Callable[[int], bool]] = [
        *[(lambda n, k=k: n == k) for k in range(1, calls + 1)],
        lambda n: True, lambda n: n > 1]
    for index, when in enumerate(schedules):
        root = tmp_path / f"run{index}"
        outs = two_targets(root, old)
        befores = {out.parent: snapshot(out.parent) for out in outs}
        with swapping(root / "shared" / "p", ("../a", "../b"), when):
            changes = writer.write_tree(root / "shared" / "p" / "out", new)
        landed.add(built_into_one(root, outs, befores, changes.directory, LOCAL).parent.name)
        shutil.rmtree(root)
    assert landed == {"a", "b"}  # swaps came both before the walk read the link and after


BUILT = re.compile(r"paddlegen: (?:updated (?P<updated>\S+) from -|"
                   r"(?P<same>\S+) is up to date with -)")  # a build of a spec on stdin


def test_a_thread_swapping_a_parent_while_builds_run_never_splits_a_build(
        tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outs = two_targets(root, None)
    link, stop = root / "shared" / "p", threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        fresh = link.with_name("p.new")
        while not stop.is_set():
            os.symlink("../b" if os.readlink(link) == "../a" else "../a", fresh)
            os.replace(fresh, link)  # atomic: p is always one of the two
            swaps += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for index in range(12):  # bounded; what each build did is checked, not when
            spec = (KUBE_AWS, LOCAL)[index % 2]
            if index % 3 == 0:  # out/ made afresh, where the walk finds p pointing
                for out in outs:
                    shutil.rmtree(out, ignore_errors=True)
            befores = {out.parent: snapshot(out.parent) for out in outs}
            result = run_cli("build", "-", "-o", "shared/p/out", cwd=root,
                             stdin=spec.read_bytes())
            assert result.returncode == 0, result.stderr
            named = BUILT.search(result.stderr)
            assert named is not None, result.stderr
            shown = named["updated"] or named["same"]
            for line in result.stderr.splitlines():  # "removed stale" lines name it too
                assert line.startswith((f"removed stale {shown}/", "paddlegen: ")), line
            written = root / shown
            built_into_one(root, outs, befores, written, spec)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert swaps > 0


# 3. Hard links: a snapshot of out/ is no foreign file, and keeps its bytes.

def link_copy(source: Path, target: Path) -> None:
    """cp -al: the same directories, every file a hard link to the source's."""
    for parent, _, names in os.walk(source):
        here = target / Path(parent).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.link(Path(parent) / name, here / name)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """tmp/job: a spec and its out/, hard-linked into out.snapshot."""
    root = tmp_path / "job"
    root.mkdir()
    shutil.copy(LOCAL, root / "spec.yaml")
    assert run_cli("build", "spec.yaml", cwd=root).returncode == 0
    link_copy(root / "out", root / "out.snapshot")
    return root


def test_a_hard_linked_snapshot_makes_no_file_foreign_and_no_drift(job: Path) -> None:
    assert os.stat(job / "out" / MANIFEST).st_nlink == 2
    before = snapshot(job / "out")
    result = run_cli("build", "spec.yaml", cwd=job)
    assert (result.returncode, result.stderr) == (
        0, "paddlegen: out is up to date with spec.yaml\n")
    assert snapshot(job / "out") == before  # nothing rewritten: the links are kept
    checked = run_cli("build", "--check", "spec.yaml", "-o", "out", cwd=job)
    assert (checked.returncode, checked.stdout) == (0, "")
    found = run_cli("check", cwd=job)  # both trees, each against the spec
    assert found.returncode == 0, found.stdout + found.stderr


def test_a_build_replaces_by_rename_so_a_snapshot_keeps_its_bytes(job: Path) -> None:
    kept = snapshot(job / "out.snapshot")
    spec = job / "spec.yaml"
    spec.write_text(spec.read_text().replace("numPasses: 15", "numPasses: 16"))
    result = run_cli("build", "spec.yaml", cwd=job)
    assert result.returncode == 0, result.stderr
    assert "file replaced" in result.stderr or "files replaced" in result.stderr
    assert snapshot(job / "out.snapshot") == kept  # bytes and inodes alike
    assert tree(job / "out") == files_of(spec, job / "out")


def test_stale_files_removed_by_a_build_stay_in_the_snapshot(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, artifacts(KUBE_AWS))
    link_copy(out, tmp_path / "snap")
    kept = snapshot(tmp_path / "snap")
    changes = writer.write_tree(out, artifacts(LOCAL))
    assert any(path.startswith("aws/") for path in changes.removed)
    assert snapshot(tmp_path / "snap") == kept
    assert tree(out) == files_of(LOCAL)


def test_a_hard_linked_file_that_is_not_the_specs_is_named_never_shown(job: Path) -> None:
    secret = job.parent / "id_ed25519"
    secret.write_bytes(SECRET)
    runbook = job / "out" / "RUNBOOK.md"
    runbook.unlink()
    os.link(secret, runbook)  # an owned path, linked to another file
    checked = run_cli("build", "--check", "spec.yaml", "-o", "out", cwd=job)
    assert checked.returncode == 1
    assert ("out/RUNBOOK.md: has other hard links (a snapshot or a dedup tool?) and is not what "
            "the spec compiles to; its content is not shown (it may be another file's); "
            "paddlegen build replaces it here and leaves the other links as they are\n"
            ) in checked.stdout
    assert "private key" not in checked.stdout + checked.stderr
    found = run_cli("check", cwd=job)
    assert found.returncode == 1 and "private key" not in found.stdout + found.stderr
    inode = secret.stat().st_ino
    assert run_cli("build", "spec.yaml", cwd=job).returncode == 0  # as the message says
    assert secret.read_bytes() == SECRET and secret.stat().st_ino == inode
    assert runbook.stat().st_nlink == 1 and runbook.read_bytes() != SECRET
    assert run_cli("build", "--check", "spec.yaml", "-o", "out", cwd=job).returncode == 0


def test_a_hard_linked_stale_file_is_named_and_removed_here_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, artifacts(KUBE_AWS))
    link_copy(out, tmp_path / "snap")
    (out / "aws" / "cluster.yaml").write_bytes(SECRET)  # in place: the snapshot's too
    drift = writer.drift(out, artifacts(LOCAL))
    assert (f"{out}/aws/cluster.yaml: has other hard links (a snapshot or a dedup tool?) and is "
            "not what the spec compiles to; its content is not shown (it may be another "
            "file's); paddlegen build removes it here") in drift
    assert "private key" not in drift
    writer.write_tree(out, artifacts(LOCAL))
    assert not (out / "aws").exists()
    assert (tmp_path / "snap" / "aws" / "cluster.yaml").read_bytes() == SECRET


# 4. A manifest that cannot be paddlegen's: what is wrong with it, said as it is.

@pytest.mark.parametrize(("make", "message"), [
    ("large", "is larger than 1 MiB, more than any manifest paddlegen writes"),
    ("fifo", "is not a regular file, so not a manifest paddlegen wrote"),
    ("symlink", "is a symlink, so not a manifest paddlegen wrote"),
])
def test_a_manifest_paddlegen_cannot_have_written_is_refused_for_what_it_is(
        job: Path, make: str, message: str) -> None:
    manifest = job / "out" / MANIFEST
    manifest.unlink()
    if make == "large":
        manifest.write_bytes(b"#" * (writer.MAX_RECORD_BYTES + 1))
    elif make == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.symlink_to(job / "spec.yaml")
    before = snapshot(job)
    for command in (("build", "spec.yaml"), ("build", "--check", "spec.yaml", "-o", "out")):
        result = run_cli(*command, cwd=job)
        clean(result)
        assert result.returncode == 2
        assert (f"paddlegen: out/{MANIFEST} {message}; restore it from version control, or "
                f"remove it: rm -- out/{MANIFEST} and pass --force") in result.stderr
    assert snapshot(job) == before
