"""Writing the output tree, and drift checks: one writer at a time, all or nothing, even on a crash.

paddlegen owns exactly the files listed in `<out>/.paddlegen-manifest`, if the manifest opens with
the header a build writes (one without it, such as an empty file, owns nothing). The manifest
also records the spec the tree was built from (compiler/ownership.py): a build of another spec
into the tree is refused while that spec is there, before anything is touched. Everything in
out/ that a build did not just write is untrusted input, since a repository can carry it: the
manifest, the journal, staging directories, symlinks anywhere. So:
- The way to out/ is the user's: a symlink among its parents is followed (a repository under a
  symlinked home, macOS's /tmp), but the path is resolved exactly once, walked one component at
  a time from the current directory (or /), each opened with O_NOFOLLOW and a symlink followed
  only by reading it and walking on; a missing directory is made relative to its parent's
  descriptor. Every later step is bound to the directory found then, so a swap of any parent
  afterwards redirects nothing, and messages name that directory (the resolved path, when a
  link was followed). out/ itself must be a real directory.
- Every read, rename, unlink and mkdir below out/ is made relative to a directory descriptor
  walked from it one component at a time, each opened with O_NOFOLLOW. A concurrent swap of any
  component for a symlink cannot redirect an operation: it stays on the directory that was
  checked. The lock is held on that same out/ descriptor.
- Files are only ever replaced by rename (a new inode), never written in place: a hard-linked
  snapshot of out/ (cp -al, rsync --link-dest, a dedup tool) keeps its content. A link count
  above one is no proof that a file is not paddlegen's: such a file is compared like any other,
  but its content is never shown (it may be another file's), only named.
- Every path from the manifest or the journal is checked for shape, length and depth before any
  file system call; the manifest and the journal are read with strict types and bounded size.
- A journal is finished only in the directory it was written in: it records the device and inode
  of out/ and of its staging directory, which no clone or copy carries over. Roll-forward moves
  only regular files reached through real directories.
Anything else stops the build with one line that names the file and how to remove it.

A build (under an exclusive lock on `out/`):
0. refuses a tree whose manifest records another spec that is still there;
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
import re
import secrets
import shlex
import signal
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

from paddlegen.compiler.artifact import (
    K8S_DIR,
    KUBE_RELEASE,
    KUBE_VERSION_OPTION,
    MANIFEST,
    Artifact,
    option_values,
)
from paddlegen.compiler.ownership import (
    SpecRecord,
    is_written_by_paddlegen,
    recorded_spec,
    shown_spec,
)
from paddlegen.compiler.problems import printable, quoted

JOURNAL = ".paddlegen-journal"
STAGING_PREFIX = ".paddlegen-staging-"
STAGING_NAME = re.compile(r"\.paddlegen-staging-[a-z0-9_]{8}\Z")  # exactly what a build makes
LOCK_TIMEOUT_SECONDS = 30.0
MAX_READ_BYTES = 4 << 20  # an owned file larger than this is not ours any more: never diff it
MAX_DIFF_LINES = 2000
# paddlegen writes a few dozen files at most two directories deep: anything far beyond that in a
# manifest, a journal or a staging directory was not written by it.
MAX_PATH_DEPTH = 8
MAX_PATH_BYTES = 512
MAX_ENTRIES = 4096
MAX_RECORD_BYTES = 1 << 20  # the manifest and the journal
JOURNAL_VERSION = 2
MAX_SYMLINKS = 40  # followed on the way to out/, as the kernel's own path walk allows

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# The way to out/: where the system has O_PATH (Linux), a directory the user may pass through but
# not list (a home under /home drwx--x--x) is walked as the kernel walks it
_WALK_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)


class WriteError(Exception):
    """The tree cannot be written (or read) as asked: paths in the way, another writer, untrusted
    state paddlegen will not act on, or the file system said no. Nothing was changed."""


def is_relative_file_path(text: str) -> bool:
    """A normalised relative path that paddlegen could have written: no '.', '..', empty or
    absolute parts, no NUL, valid UTF-8, and bounded in length and depth (checked before any
    file system call sees it)."""
    parts = text.split("/")
    return (len(text) > 0 and len(parts) <= MAX_PATH_DEPTH and "\0" not in text
            and all(part not in ("", ".", "..") for part in parts)
            and _utf8_length(text) <= MAX_PATH_BYTES)


def _utf8_length(text: str) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: no file paddlegen writes
        return MAX_PATH_BYTES + 1


def shown(name: object) -> str:
    """A path as it can be printed on any terminal: undecodable bytes and control characters
    escaped, so a file name can neither break the output nor write escape sequences."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in printable(str(name)))


def _removal_hint(path: Path, directory: bool = False) -> str:
    return f"remove it: rm {'-r ' if directory else ''}-- {shlex.quote(shown(path))}"


