"""Which spec an output tree belongs to: the record its manifest keeps, read as untrusted input.

A build writes, under the header of `<out>/.paddlegen-manifest`, the spec it was built from:
`# spec: <path>`, relative to out/ and taken through real directories (symlinks resolved), so
that from wherever the tree is found the record leads to the spec on disk. `check` finds every
tree by its manifest, whatever the tree is named, and checks it against that spec.

A manifest is a file of the repository like any other, so what it says is checked before use:
- it marks a tree only if it opens with the header a build writes and at least one other file
  it lists is there: an empty or foreign .paddlegen-manifest is reported, never obeyed;
- the recorded spec must be a plain relative path ('..' only in front; no '.', empty part,
  control character or surrounding space), bounded in length and depth. `check` resolves it
  against the tree, refuses what leads out of the current directory, and reads the spec only as
  a regular file reached through real directories, and only if it is a paddlegen spec, so that
  no other file is ever read into a message.
No spec's hash is recorded: `check` rebuilds every tree and compares it whole, which a hash
would not make safer, and a hash would turn every comment, reformatting or line-ending
conversion (a checkout with autocrlf) of a spec into drift of its tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from paddlegen.compiler.artifact import (
    MANIFEST,
    MANIFEST_HEADER,
    SPEC_OPTION,
    option_line,
    option_values,
)
from paddlegen.compiler.problems import Position, Problem

# A record longer or deeper than this was not written by a build (PATH_MAX is 4096, but no
# repository keeps its specs that far from their trees).
MAX_SPEC_RECORD_BYTES = 1024
MAX_SPEC_RECORD_PARTS = 64
# Not looked into for trees: package caches. Hidden directories (.git, .venv) are not either.
SKIPPED_DIRECTORIES = frozenset({"node_modules", "__pycache__"})


def is_spec_record(text: str) -> bool:
    """Whether text is a spec's path as a build records it: relative, '..' only in front, no
    '.' or empty part, printable (no NUL, line break or escape), no space around it, bounded."""
    parts = text.split("/")
    ups = next((index for index, part in enumerate(parts) if part != ".."), len(parts))
    names = parts[ups:]
    return (len(names) > 0 and len(parts) <= MAX_SPEC_RECORD_PARTS
            and text.isprintable() and text == text.strip()
            and all(part not in ("", ".", "..") for part in names)
            and len(text.encode("utf-8")) <= MAX_SPEC_RECORD_BYTES)


def spec_record(spec: Path, out_dir: Path) -> str:
    """The spec's path relative to out_dir, through the real directories of both, as the tree's
    manifest records it (it may not be a record at all: see is_spec_record)."""
    return Path(os.path.relpath(os.path.realpath(spec), os.path.realpath(out_dir))).as_posix()


def spec_line(record: str) -> str:
    """The manifest's line that records the spec."""
    if not is_spec_record(record):  # the command line refused it already
        raise ValueError(f"not a spec record: {record!r}")
    return option_line(SPEC_OPTION, record)


def is_written_by_paddlegen(lines: list[str]) -> bool:
    """Whether a manifest's lines open with the header every build writes."""
    return lines[:1] == [MANIFEST_HEADER]


@dataclass(frozen=True)
class SpecRecord:
    """What a manifest says of its spec: the recorded path (None: none recorded), or why the
    record is not one a build writes (then path is None)."""

    path: str | None
    problem: str | None = None


def recorded_spec(lines: list[str]) -> SpecRecord:
    """The spec a manifest's lines record, checked for shape; its value is never repeated in a
    problem (it is a repository's text, not paddlegen's)."""
    values = option_values(lines, SPEC_OPTION)
    if len(values) > 1:
        return SpecRecord(None, f"records its spec {len(values)} times; a build records it once")
    if values and not is_spec_record(values[0]):
        return SpecRecord(None, "records a spec that is not a plain relative path, which no "
                                "build writes")
    return SpecRecord(values[0] if values else None)


def spec_below(out_dir: Path, record: str) -> Path | None:
    """The recorded spec as a path below the current directory (out_dir being a directory below
    it, reached without a symlink, so that '..' is its real parent); None if it leads out."""
    joined = os.path.normpath(os.path.join(out_dir, record))
    if os.path.isabs(joined) or joined in (".", "..") or joined.startswith("../"):
        return None
    return Path(joined)


def shown_spec(out_dir: Path, record: str) -> Path:
    """The recorded spec as a user reads it: out_dir joined with the record, normalised."""
    return Path(os.path.normpath(os.path.join(out_dir, record)))


def discover_trees(root: Path) -> tuple[list[Path], list[Problem]]:
    """Every directory below root (and root) that holds a .paddlegen-manifest, whatever its name
    (the worker reads it to decide whether paddlegen wrote it), in walk order with names sorted,
    and a problem for each directory that cannot be read. Symlinks are not followed; hidden
    directories and package caches are not looked into. A tree's own subdirectories are: a
    tree built with -o . holds the others. Iterative, not os.walk, which recurses (Python
    3.11) and would end in a RecursionError on a repository of deeply nested directories."""
    problems: list[Problem] = []
    trees: list[Path] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as error:
            problems.append(Problem(Position(os.path.normpath(directory), 1, 1), "", "io",
                                    f"cannot read this directory: {error.strerror}"))
            continue
        if any(entry.name == MANIFEST for entry in entries):  # a symlink or a directory too
            trees.append(directory)
        below = sorted(entry.name for entry in entries
                       if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".")
                       and entry.name not in SKIPPED_DIRECTORIES)
        pending += [directory / name for name in reversed(below)]
    return trees, problems
