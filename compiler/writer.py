"""Writing the output tree: atomic, owning only the files it recorded, and drift checks.

paddlegen owns exactly the files listed in `<out>/.paddlegen-manifest`. A build refuses to replace
or delete any other file (unless forced), stages every file first, then moves them into place with
interrupts held off, and removes the files it owned before but no longer produces.
"""

from __future__ import annotations

import difflib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from paddlegen.compiler.build import MANIFEST, Artifact, owned_paths


class OwnershipError(Exception):
    """The build would replace or delete files paddlegen did not write."""


def previously_owned(out_dir: Path) -> set[str]:
    manifest = out_dir / MANIFEST
    return owned_paths(manifest.read_text("utf-8")) if manifest.is_file() else set()


def destination(out_dir: Path, relative: str) -> Path:
    target = out_dir / relative
    if not target.parent.resolve().is_relative_to(out_dir.resolve()):
        raise OwnershipError(f"refusing to write outside {out_dir}: {relative}")
    return target


def foreign_conflicts(out_dir: Path, artifacts: Sequence[Artifact]) -> list[str]:
    """Paths the build would write that exist but are not paddlegen's."""
    owned = previously_owned(out_dir)
    return [a.path for a in artifacts
            if a.path not in owned and a.path != MANIFEST and os.path.lexists(out_dir / a.path)]


def write_tree(out_dir: Path, artifacts: Sequence[Artifact], force: bool = False) -> list[str]:
    """Write the artifacts under out_dir; return the stale files removed."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OwnershipError(f"{out_dir} exists and is not a directory")
    conflicts = foreign_conflicts(out_dir, artifacts) if out_dir.is_dir() else []
    if conflicts and not force:
        listed = ", ".join(conflicts)
        raise OwnershipError(f"{out_dir} has files paddlegen did not write: {listed}; "
                             "move them away or pass --force to take them over")
    new = {a.path for a in artifacts}
    stale = sorted(previously_owned(out_dir) - new) if out_dir.is_dir() else []
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".paddlegen-staging-", dir=out_dir))
    try:
        for artifact in artifacts:
            staged = staging / artifact.path
            staged.parent.mkdir(parents=True, exist_ok=True)
            with open(staged, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(artifact.text)
                handle.flush()
                os.fsync(handle.fileno())
        with interrupts_held():
            # the manifest last: until it lands, the previous one still names every owned file
            for artifact in sorted(artifacts, key=lambda a: a.path == MANIFEST):
                target = destination(out_dir, artifact.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / artifact.path, target)
            for path in stale:
                remove_owned(out_dir, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return stale


def remove_owned(out_dir: Path, relative: str) -> None:
    target = destination(out_dir, relative)
    target.unlink(missing_ok=True)
    parent = target.parent
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
    """A unified diff from what out_dir holds to what the spec compiles to; "" when equal."""
    expected = {a.path: a.text for a in artifacts}
    stale = previously_owned(out_dir) - expected.keys()
    chunks = []
    for path in sorted(expected.keys() | stale):
        on_disk = out_dir / path
        actual = on_disk.read_text("utf-8", errors="replace") if on_disk.is_file() else None
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