class _Tree:
    """out/, opened once: every operation is relative to a directory descriptor reached from it
    one component at a time without following a link, and kept for the rest of the operation."""

    def __init__(self, fd: int, label: Path) -> None:
        self.fd, self.label = fd, label
        self._directories: dict[tuple[str, ...], int] = {(): fd}

    def close(self) -> None:
        for parts, fd in self._directories.items():
            if parts:
                os.close(fd)
        self._directories = {(): self.fd}

    def directory(self, parts: tuple[str, ...], create: bool = False,
                  created: list[tuple[str, ...]] | None = None) -> int | None:
        """The descriptor of out/<parts>; None if it does not exist (and is not to be created).
        Raises WriteError for a symlink or a non-directory on the way."""
        found = self._directories.get(parts)
        if found is not None:
            return found
        parent = self.directory(parts[:-1], create, created)
        if parent is None:
            return None
        try:
            fd = os.open(parts[-1], _DIRECTORY_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(parts[-1], dir_fd=parent)
            if created is not None:
                created.append(parts)
            fd = os.open(parts[-1], _DIRECTORY_FLAGS, dir_fd=parent)
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            info = _lstat_at(parent, parts[-1])  # only to word the refusal
            what = "a symlink" if info and stat.S_ISLNK(info.st_mode) else "not a directory"
            raise WriteError(f"{'/'.join(parts)} is {what}") from None
        self._directories[parts] = fd
        return fd

    def forget(self, parts: tuple[str, ...]) -> None:
        """Drop a directory that was removed (and everything cached below it)."""
        for cached in [p for p in self._directories if p[:len(parts)] == parts and p]:
            os.close(self._directories.pop(cached))

    def parent(self, path: str, create: bool = False,
               created: list[tuple[str, ...]] | None = None) -> tuple[int | None, str]:
        *parents, name = path.split("/")
        return self.directory(tuple(parents), create, created), name

    def lstat(self, path: str) -> os.stat_result | None:
        """The entry at path, never followed; None if it or a parent is absent. Raises WriteError
        for a symlink or a file among its parents."""
        parent, name = self.parent(path)
        return None if parent is None else _lstat_at(parent, name)

    def read(self, path: str) -> Contents | None:
        """A file's bytes, never through a link (see _read_at); None if it is absent."""
        parent, name = self.parent(path)
        return None if parent is None else _read_at(parent, name, MAX_READ_BYTES)


def _lstat_at(directory: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Contents:
    """A file as read: its bytes, or why it was not read (then data is None)."""

    data: bytes | None
    problem: str = ""  # "a symlink", "not a regular file", "larger than N MiB"
    # Other hard links to it (a snapshot, a dedup tool): no proof the file is not paddlegen's,
    # but then its content may be another file's too, so it is compared and never shown.
    linked: bool = False


def _bytes(contents: Contents | None) -> bytes | None:
    return None if contents is None else contents.data


def _read_at(directory: int, name: str, limit: int) -> Contents | None:
    """A regular file's bytes, never through a link; None if it is absent, and no bytes (but
    why) for a symlink, anything but a regular file, or one larger than limit."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=directory)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        if error.errno == errno.ELOOP:
            return Contents(None, "a symlink")
        if error.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
            return Contents(None, "not a regular file")
        raise
    too_large = Contents(None, f"larger than {_size(limit)}")
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return Contents(None, "not a regular file")
        if info.st_size > limit:
            return too_large
        # its size, and a byte more to see whether it has grown since (then on to the limit):
        # asking for the limit at once would allocate that much for every file
        data = handle.read(info.st_size + 1)
        if len(data) > info.st_size:
            data += handle.read(limit + 1 - len(data))
        return too_large if len(data) > limit else Contents(data, linked=info.st_nlink > 1)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def _is_regular(info: os.stat_result | None) -> bool:
    """A file paddlegen may have written (it writes no symlinks, directories, devices)."""
    return info is not None and stat.S_ISREG(info.st_mode)


def _is_dir(info: os.stat_result | None) -> bool:
    return info is not None and stat.S_ISDIR(info.st_mode)


def _in_the_way(tree: _Tree, path: str) -> str | None:
    """Why a parent of path is not a plain directory (a symlink, a file), or None."""
    try:
        tree.parent(path)
    except WriteError as error:
        return str(error)
    return None


def previously_owned(tree: _Tree) -> set[str]:
    """The files the last build recorded; entries that are not plain relative paths own nothing,
    and neither does a manifest without the header a build writes."""
    return owned_paths(_manifest_lines(tree))


def owned_paths(lines: list[str]) -> set[str]:
    """The files a manifest's lines list, if a build wrote it (else none)."""
    if not is_written_by_paddlegen(lines):
        return set()
    return {line for line in lines if not line.startswith("#") and is_relative_file_path(line)}


@dataclass(frozen=True)
class TreeManifest:
    """A tree's manifest as read, with how many of the files it lists (itself aside) are there
    as regular files: a manifest that lists none marks no tree."""

    lines: tuple[str, ...]
    present: int


def read_manifest(out_dir: Path) -> TreeManifest | None:
    """out_dir's manifest (None if there is none), read with bounds under a shared lock, never
    through a link. Raises WriteError for one that cannot be paddlegen's (a symlink, too large,
    not UTF-8) and for an out_dir that is not a real directory."""
    try:
        with _opened(out_dir, exclusive=False) as tree:
            if tree is None or _lstat_at(tree.fd, MANIFEST) is None:
                return None
            lines = _manifest_lines(tree)
            present = sum(1 for path in owned_paths(lines) - {MANIFEST}
                          if _in_the_way(tree, path) is None and _is_regular(tree.lstat(path)))
    except OSError as error:
        raise _os_error("read", out_dir, error) from None
    return TreeManifest(tuple(lines), present)


def _manifest_lines(tree: _Tree) -> list[str]:
    """The lines of the manifest the last build wrote ([] if there is none), read with bounds."""
    info = _lstat_at(tree.fd, MANIFEST)
    if info is None:
        return []
    contents = _read_at(tree.fd, MANIFEST, MAX_RECORD_BYTES)
    where = tree.label / MANIFEST
    if contents is None:
        return []  # gone since
    raw = contents.data  # other hard links (a snapshot) are no matter: it is read, never shown
    if raw is None:
        what = (f"is {contents.problem}, more than any manifest paddlegen writes"
                if contents.problem.startswith("larger") else
                f"is {contents.problem}, so not a manifest paddlegen wrote")
        raise WriteError(f"{shown(where)} {what}; restore it from version control, or "
                         f"{_removal_hint(where)} and pass --force")
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise WriteError(f"cannot read {shown(where)}: not UTF-8; {_removal_hint(where)} and "
                         "pass --force") from None
    if len(lines) > MAX_ENTRIES:
        raise WriteError(f"{shown(where)} lists {len(lines)} files, more than paddlegen ever "
                         f"writes; {_removal_hint(where)} and pass --force")
    return lines


class RecordedOptionError(WriteError):
    """The manifest records a build option that no build of paddlegen writes: a rebuild (which
    rewrites the manifest) is the way out."""


def recorded_kube_version(out_dir: Path) -> str | None:
    """The --kube-version the tree in out_dir was built with, as its manifest records it; None
    when none is recorded or there is no tree. Raises WriteError for a manifest paddlegen cannot
    have written (RecordedOptionError: for the recorded value)."""
    try:
        with _opened(out_dir, exclusive=False) as tree:
            if tree is None:
                return None
            lines = _manifest_lines(tree)
    except OSError as error:
        raise _os_error("read", out_dir, error) from None
    return kube_version_of(lines, out_dir / MANIFEST)


def kube_version_of(lines: list[str], where: Path) -> str | None:
    """The --kube-version that a manifest's lines record, checked for shape (1.N); None if none."""
    values = option_values(lines, KUBE_VERSION_OPTION)
    if len(values) > 1:
        raise RecordedOptionError(f"{shown(where)} records {KUBE_VERSION_OPTION} {len(values)} "
                                  "times; a build records it once")
    if values and not KUBE_RELEASE.match(values[0]):
        raise RecordedOptionError(f"{shown(where)} records {KUBE_VERSION_OPTION} "
                                  f"{shown(quoted(values[0]))}, which is not a Kubernetes "
                                  "release (1.N)")
    return values[0] if values else None


def _open_out(out_dir: Path, create: bool) -> tuple[int, Path] | None:
    """out_dir's descriptor, and the path that names it; None if it is not there (and is not
    to be created: then each missing directory is made relative to its parent's descriptor).

    The way to out_dir is the user's, so a symlink among its parents is followed, but it is
    resolved once: walked one component at a time from the current directory (or /), each
    opened without following a link, and a symlink followed only by reading it and walking on
    from the directory it is in ('..' is the real parent, as for the kernel). Every later step
    is bound to the descriptor found then: a parent swapped afterwards redirects nothing. The
    path is out_dir as given if no link was followed, else the directory reached (relative to
    the current directory if it lies below it). out_dir itself must be a real directory.
    Raises WriteError for a symlink or a file as out_dir, a file among its parents, a loop of
    links, or a directory made here and swapped at once; OSError for what the system refuses."""
    text = os.fspath(out_dir)
    pending = [part for part in reversed(text.split("/")) if part not in ("", ".")]
    absolute = text.startswith("/")
    fd = os.open("/" if absolute else ".", _WALK_FLAGS)
    reached: list[str] = []  # the directories walked so far, from the start, links resolved
    followed = 0  # links followed, and walks begun again after a change under the walk
    through_link = False
    # pending[:linked] is the user's own path; what lies above it came out of a link, and a
    # directory missing there is not made (mkdir -p refuses a dangling link as well)
    linked = len(pending)

    def where(name: str | None = None) -> Path:
        """What is named: out_dir as given (no link followed), else as resolved."""
        if not through_link and (name is None or not pending):
            return out_dir
        return _resolved(reached + ([] if name is None else [name]), absolute)

    try:
        while pending:
            name = pending.pop()
            last = not pending
            if name == "..":
                step = os.open("..", _WALK_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = step
                if reached and reached[-1] != "..":
                    reached.pop()
                elif not absolute:
                    reached.append("..")
                continue
            if followed > MAX_SYMLINKS:
                raise WriteError(f"{shown(out_dir)}: too many symlinks on the way to it (a loop?)")
            try:
                step = os.open(name, _WALK_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return None
                if len(pending) >= linked:
                    raise WriteError(f"{shown(where(name))} is missing where a symlink on the way "
                                     f"to {shown(out_dir)} points; paddlegen makes no "
                                     "directory a link points at") from None
                try:
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:  # made meanwhile, by another: walk it as it is
                    followed += 1
                    pending.append(name)
                    continue
                try:
                    step = os.open(name, _WALK_FLAGS, dir_fd=fd)
                except OSError as error:
                    if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise
                    raise WriteError(f"{shown(where(name))} was replaced as paddlegen made it; "
                                     "try again") from None
            except OSError as error:
                if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                info = _lstat_at(fd, name)
                link = info is not None and stat.S_ISLNK(info.st_mode)
                if link and last:
                    raise WriteError(f"{shown(where(name))} is a symlink; paddlegen writes "
                                     "only into a real directory") from None
                if info is not None and not link and not stat.S_ISDIR(info.st_mode):
                    what = "exists and is not" if last else "is not"
                    raise WriteError(f"{shown(where(name))} {what} a directory") from None
                followed += 1
                pending.append(name)
                if link:  # the user's way: read the link once, and walk on from here
                    try:
                        target = os.readlink(name, dir_fd=fd)
                    except OSError as again:
                        if again.errno not in (errno.EINVAL, errno.ENOENT):
                            raise
                        continue  # no link any more: walk the name again
                    if not target:
                        raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), name) from None
                    pending.pop()
                    through_link = True
                    linked = min(linked, len(pending))
                    pending += [part for part in reversed(target.split("/"))
                                if part not in ("", ".")]
                    if target.startswith("/"):
                        os.close(fd)
                        fd = os.open("/", _WALK_FLAGS)
                        reached, absolute = [], True
                continue  # else changed under the walk (gone, or a directory again)
            os.close(fd)
            fd = step
            reached.append(name)
        out = os.open(".", _DIRECTORY_FLAGS, dir_fd=fd)  # the directory reached, to read and lock
    finally:
        os.close(fd)
    return out, where()


def _resolved(parts: list[str], absolute: bool) -> Path:
    """The path of a directory walked from / (absolute) or from the current directory."""
    if absolute:
        return Path("/", *parts)
    if parts[:1] == [".."]:  # above the current directory: named from /
        with suppress(OSError):
            return Path(os.path.normpath(os.path.join(os.getcwd(), *parts)))
    return Path(*parts)


@contextmanager
def _opened(out_dir: Path, exclusive: bool, create: bool = False) -> Iterator[_Tree | None]:
    """out/ reached as _open_out reaches it (None: not there), with an advisory lock on that
    same descriptor (no lock file to commit), waiting a while for another paddlegen."""
    try:
        opened = _open_out(out_dir, create)
    except OSError as error:
        raise WriteError(f"cannot open {shown(out_dir)}: {error.strerror or error}") from None
    if opened is None:
        yield None
        return
    fd, label = opened
    tree = _Tree(fd, label)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WriteError(f"another paddlegen is writing {shown(label)} (waited "
                                     f"{LOCK_TIMEOUT_SECONDS:.0f} s); try again") from None
                time.sleep(0.05)
        yield tree
    finally:
        tree.close()
        os.close(fd)  # releases the lock


@contextmanager
def locked(out_dir: Path, exclusive: bool, create: bool = False) -> Iterator[_Tree]:
    """out/ reached as _open_out reaches it and locked (see _opened); WriteError if absent."""
    with _opened(out_dir, exclusive, create) as tree:
        if tree is None:
            raise WriteError(f"cannot open {shown(out_dir)}: {os.strerror(errno.ENOENT)}")
        yield tree


def _os_error(action: str, out_dir: Path, error: OSError) -> WriteError:
    where = f" ({shown(error.filename)})" if error.filename else ""
    return WriteError(f"cannot {action} {shown(out_dir)}: {error.strerror or error}{where}")


@dataclass(frozen=True)
class Changes:
    """What a build changed in out/ (all empty: it was up to date)."""

    added: tuple[str, ...] = ()  # files that were not there
    replaced: tuple[str, ...] = ()  # files whose content changed
    removed: tuple[str, ...] = ()  # stale files an earlier build wrote
    # the directory written, as it was resolved (out/ as given, unless a link was followed)
    directory: Path | None = field(default=None, compare=False)

    def __bool__(self) -> bool:
        return bool(self.added or self.replaced or self.removed)


def write_tree(out_dir: Path, artifacts: Sequence[Artifact], force: bool = False) -> Changes:
    """Write the artifacts under out_dir; return what changed. Raises WriteError."""
    new_record = recorded_spec(_artifact_lines(artifacts, MANIFEST)).path
    try:
        with locked(out_dir, exclusive=True, create=True) as tree:  # resolved once, and bound
            _refuse_another_specs_tree(tree, new_record)
            _recover(tree)
            _refuse_another_specs_tree(tree, new_record)  # what an interrupted build left
            return replace(_write_tree(tree, artifacts, force), directory=tree.label)
    except OSError as error:
        raise _os_error("write", out_dir, error) from None


def _artifact_lines(artifacts: Sequence[Artifact], path: str) -> list[str]:
    return next((a.text.splitlines() for a in artifacts if a.path == path), [])


def _refuse_another_specs_tree(tree: _Tree, new_record: str | None) -> None:
    """Raise WriteError, before anything is touched, if the tree's manifest records a spec other
    than the one being built (new_record; None: standard input) and that spec is still there. A
    tree whose spec is gone (moved or renamed) is taken over; so is one that records none."""
    if _lstat_at(tree.fd, MANIFEST) is None:
        return
    lines = _manifest_lines(tree)
    if not is_written_by_paddlegen(lines):
        return  # owns nothing: every file in the way is foreign (--force takes them)
    old: SpecRecord = recorded_spec(lines)
    where = tree.label / MANIFEST
    if old.problem:
        raise WriteError(f"{shown(where)} {old.problem}; restore it from version control, or "
                         f"{_removal_hint(where)} and pass --force")
    if old.path is None or old.path == new_record or not _is_there(tree, old.path):
        return
    try:
        same = (new_record is not None
                and _identity_at(tree, new_record) == _identity_at(tree, old.path))
    except OSError:
        same = False
    if same:
        return  # the same file, by another way (a symlinked directory)
    owner = shown(shown_spec(tree.label, old.path))
    raise WriteError(f"{shown(tree.label)} is the tree of {owner} (its {MANIFEST} records it); "
                     f"build {owner} there, or this spec into another directory (-o DIR)")


def _identity_at(tree: _Tree, record: str) -> tuple[int, int] | None:
    """The device and inode of what a spec record names, walked from out/ one directory at a time
    without following a link ('..' is the real parent); None if nothing is there. Raises
    OSError for a way that is blocked (a symlink, no permission)."""
    *directories, name = record.split("/")
    opened: list[int] = []
    try:
        directory = tree.fd
        for part in directories:
            directory = _open_directory(directory, part)
            opened.append(directory)
        info = _lstat_at(directory, name)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise
    finally:
        for fd in opened:
            os.close(fd)
    return None if info is None else _identity(info)


def _open_directory(parent: int, name: str) -> int:
    """A directory's descriptor, never through a link: a symlink raises OSError(ELOOP) (opened
    with O_DIRECTORY, Linux says ENOTDIR for it, as for a file)."""
    try:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    except NotADirectoryError:
        info = _lstat_at(parent, name)
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _is_there(tree: _Tree, record: str) -> bool:
    """Whether a recorded spec may still be there: present, or behind a way that cannot be
    walked (a symlink, no permission), which is not taken for gone."""
    try:
        return _identity_at(tree, record) is not None
    except OSError:
        return True


def read_below(path: Path, limit: int) -> bytes | None:
    """The first limit + 1 bytes of a regular file below the current directory, reached from it
    one directory at a time without following a link (path is relative, without '..'); None if
    it is not there. Raises WriteError, saying what the file is as words that follow "which",
    for a symlink or anything but a regular file (opened without blocking: a FIFO too)."""
    *directories, name = path.parts
    opened: list[int] = []
    try:
        directory = os.open(".", _DIRECTORY_FLAGS)
        opened.append(directory)
        for part in directories:
            directory = _open_directory(directory, part)
            opened.append(directory)
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=directory)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        if error.errno == errno.ELOOP:
            raise WriteError("is a symlink or lies behind one (paddlegen follows none)") from None
        raise WriteError(f"cannot be read ({error.strerror})") from None
    finally:
        for fd_opened in opened:
            os.close(fd_opened)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a directory
        os.close(fd)
        raise WriteError("is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)


def recover(out_dir: Path) -> None:
    """Finish an interrupted build in out_dir (what every build does first)."""
    try:
        with locked(out_dir, exclusive=True) as tree:
            _recover(tree)
    except OSError as error:
        raise _os_error("write", out_dir, error) from None


@dataclass(frozen=True)
class Journal:
    out: tuple[int, int]  # device and inode of out/: a clone or a copy has others
    staging: str  # the staging directory's name in out/
    staging_id: tuple[int, int]  # its device and inode
    install: tuple[str, ...]  # staging/new/<path> replaces out/<path>
    remove: tuple[str, ...]  # stale owned files

    def as_json(self) -> bytes:
        return json.dumps({"version": JOURNAL_VERSION, "out": self.out, "staging": self.staging,
                           "stagingId": self.staging_id, "install": self.install,
                           "remove": self.remove}).encode()


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _write_tree(tree: _Tree, artifacts: Sequence[Artifact], force: bool) -> Changes:
    owned = previously_owned(tree)
    new = {a.path: a.text.encode("utf-8") for a in artifacts}
    executable = {a.path for a in artifacts if a.executable}
    problems = blockers(tree, new, owned, force)
    if problems:
        hint = ("move them away or pass --force to take them over"
                if all("not written" in p for p in problems) else "move them away")
        raise WriteError(f"{shown(tree.label)}: {'; '.join(problems)}; {hint}")
    stale = sorted(p for p in owned - new.keys() if _is_regular(tree.lstat(p)))
    # compared, whatever its link count: a file is replaced by rename, so its other links (a
    # snapshot) keep their content, and an equal one is left as it is
    changed = sorted(p for p, data in new.items() if _bytes(tree.read(p)) != data)
    if not changed and not stale:
        return Changes()
    added = {p for p in changed if tree.lstat(p) is None}
    staging = _make_staging(tree)
    try:
        for path in changed:
            directory, name = tree.parent(f"{staging}/new/{path}", create=True)
            assert directory is not None  # created
            _write_synced(directory, name, new[path], path in executable)
        staging_fd = tree.directory((staging,))
        assert staging_fd is not None
        journal = Journal(_identity(os.fstat(tree.fd)), staging,
                          _identity(os.fstat(staging_fd)), tuple(changed), tuple(stale))
        _write_synced(staging_fd, "journal", journal.as_json())
    except BaseException:
        _remove_tree(tree, staging, missing_ok=True)
        raise
    with interrupts_held():
        os.replace("journal", JOURNAL, src_dir_fd=staging_fd, dst_dir_fd=tree.fd)  # commit
        os.fsync(tree.fd)
        try:
            apply(tree, journal)
        except (OSError, WriteError):  # apply put the old tree back
            _close(tree, staging)
            raise
        _prune_empty_parents(tree, stale)
        _close(tree, staging)
    return Changes(tuple(p for p in changed if p in added),
                   tuple(p for p in changed if p not in added), tuple(stale))


def _make_staging(tree: _Tree) -> str:
    while True:
        name = STAGING_PREFIX + secrets.token_hex(4)
        try:
            os.mkdir(name, 0o700, dir_fd=tree.fd)
            return name
        except FileExistsError:
            continue


def blockers(tree: _Tree, new: dict[str, bytes], owned: set[str], force: bool) -> list[str]:
    """Why the tree cannot be written: foreign files (unless forced) and things no file can
    replace, such as a symlink or a file where a directory belongs."""
    found = set()
    for path in sorted(new.keys() | owned):
        reason = _in_the_way(tree, path)
        if reason:
            found.add(reason)
            continue
        info = tree.lstat(path)
        if info is None or path not in new:
            continue  # a stale path is removed only if it is a file
        if stat.S_ISDIR(info.st_mode):
            found.add(f"{path} is a directory")
        elif path not in owned | {MANIFEST} and not force:
            found.add(f"{path} was not written by paddlegen")
        elif stat.S_ISLNK(info.st_mode) and not force:
            found.add(f"{path} is a symlink, not written by paddlegen")
    return sorted(found)


Move = tuple[int, str, int, str]  # (from directory, name, to directory, name)


def apply(tree: _Tree, journal: Journal) -> None:
    """Carry out the journal, skipping what is done already (so a crashed build is rolled forward
    by calling it again). Each replaced or removed file is set aside in the staging directory;
    if a move fails, every move is undone in reverse."""
    undo: list[Move] = []
    created: list[tuple[str, ...]] = []

    def set_aside(directory: int, name: str, path: str) -> None:
        if _lstat_at(directory, name) is not None:
            aside, aside_name = tree.parent(f"{journal.staging}/old/{path}", create=True)
            assert aside is not None
            move((directory, name, aside, aside_name))

    def move(step: Move) -> None:
        os.replace(step[1], step[3], src_dir_fd=step[0], dst_dir_fd=step[2])
        undo.append(step)

    try:
        for path in journal.install:
            source, name = tree.parent(f"{journal.staging}/new/{path}")
            if source is None or _lstat_at(source, name) is None:
                continue  # installed before a crash
            target, _ = tree.parent(path, create=True, created=created)
            assert target is not None
            set_aside(target, name, path)
            move((source, name, target, name))
        for path in journal.remove:
            target, name = tree.parent(path)
            if target is not None:
                set_aside(target, name, path)
    except (OSError, WriteError):
        try:
            for source, source_name, target, target_name in reversed(undo):
                os.replace(target_name, source_name, src_dir_fd=target, dst_dir_fd=source)
            for parts in reversed(created):
                tree.forget(parts)
                parent = tree.directory(parts[:-1])
                os.rmdir(parts[-1], dir_fd=parent)
        except OSError as error:  # keep the journal: the next build rolls forward
            raise WriteError(f"{shown(tree.label)} is half written ({error.strerror}); the "
                             "next paddlegen build finishes it") from None
        raise


def _close(tree: _Tree, staging: str) -> None:
    """The build is over (the new tree in, or the old one back): drop its journal and staging."""
    os.unlink(JOURNAL, dir_fd=tree.fd)
    os.fsync(tree.fd)
    with suppress(OSError, WriteError):  # what is left, the next build removes
        _remove_tree(tree, staging, missing_ok=True)


def _recover(tree: _Tree) -> None:
    """Roll an interrupted build forward, then remove stray staging directories. Refuses, before
    touching anything, a journal or staging that this directory's builds did not leave."""
    journal = _verified_journal(tree)
    if journal is not None:
        with interrupts_held():
            apply(tree, journal)
            _prune_empty_parents(tree, list(journal.remove))
            _close(tree, journal.staging)
    strays = [entry.name for entry in _scan(tree.fd) if entry.name.startswith(STAGING_PREFIX)]
    for name in sorted(strays):
        problem = _staging_problem(tree, name)
        if problem:
            raise WriteError(problem)
    for name in strays:
        _remove_tree(tree, name)


def _scan(fd: int) -> list[os.DirEntry[str]]:
    """A directory's entries (os.scandir of a descriptor: it reads through a duplicate)."""
    duplicate = os.dup(fd)
    try:
        with os.scandir(duplicate) as entries:
            return list(entries)
    finally:
        os.close(duplicate)


def _staging_problem(tree: _Tree, name: str) -> str | None:
    """Why an entry named like staging is not a staging directory a build left here."""
    where = tree.label / name
    if STAGING_NAME.match(name) and _is_dir(_lstat_at(tree.fd, name)):
        return None
    return f"{shown(where)} is not staging a paddlegen build left; {_removal_hint(where, True)}"


def _remove_tree(tree: _Tree, name: str, missing_ok: bool = False) -> None:
    """Remove out/<name> and everything below it, never following a link; a tree deeper or larger
    than any staging paddlegen makes is refused before anything goes."""
    if missing_ok and _lstat_at(tree.fd, name) is None:
        return
    tree.forget((name,))
    fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=tree.fd)
    try:
        if _count_below(fd, 1) > MAX_ENTRIES:
            raise ValueError
        _remove_below(fd)
    except ValueError:
        where = tree.label / name
        raise WriteError(f"{shown(where)} is deeper or larger than staging paddlegen makes; "
                         f"{_removal_hint(where, True)}") from None
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=tree.fd)


