"""Writing the output tree: atomic, owning only the files it recorded, and drift checks.

paddlegen owns exactly the files listed in `<out>/.paddlegen-manifest`. A build checks every path
first and refuses to replace or delete any file it does not own (unless forced); it stages every
file, then moves them into place with interrupts held off, keeping what it replaces until the
whole tree is in; if a move fails, it puts everything back. Files it owned before but no longer
produces are removed last.
"""

from __future__ import annotations

import difflib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from paddlegen.compiler.build import K8S_DIR, MANIFEST, Artifact


class WriteError(Exception):
    """The tree cannot be written as asked: foreign files in the way, or the file system said no.
    Nothing was changed."""


def is_relative_file_path(text: str) -> bool:
    """A normalised relative path with no '.', '..' or empty parts (manifest entries must be)."""
    path = PurePosixPath(text)
    return (bool(text) and not path.is_absolute() and path.as_posix() == text
            and all(part not in ("", ".", "..") for part in path.parts))


def previously_owned(out_dir: Path) -> set[str]:
    """The files the last build recorded; entries that are not plain relative paths own nothing."""
    manifest = out_dir / MANIFEST
    if not manifest.is_file() or manifest.is_symlink():
        return set()
    try:
        lines = manifest.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise WriteError(f"cannot read {manifest}: {error}; remove it and pass --force") from None
    return {line for line in lines if not line.startswith("#") and is_relative_file_path(line)}


def blockers(out_dir: Path, artifacts: Sequence[Artifact], owned: set[str]) -> list[str]:
    """Why each path cannot be written: foreign files, and things no file can replace."""
    found = []
    for artifact in artifacts:
        target = out_dir / artifact.path
        for parent in reversed(PurePosixPath(artifact.path).parents[:-1]):
            node = out_dir / parent
            if node.is_symlink() or (os.path.lexists(node) and not node.is_dir()):
                found.append(f"{parent} is not a directory")
        if target.is_dir() and not target.is_symlink():
            found.append(f"{artifact.path} is a directory")
        elif os.path.lexists(target) and artifact.path not in owned | {MANIFEST}:
            found.append(f"{artifact.path} was not written by paddlegen")
    return sorted(set(found))


def write_tree(out_dir: Path, artifacts: Sequence[Artifact], force: bool = False) -> list[str]:
    """Write the artifacts under out_dir; return the stale files removed. Raises WriteError."""
    try:
        return _write_tree(out_dir, artifacts, force)
    except OSError as error:
        raise WriteError(f"cannot write {out_dir}: {error.strerror or error}"
                         f"{f' ({error.filename})' if error.filename else ''}") from None


def _write_tree(out_dir: Path, artifacts: Sequence[Artifact], force: bool) -> list[str]:
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise WriteError(f"{out_dir} exists and is not a directory")
    owned = previously_owned(out_dir) if out_dir.is_dir() else set()
    problems = blockers(out_dir, artifacts, owned)
    if problems and not (force and all("not written" in p for p in problems)):
        hint = "move them away or pass --force to take them over"
        raise WriteError(f"{out_dir}: {'; '.join(problems)}; {hint}")
    new = {a.path for a in artifacts}
    stale = sorted(path for path in owned - new if (out_dir / path).is_file()
                   and not (out_dir / path).is_symlink())
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".paddlegen-staging-", dir=out_dir))
    try:
        for artifact in artifacts:
            staged = staging / "new" / artifact.path
            staged.parent.mkdir(parents=True, exist_ok=True)
            with open(staged, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(artifact.text)
                handle.flush()
                os.fsync(handle.fileno())
        with interrupts_held():
            swap_in(out_dir, staging, sorted(new), stale)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for path in stale:
        prune_empty_parents(out_dir, out_dir / path)
    return stale


def swap_in(out_dir: Path, staging: Path, paths: list[str], stale: list[str]) -> None:
    """Move staged files into place and stale ones out, all or nothing."""
    undo: list[tuple[Path, Path | None]] = []  # move the first back to the second; None: delete
    created: list[Path] = []

    def set_aside(path: str) -> None:
        backup = staging / "old" / path
        backup.parent.mkdir(parents=True, exist_ok=True)
        os.replace(out_dir / path, backup)
        undo.append((backup, out_dir / path))

    try:
        for path in paths:
            for parent in reversed(PurePosixPath(path).parents[:-1]):
                if not (out_dir / parent).is_dir():
                    (out_dir / parent).mkdir()
                    created.append(out_dir / parent)
            if os.path.lexists(out_dir / path):
                set_aside(path)
            os.replace(staging / "new" / path, out_dir / path)
            undo.append((out_dir / path, None))
        for path in stale:
            set_aside(path)
    except OSError:
        for moved, origin in reversed(undo):
            if origin is None:
                moved.unlink(missing_ok=True)
            else:
                os.replace(moved, origin)
        for directory in reversed(created):
            directory.rmdir()
        raise


def prune_empty_parents(out_dir: Path, removed: Path) -> None:
    parent = removed.parent
    while parent != out_dir and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Defer SIGINT/SIGTERM while files move into place, so a Ctrl-C cannot split the tree."""
    signals = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def drift(out_dir: Path, artifacts: Sequence[Artifact]) -> str:
    """A unified diff from what out_dir holds to what the spec compiles to; "" when equal.

    Files in k8s/ that paddlegen did not write count as drift too: `kubectl apply -f out/k8s/`
    would apply them."""
    expected = {a.path: a.text for a in artifacts}
    owned = previously_owned(out_dir)
    k8s = out_dir / K8S_DIR
    foreign = {f"{K8S_DIR}/{p.name}" for p in k8s.iterdir()} if k8s.is_dir() else set()
    chunks: list[str] = []
    for path in sorted(expected.keys() | owned | foreign):
        on_disk = out_dir / path
        actual = read_text(on_disk)
        wanted = expected.get(path)
        if actual == wanted:
            continue
        chunks.extend(difflib.unified_diff(
            (actual or "").splitlines(keepends=True), (wanted or "").splitlines(keepends=True),
            fromfile=f"{out_dir / path}" if actual is not None else "/dev/null",
            tofile=f"{path} (from spec)" if wanted is not None else "/dev/null",
        ))
        if chunks and not chunks[-1].endswith("\n"):
            chunks[-1] += "\n\\ No newline at end of file\n"
    return "".join(chunks)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text("utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None
