"""Writing the output tree, and drift checks: one writer at a time, all or nothing, even on a crash.

paddlegen owns exactly the files listed in `<out>/.paddlegen-manifest`. It never follows a symlink
it did not create: every path it reads, replaces or removes, and each parent of it up to `out/`,
is checked with lstat first, and a symlink or a non-directory where a directory belongs stops the
build before anything moves.

A build (under an exclusive lock on `out/`):
1. finishes an interrupted build first (a journal is left), and removes stray staging;
2. checks every path, and refuses foreign files in the way (unless forced);
3. stages the changed files in `out/.paddlegen-staging-*` and fsyncs them;
4. writes the journal (what to install, what to remove), atomically: the commit point;
5. moves the files in and the stale ones out, each old file set aside, with interrupts held;
   if a move fails, every move is undone in reverse and the journal dropped;
6. drops the journal, then the staging directory.
A crash before step 4 leaves the old tree (and stray staging, removed by the next build); a crash
after it leaves a journal, and the next build rolls forward to the new tree. `check` takes a
shared lock, reports an interrupted build as drift, and never prints the content of a file
paddlegen does not own, nor reads through a symlink.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import json
import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from paddlegen.compiler.artifact import K8S_DIR, MANIFEST, Artifact

JOURNAL = ".paddlegen-journal"
STAGING_PREFIX = ".paddlegen-staging-"
LOCK_TIMEOUT_SECONDS = 30.0
MAX_READ_BYTES = 4 << 20  # an owned file larger than this is not ours any more: never diff it
MAX_DIFF_LINES = 2000


class WriteError(Exception):
    """The tree cannot be written (or read) as asked: paths in the way, another writer, or the
    file system said no. Nothing was changed."""


def is_relative_file_path(text: str) -> bool:
    """A normalised relative path with no '.', '..' or empty parts (manifest entries must be)."""
    path = PurePosixPath(text)
    return (bool(text) and not path.is_absolute() and path.as_posix() == text
            and all(part not in ("", ".", "..") for part in path.parts))


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _is_real_dir(info: os.stat_result | None) -> bool:
    return info is not None and stat.S_ISDIR(info.st_mode)


def _is_regular(info: os.stat_result | None) -> bool:
    """A file paddlegen may have written (it writes no symlinks, directories, devices)."""
    return info is not None and stat.S_ISREG(info.st_mode)


def _in_the_way(out_dir: Path, relative: str) -> str | None:
    """Why a parent of `relative` is not a plain directory (a symlink, a file), or None."""
    for parent in reversed(PurePosixPath(relative).parents[:-1]):
        info = _lstat(out_dir / parent)
        if info is None:
            return None  # created by paddlegen, below nothing else exists
        if stat.S_ISLNK(info.st_mode):
            return f"{parent} is a symlink"
        if not stat.S_ISDIR(info.st_mode):
            return f"{parent} is not a directory"
    return None


def _cannot_replace(out_dir: Path, relative: str) -> str | None:
    """Why the file at `relative` cannot be replaced or removed: a symlink or a file among its
    parents, or a directory at it."""
    reason = _in_the_way(out_dir, relative)
    if reason is None and _is_real_dir(_lstat(out_dir / relative)):
        reason = f"{relative} is a directory"
    return reason


def read_owned(path: Path) -> bytes | None:
    """A regular file's bytes without following a symlink; None if absent, not a regular file,
    or larger than any file paddlegen writes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            return None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            return None
        return handle.read(MAX_READ_BYTES + 1)


def previously_owned(out_dir: Path) -> set[str]:
    """The files the last build recorded; entries that are not plain relative paths own nothing."""
    raw = read_owned(out_dir / MANIFEST)
    if raw is None:
        return set()
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise WriteError(f"cannot read {out_dir / MANIFEST}: not UTF-8; remove it and pass "
                         "--force") from None
    return {line for line in lines if not line.startswith("#") and is_relative_file_path(line)}