def _count_below(directory: int, depth: int) -> int:
    """How many entries are below a directory; ValueError past the depth or entry bound."""
    if depth > MAX_PATH_DEPTH:
        raise ValueError
    count = 0
    for entry in _scan(directory):
        count += 1
        if entry.is_dir(follow_symlinks=False):
            child = os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=directory)
            try:
                count += _count_below(child, depth + 1)
            finally:
                os.close(child)
        if count > MAX_ENTRIES:
            raise ValueError
    return count


def _remove_below(directory: int) -> None:
    for entry in _scan(directory):
        if entry.is_dir(follow_symlinks=False):
            child = os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=directory)
            try:
                _remove_below(child)
            finally:
                os.close(child)
            os.rmdir(entry.name, dir_fd=directory)
        else:
            os.unlink(entry.name, dir_fd=directory)


def _verified_journal(tree: _Tree) -> Journal | None:
    """The journal of a build interrupted in this very directory, ready to roll forward, or None.
    Raises WriteError, naming what to remove, for anything else."""
    problem, journal = _journal_state(tree)
    if problem:
        raise WriteError(problem)
    return journal


def _journal_state(tree: _Tree) -> tuple[str | None, Journal | None]:
    """(why the journal cannot be finished, the journal); (None, None) when there is none."""
    where = tree.label / JOURNAL
    info = _lstat_at(tree.fd, JOURNAL)
    if info is None:
        return None, None
    raw = _bytes(_read_at(tree.fd, JOURNAL, MAX_RECORD_BYTES))  # bound to out/ by inode
    journal = None if raw is None else _parse_journal(raw)
    if journal is None:
        return (f"{shown(where)} is not a journal paddlegen wrote; restore out/ from version "
                f"control and {_removal_hint(where)}"), None
    staging = tree.label / journal.staging
    bound = (_identity(os.fstat(tree.fd)) == journal.out
             and (info := _lstat_at(tree.fd, journal.staging)) is not None
             and _is_dir(info) and _identity(info) == journal.staging_id)
    if not bound:
        return (f"{shown(where)} is an interrupted build of another directory (a clone or a "
                f"copy), which paddlegen never finishes; remove it and its staging: rm -r -- "
                f"{shlex.quote(shown(where))} {shlex.quote(shown(staging))}"), None
    for path in journal.install:
        problem = _cannot_install(tree, journal.staging, path)
        if problem:
            return (f"{shown(tree.label)} holds an interrupted build that cannot be finished "
                    f"safely: {problem}; move it away"), None
    for path in journal.remove:
        problem = _cannot_replace(tree, path)
        if problem:
            return (f"{shown(tree.label)} holds an interrupted build that cannot be finished "
                    f"safely: {problem}; move it away"), None
    return None, journal


def _cannot_replace(tree: _Tree, path: str) -> str | None:
    """Why the file at path cannot be replaced or removed: a symlink or a file among its parents,
    or a directory at it."""
    reason = _in_the_way(tree, path)
    if reason is None and _is_dir(tree.lstat(path)):
        reason = f"{path} is a directory"
    return reason


def _cannot_install(tree: _Tree, staging: str, path: str) -> str | None:
    """Why the staged file for path cannot be moved in: it must be a regular file reached through
    real directories (or gone: installed before the crash)."""
    source = f"{staging}/new/{path}"
    reason = _in_the_way(tree, source) or _cannot_replace(tree, path)
    if reason is None and (info := tree.lstat(source)) is not None and not _is_regular(info):
        reason = f"{source} is not a regular file"
    return reason


def _parse_journal(raw: bytes) -> Journal | None:
    """The journal, if it is exactly what a build writes; None for anything else."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or set(data) != {"version", "out", "staging", "stagingId",
                                                   "install", "remove"}:
        return None
    out, staging, staging_id = data["out"], data["staging"], data["stagingId"]
    install, remove = data["install"], data["remove"]
    if not (type(data["version"]) is int and data["version"] == JOURNAL_VERSION
            and _is_identity(out) and _is_identity(staging_id)
            and isinstance(staging, str) and STAGING_NAME.match(staging)
            and _is_paths(install) and _is_paths(remove)):
        return None
    return Journal((out[0], out[1]), staging, (staging_id[0], staging_id[1]),
                   tuple(install), tuple(remove))


def _is_identity(value: object) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(type(number) is int and number >= 0 for number in value))


def _is_paths(value: object) -> bool:
    return (isinstance(value, list) and len(value) <= MAX_ENTRIES
            and all(isinstance(path, str) and is_relative_file_path(path) for path in value))


def _write_synced(directory: int, name: str, data: bytes, executable: bool = False) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o777 if executable else 0o666, dir_fd=directory)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _prune_empty_parents(tree: _Tree, removed: list[str]) -> None:
    for path in removed:
        parts = tuple(path.split("/"))[:-1]
        while parts:
            try:
                parent = tree.directory(parts[:-1])
                tree.forget(parts)
                if parent is None:
                    break
                os.rmdir(parts[-1], dir_fd=parent)
            except (OSError, WriteError):
                break  # not empty, or not a directory any more
            parts = parts[:-1]


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Defer SIGINT/SIGTERM while files move into place, so a Ctrl-C cannot split the tree."""
    signals = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@dataclass(frozen=True)