@contextmanager
def locked(out_dir: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock on the directory itself (no lock file to commit), waiting a while for
    another paddlegen to finish with it."""
    try:
        fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        raise WriteError(f"cannot open {out_dir}: {error.strerror}") from None
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WriteError(f"another paddlegen is writing {out_dir} (waited "
                                     f"{LOCK_TIMEOUT_SECONDS:.0f} s); try again") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def check_out_dir(out_dir: Path) -> bool:
    """Whether out_dir exists; a symlink or a file there is refused."""
    info = _lstat(out_dir)
    if info is None:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise WriteError(f"{out_dir} is a symlink; paddlegen writes only into a real directory")
    if not stat.S_ISDIR(info.st_mode):
        raise WriteError(f"{out_dir} exists and is not a directory")
    return True


def write_tree(out_dir: Path, artifacts: Sequence[Artifact], force: bool = False) -> list[str]:
    """Write the artifacts under out_dir; return the stale files removed. Raises WriteError."""
    try:
        if not check_out_dir(out_dir):
            out_dir.mkdir(parents=True, exist_ok=True)
        with locked(out_dir, exclusive=True):
            recover(out_dir)
            return _write_tree(out_dir, artifacts, force)
    except OSError as error:
        raise WriteError(f"cannot write {out_dir}: {error.strerror or error}"
                         f"{f' ({error.filename})' if error.filename else ''}") from None


@dataclass(frozen=True)
class Journal:
    staging: str  # the staging directory's name in out/
    install: tuple[str, ...]  # staging/new/<path> replaces out/<path>
    remove: tuple[str, ...]  # stale owned files


def _write_tree(out_dir: Path, artifacts: Sequence[Artifact], force: bool) -> list[str]:
    owned = previously_owned(out_dir)
    new = {a.path: a.text.encode("utf-8") for a in artifacts}
    problems = blockers(out_dir, new, owned, force)
    if problems:
        hint = ("move them away or pass --force to take them over"
                if all("not written" in p for p in problems) else "move them away")
        raise WriteError(f"{out_dir}: {'; '.join(problems)}; {hint}")
    stale = sorted(p for p in owned - new.keys() if _is_regular(_lstat(out_dir / p)))
    changed = sorted(p for p, data in new.items() if read_owned(out_dir / p) != data)
    if not changed and not stale:
        return []
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))
    journal = Journal(staging.name, tuple(changed), tuple(stale))
    try:
        for path in changed:
            _write_synced(staging / "new" / path, new[path])
        _write_synced(staging / "journal", json.dumps(journal.__dict__).encode())
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    with interrupts_held():
        os.replace(staging / "journal", out_dir / JOURNAL)  # the commit point
        _fsync_dir(out_dir)
        try:
            apply(out_dir, journal)
        except OSError:  # apply put the old tree back
            _close(out_dir, staging)
            raise
        _prune_empty_parents(out_dir, stale)
        _close(out_dir, staging)
    return stale


def blockers(out_dir: Path, new: dict[str, bytes], owned: set[str], force: bool) -> list[str]:
    """Why the tree cannot be written: foreign files (unless forced) and things no file can
    replace, such as a symlink or a file where a directory belongs."""
    found = set()
    for path in sorted(new.keys() | owned):
        reason = _in_the_way(out_dir, path)
        if reason:
            found.add(reason)
            continue
        info = _lstat(out_dir / path)
        if info is None or path not in new:
            continue  # a stale path is removed only if it is a file
        if stat.S_ISDIR(info.st_mode):
            found.add(f"{path} is a directory")
        elif path not in owned | {MANIFEST} and not force:
            found.add(f"{path} was not written by paddlegen")
        elif stat.S_ISLNK(info.st_mode) and not force:
            found.add(f"{path} is a symlink, not written by paddlegen")
    return sorted(found)


def apply(out_dir: Path, journal: Journal) -> None:
    """Carry out the journal, skipping what is done already (so a crashed build is rolled forward
    by calling it again). Each replaced or removed file is set aside in the staging directory;
    if a move fails, every move is undone in reverse."""
    staging = out_dir / journal.staging
    undo: list[tuple[Path, Path]] = []  # (from, to) of each move, to reverse
    created: list[Path] = []

    def move(source: Path, target: Path) -> None:
        for parent in reversed(PurePosixPath(target.relative_to(out_dir)).parents[:-1]):
            directory = out_dir / parent
            if not _is_real_dir(_lstat(directory)):
                os.mkdir(directory)
                created.append(directory)
        os.replace(source, target)
        undo.append((source, target))

    try:
        for path in journal.install:
            if _lstat(staging / "new" / path) is None:
                continue  # installed before a crash
            if _lstat(out_dir / path) is not None:
                move(out_dir / path, staging / "old" / path)
            move(staging / "new" / path, out_dir / path)
        for path in journal.remove:
            if _lstat(out_dir / path) is not None:
                move(out_dir / path, staging / "old" / path)
    except OSError:
        try:
            for source, target in reversed(undo):
                os.replace(target, source)
            for directory in reversed(created):
                os.rmdir(directory)
        except OSError as error:  # keep the journal: the next build rolls forward
            raise WriteError(f"{out_dir} is half written ({error.strerror}); the next "
                             "paddlegen build finishes it") from None
        raise


def _close(out_dir: Path, staging: Path) -> None:
    """The build is over (the new tree in, or the old one back): drop its journal and staging."""
    os.unlink(out_dir / JOURNAL)
    _fsync_dir(out_dir)
    shutil.rmtree(staging, ignore_errors=True)  # what is left, the next build removes


def recover(out_dir: Path) -> None:
    """Roll an interrupted build forward, then remove stray staging directories."""
    journal = read_journal(out_dir)
    if journal is not None:
        # the tree may have changed since the crash: the same checks as before a build
        problems = sorted({reason for path in journal.install + journal.remove
                           if (reason := _cannot_replace(out_dir, path))})
        if problems:
            raise WriteError(f"{out_dir} holds an interrupted build that cannot be finished "
                             f"safely: {'; '.join(problems)}; move them away")
        with interrupts_held():
            apply(out_dir, journal)
            _prune_empty_parents(out_dir, list(journal.remove))
            _close(out_dir, out_dir / journal.staging)
    for entry in os.scandir(out_dir):
        if entry.name.startswith(STAGING_PREFIX) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)


def read_journal(out_dir: Path) -> Journal | None:
    raw = read_owned(out_dir / JOURNAL)
    if raw is None:
        if _lstat(out_dir / JOURNAL) is not None:
            raise WriteError(f"{out_dir / JOURNAL} is not paddlegen's journal; remove it")
        return None
    try:
        data = json.loads(raw)
        journal = Journal(data["staging"], tuple(data["install"]), tuple(data["remove"]))
        valid = (journal.staging.startswith(STAGING_PREFIX) and "/" not in journal.staging
                 and all(map(is_relative_file_path, journal.install + journal.remove)))
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid:
        raise WriteError(f"{out_dir / JOURNAL} is damaged; restore out/ from version control "
                         "and remove it")
    return journal


def _write_synced(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prune_empty_parents(out_dir: Path, removed: list[str]) -> None:
    for path in removed:
        for parent in PurePosixPath(path).parents[:-1]:
            directory = out_dir / parent
            if not _is_real_dir(_lstat(directory)):
                break
            try:
                os.rmdir(directory)
            except OSError:
                break  # not empty


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Defer SIGINT/SIGTERM while files move into place, so a Ctrl-C cannot split the tree."""
    signals = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def drift(out_dir: Path, artifacts: Sequence[Artifact]) -> str:
    """What differs between out_dir and what the spec compiles to: a unified diff of the files
    paddlegen owns, and by name only everything else (foreign files in k8s/, which
    `kubectl apply -f out/k8s/` would apply, symlinks, an interrupted build); "" when equal."""
    try:
        exists = check_out_dir(out_dir)
        with locked(out_dir, exclusive=False) if exists else nullcontext():
            return _drift(out_dir, {a.path: a.text for a in artifacts}, exists)
    except OSError as error:
        raise WriteError(f"cannot read {out_dir}: {error.strerror or error}"
                         f"{f' ({error.filename})' if error.filename else ''}") from None


def _not_comparable(out_dir: Path, path: str, owned: bool, wanted: str | None) -> str | None:
    """Why a path is drift to be named rather than diffed (its content is not paddlegen's to
    show), or None."""
    reason = _in_the_way(out_dir, path)
    if reason:
        return reason
    info = _lstat(out_dir / path)
    if info is None:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a symlink, not written by paddlegen"
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
        return "not a file paddlegen writes"
    if not owned and (wanted is None or read_owned(out_dir / path) != wanted.encode()):
        return "not written by paddlegen" + ("" if wanted is None else
                                               "; paddlegen build --force replaces it")
    return None


def _drift(out_dir: Path, expected: dict[str, str], exists: bool) -> str:
    notes: list[str] = []
    if _lstat(out_dir / JOURNAL) is not None:
        notes.append(f"{JOURNAL}: an interrupted build; paddlegen build finishes it")
    notes += [f"{entry.name}: staging left by an interrupted build; paddlegen build removes it"
              for entry in sorted(os.scandir(out_dir) if exists else (), key=lambda e: e.name)
              if entry.name.startswith(STAGING_PREFIX)]
    owned = previously_owned(out_dir)
    foreign = set()
    if _is_real_dir(_lstat(out_dir / K8S_DIR)):
        foreign = {f"{K8S_DIR}/{entry.name}" for entry in os.scandir(out_dir / K8S_DIR)}
    lines: list[str] = []
    for path in sorted(expected.keys() | owned | foreign):
        wanted = expected.get(path)
        note = _not_comparable(out_dir, path, path in owned, wanted)
        if note:
            notes.append(f"{path}: {note}")
            continue
        raw = read_owned(out_dir / path)
        actual = None if raw is None else raw.decode("utf-8", errors="replace")
        if actual == wanted:
            continue
        lines.extend(difflib.unified_diff(
            (actual or "").splitlines(keepends=True), (wanted or "").splitlines(keepends=True),
            fromfile=f"{out_dir / path}" if actual is not None else "/dev/null",
            tofile=f"{path} (from spec)" if wanted is not None else "/dev/null",
        ))
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES],
                 f"... {len(lines) - MAX_DIFF_LINES} more lines of diff\n"]
    return "".join(f"{out_dir}/{note}\n" for note in notes) + "".join(lines)