class Drift:
    """How a tree differs from what its spec compiles to: the text to print ("" when equal), and
    whether a build fixes it (False when all that differs is foreign files in k8s/, which a build
    leaves where they are: telling the user to build would send them round in a loop)."""

    text: str
    build_fixes: bool = True

    def __bool__(self) -> bool:
        return bool(self.text)


def drift(out_dir: Path, artifacts: Sequence[Artifact]) -> str:
    """What differs between out_dir and what the spec compiles to: a unified diff of the files
    paddlegen owns, and by name only everything else (foreign files in k8s/, which
    `kubectl apply -f out/k8s/` would apply, symlinks, an interrupted build); "" when equal."""
    return tree_drift(out_dir, artifacts).text


def tree_drift(out_dir: Path, artifacts: Sequence[Artifact]) -> Drift:
    """drift(), and whether a build fixes it."""
    expected = {a.path: a.text for a in artifacts}
    try:
        with _opened(out_dir, exclusive=False) as tree:
            return Drift(_diff(out_dir, {}, expected)) if tree is None else _drift(tree, expected)
    except OSError as error:
        raise _os_error("read", out_dir, error) from None


def _compared(tree: _Tree, path: str, owned: bool,
              wanted: str | None) -> tuple[str | None, bytes | None]:
    """Why a path is drift to be named rather than diffed (its content is not paddlegen's to
    show), or None; and else the file's bytes, read once (None: there is no file)."""
    reason = _in_the_way(tree, path)
    if reason:
        return reason, None
    info = tree.lstat(path)
    if info is None:
        return None, None
    if stat.S_ISLNK(info.st_mode):
        return "a symlink, not written by paddlegen", None
    contents = tree.read(path)
    if contents is None:
        return None, None  # gone since
    raw, expected = contents.data, None if wanted is None else wanted.encode()
    replaces = "paddlegen build replaces it" if owned else "paddlegen build --force replaces it"
    if raw is None:
        what = ("more than any file paddlegen writes" if contents.problem.startswith("larger")
                else "not written by paddlegen" if contents.problem == "a symlink"
                else "which paddlegen never writes")
        return f"{contents.problem}, {what}; {replaces}", None
    if not owned and raw != expected:
        return "not written by paddlegen" + ("" if wanted is None else f"; {replaces}"), None
    if contents.linked and raw != expected:
        return ("has other hard links (a snapshot or a dedup tool?) and is not what the spec "
                "compiles to; its content is not shown (it may be another file's); "
                f"paddlegen build {'replaces' if wanted is not None else 'removes'} it here "
                "and leaves the other links as they are"), None
    return None, raw


def _drift(tree: _Tree, expected: dict[str, str]) -> Drift:
    notes: list[str] = []
    problem, journal = _journal_state(tree)
    if problem:
        notes.append(problem)
    elif journal:
        notes.append(f"{shown(tree.label)}/{JOURNAL}: an interrupted build; paddlegen build "
                     "finishes it")
    for entry in sorted(_scan(tree.fd), key=lambda e: e.name):
        if entry.name.startswith(STAGING_PREFIX) and (journal is None
                                                      or entry.name != journal.staging):
            notes.append(_staging_problem(tree, entry.name) or
                         f"{shown(tree.label / entry.name)}: staging left by an interrupted "
                         "build; paddlegen build removes it")
    owned = previously_owned(tree)
    foreign = _foreign_k8s_files(tree, expected.keys() | owned)
    named = dict(foreign)
    comparable: dict[str, str | None] = {}
    for path in expected.keys() | owned:
        note, raw = _compared(tree, path, path in owned, expected.get(path))
        if note:
            named[path] = note
        else:
            comparable[path] = None if raw is None else raw.decode("utf-8", errors="replace")
    build_fixes = bool(notes) or len(named) > len(foreign)
    notes += [f"{shown(tree.label)}/{shown(path)}: {named[path]}" for path in sorted(named)]
    diffable = {path: text for path, text in expected.items() if path not in named}
    diff = _diff(tree.label, comparable, diffable)
    return Drift("".join(f"{note}\n" for note in notes) + diff, build_fixes or bool(diff))


def _foreign_k8s_files(tree: _Tree, known: set[str]) -> dict[str, str]:
    """Files in k8s/ that paddlegen neither owns nor writes, by name only, with what they are and
    what removes them (a build leaves them: they are not its files)."""
    try:
        k8s = tree.directory((K8S_DIR,))
    except WriteError:
        return {}  # named already as in the way of every owned k8s file
    if k8s is None:
        return {}
    found = {}
    for entry in _scan(k8s):
        path = f"{K8S_DIR}/{entry.name}"
        if path in known:
            continue
        what = "a symlink, not written by paddlegen" if entry.is_symlink() else \
            f"not written by paddlegen, and `kubectl apply -f {K8S_DIR}/` would apply it"
        found[path] = (f"{what}; move it out of {K8S_DIR}/ or "
                       f"{_removal_hint(tree.label / path, entry.is_dir(follow_symlinks=False))}")
    return found


def _diff(out_dir: Path, actual: dict[str, str | None], expected: dict[str, str]) -> str:
    """A unified diff from each file's content in out/ (None: absent) to what the spec makes."""
    lines: list[str] = []
    for path in sorted(actual.keys() | expected.keys()):
        have, wanted = actual.get(path), expected.get(path)
        if have == wanted:
            continue
        lines.extend(difflib.unified_diff(
            (have or "").splitlines(keepends=True), (wanted or "").splitlines(keepends=True),
            fromfile=f"{shown(out_dir)}/{path}" if have is not None else "/dev/null",
            tofile=f"{path} (from spec)" if wanted is not None else "/dev/null",
        ))
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES],
                 f"... {len(lines) - MAX_DIFF_LINES} more lines of diff\n"]
    return "".join(lines)
