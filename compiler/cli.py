"""The `paddlegen` command: thin wrappers that read files, call the compiler and report.

Exit codes: 0 ok, 1 drift (`build --check`), 2 invalid input or usage.
Diagnostics go to stderr; stdout carries only what was asked for (manifests, schema, JSON).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shlex
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paddlegen.compiler.artifact import MANIFEST
from paddlegen.compiler.problems import (
    DRIFT_RULE,
    TREE_RULE,
    Position,
    Problem,
    SpecError,
    TreeProblem,
    encodable,
    printable,
    printable_lines,
    quoted,
)

if TYPE_CHECKING:
    from paddlegen.compiler.build import Build
    from paddlegen.compiler.writer import Changes, WriteError

EXIT_DRIFT = 1
EXIT_INVALID = 2

class Command(typer.core.TyperCommand):
    """Usage lines as other CLIs write them: SPEC, SPEC..., [SPEC]..."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, typer.core.TyperArgument):
                name = param.display_name_raw if param.required else f"[{param.display_name_raw}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


app = typer.Typer(
    help="Compile a PaddlePaddle training spec into everything needed to run it on Kubernetes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


class Format(str, Enum):
    """How `validate` and `check` report problems (compiler/report_formats.py)."""

    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class ExplainFormat(str, Enum):
    """How `explain` prints its facts: no SARIF or workflow commands, which carry problems."""

    text = "text"
    json = "json"


def show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"paddlegen {version('paddlegen')}")
        raise typer.Exit()


@app.callback()
def main_options(
    _version: Annotated[bool, typer.Option("--version", callback=show_version, is_eager=True,
                                           help="Print the version and exit.")] = False,
) -> None:
    """paddlegen: one training spec in, every artifact to run it out."""
    from paddlegen.compiler.clock import BadEpoch, source_date

    # The environment, refused before any command reads it: exit 2, not a traceback (exit 1
    # would mean drift). compiler/clock.py cites the convention.
    if isinstance(epoch := source_date(), BadEpoch):
        raise fail(str(epoch))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def say(line: str) -> None:
    """A line on stderr, as a terminal shows it: what it quotes (a spec's value, a file name)
    can neither write an escape sequence nor make a line of its own (problems.printable)."""
    typer.echo(printable(line), err=True)


def fail(message: str) -> typer.Exit:
    say(f"paddlegen: {message}")
    return typer.Exit(EXIT_INVALID)


# apiVersion and kind open a spec: the first 16 KiB of a file decide whether it is one.
SPEC_HEAD_BYTES = 16 << 10
SPEC_API_PREFIX = "paddlegen/"
SPEC_KIND = "TrainingJob"
# What a spec's head holds for certain: each key, quoted or not, where a top-level key can
# start (a line, after a byte order mark, or an entry of a flow mapping), with its value. Only
# a head that has both is parsed.
_SPEC_KEYS = [re.compile(rb"(?:^(?:\xef\xbb\xbf)?|[{,])[ \t]*(['\"]?)" + key
                         + rb"\1[ \t]*:\s*['\"]?" + value, re.M)
              for key, value in ((b"apiVersion", SPEC_API_PREFIX.encode()),
                                 (b"kind", SPEC_KIND.encode()))]


def is_spec(raw: bytes) -> bool:
    """Whether a file is a paddlegen spec: a YAML document whose top-level mapping has
    `apiVersion: paddlegen/<any version>` and `kind: TrainingJob`. Cheap, for hooks that see
    every YAML file: only a head holding both words is parsed, and only as far as its top-level
    keys, so that they count nowhere else (nested, in a block or quoted scalar, in a comment).
    Text that is not UTF-8 or not YAML there is no spec."""
    head = raw[:SPEC_HEAD_BYTES]
    if not all(key.search(head) for key in _SPEC_KEYS):
        return False
    try:
        # a character cut by the head's end waits for bytes that never come: not an error
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(
            head, final=len(raw) <= SPEC_HEAD_BYTES)
    except UnicodeDecodeError:
        return False
    return declares_spec(top_level_scalars(text))


def declares_spec(pairs: Iterable[tuple[str | None, str | None]]) -> bool:
    """Whether top-level (key, value) pairs declare a spec; read only until they do."""
    api = kind = False
    for key, value in pairs:
        api = api or (key == "apiVersion" and value is not None
                      and value.startswith(SPEC_API_PREFIX))
        kind = kind or (key == "kind" and value == SPEC_KIND)
        if api and kind:
            return True
    return False


def top_level_scalars(text: str) -> Iterator[tuple[str | None, str | None]]:
    """The first YAML document's top-level (key, value) pairs, None for a key or value that is
    not a scalar, parsed lazily; none if its root is not a mapping. Ends quietly where the text
    stops being YAML: where the loader's parse gives its error as a value."""
    from paddlegen.compiler.loader import Unparsable, parse

    depth, key, is_key = 0, None, True
    for event in parse(text):
        if isinstance(event, Unparsable):
            return  # no spec so far
        kind = type(event).__name__
        if kind in ("MappingStartEvent", "SequenceStartEvent"):
            if depth == 0 and kind == "SequenceStartEvent":
                return  # the root is a sequence
            depth += 1
            continue  # a collection in the top-level mapping is a node at its end event
        if kind in ("MappingEndEvent", "SequenceEndEvent"):
            depth -= 1
            node = None
        elif kind in ("ScalarEvent", "AliasEvent"):
            if depth == 0:
                return  # the root is a scalar
            node = event.value if kind == "ScalarEvent" else None
        elif kind == "DocumentEndEvent":
            return
        else:
            continue  # the stream and document starts
        if depth == 0:
            return  # the root mapping ended
        if depth == 1:
            if is_key:
                key = node
            else:
                yield key, node
            is_key = not is_key


def read_spec(path: Path) -> bytes:
    """The file's bytes, or its first MAX_BYTES + 1: enough for the loader to refuse it.

    Only a regular file (or - for stdin) is read, and opening never blocks (a FIFO, a device)."""
    from paddlegen.compiler.loader import MAX_BYTES

    def problem(message: str) -> SpecError:
        return SpecError([Problem(Position(str(path), 1, 1), "", "io", message)])

    if str(path) == "-":
        if sys.stdin is None:
            raise problem("standard input is closed")
        try:
            return sys.stdin.buffer.read(MAX_BYTES + 1)
        except OSError as error:
            raise problem(error.strerror or str(error)) from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise problem(error.strerror or str(error)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise problem("not a regular file")
        chunks: list[bytes] = []
        while chunk := os.read(fd, MAX_BYTES + 1 - sum(map(len, chunks))):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise problem(error.strerror or str(error)) from None
    finally:
        os.close(fd)


def write_stdout(text: str) -> None:
    if sys.stdout is None:
        raise fail("standard output is closed")
    try:
        # UTF-8 bytes whatever the locale: output is the same on every machine. Data (YAML,
        # JSON) as it is; text for a terminal is made printable by whoever writes it.
        sys.stdout.buffer.write(encodable(text).encode("utf-8"))
        sys.stdout.flush()
    except OSError as error:
        # what is still buffered goes nowhere, so that exiting does not fail on it again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if not isinstance(error, BrokenPipeError):  # `| head`: the reader has what it wanted
            raise fail(f"cannot write to stdout: {error.strerror or error}") from None


def report(problems: list[Problem], output: Format) -> None:
    """Text on stderr, a line each; the other formats on stdout, whole (even with no problem)."""
    if output is Format.text:
        for problem in problems:
            say(str(problem))
    else:
        from paddlegen.compiler.report_formats import formatted

        write_stdout(formatted(problems, output.value))


SpecArgument = Annotated[Path, typer.Argument(metavar="SPEC", help="The training spec (YAML).",
                                              show_default=False)]
OutputOption = Annotated[str | None, typer.Option(
    "-o", "--output", metavar="DIR|-", show_default=False,
    help="Output directory, or - for the manifests on stdout. Default: out/ beside SPEC.")]
CheckOption = Annotated[bool, typer.Option(
    "--check", help="Write nothing; exit 1 with a diff when DIR is not what SPEC compiles to.")]
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Take over files in DIR that paddlegen did not write.")]


def supported_release(value: str | None) -> str | None:
    from paddlegen.compiler.kube_schema import supported_versions

    if value is not None and value not in supported_versions():
        raise typer.BadParameter(f"no schemas for {quoted(value)}; one of "
                                 f"{', '.join(supported_versions())}")
    return value


KubeVersionOption = Annotated[str | None, typer.Option(
    "--kube-version", metavar="1.N", callback=supported_release,
    help="Build for this Kubernetes release instead of the spec's kubeVersion (where the "
         "profile lets the spec choose it). The tree's manifest records it: check and build "
         "--check compare with the recorded one unless given another.")]
StrictOption = Annotated[bool, typer.Option(
    "--strict", help="Treat warnings (such as an image without a version tag) as errors.")]


def compiled(spec: Path, strict: bool, kube_version: str | None,
             artifacts: bool = True, spec_record: str | None = None) -> Build | None:
    """The build of one spec, or None after reporting why there is none; warnings to stderr.
    Without `artifacts`, the objects alone (no file texts: no runbook, no template engine)."""
    from paddlegen.compiler.build import ManifestError, build, checked

    try:
        raw = read_spec(spec)
        result = (build(raw, str(spec), kube_version, strict, spec_record) if artifacts
                  else checked(raw, str(spec), kube_version, strict))
    except SpecError as error:
        report(list(error.problems), Format.text)
        return None
    except ManifestError as error:
        report_bug(spec, error.problems)
        return None
    report(list(result.warnings), Format.text)
    return result


def report_bug(spec: Path, problems: tuple[Problem, ...]) -> None:
    say(bug_line(spec))
    report(list(problems), Format.text)


def bug_line(spec: Path) -> str:
    return (f"paddlegen: {spec}: the generated objects fail validation "
            "(a bug of paddlegen; please report it):")


@app.command(cls=Command,
             short_help="Compile SPEC into its output tree (or, with -o -, to stdout).")
def build(
    spec: SpecArgument,
    output: OutputOption = None,
    check: CheckOption = False,
    force: ForceOption = False,
    kube_version: KubeVersionOption = None,
    strict: StrictOption = False,
) -> None:
    """Compile SPEC into the output tree (or, with -o -, the manifests as one YAML stream).

    The tree's manifest records SPEC (its path from the tree), which is how `check` finds the
    spec of every tree; a tree that records another spec, still there, is not written.

    Example: paddlegen build golden/eks/spec.yaml -o out/
    """
    if output == "":
        raise fail("-o needs a directory, or - for stdout")
    if output is None and is_stdin(spec):
        raise fail("a spec on standard input needs -o: a directory, or - for stdout")
    if check and output == "-":
        raise fail("--check needs an output directory, not -")
    from paddlegen.compiler.writer import WriteError, write_tree

    out_dir = spec.parent / "out" if output is None else Path(output)  # where check looks
    # --check compares without refusing: a tree whose way to its spec no line can hold was
    # built with none recorded (from standard input)
    record = (None if output == "-" else recordable_way(spec, out_dir) if check
              else record_of(spec, out_dir))
    if check:
        state, lines = check_tree(Target(spec, out_dir, record), kube_version, strict)
        print_lines(lines)
        if state:
            raise typer.Exit(state)
        say(f"paddlegen: {out_dir} is up to date with {spec}")
        return
    result = compiled(spec, strict, kube_version, output != "-", record)
    if result is None:
        raise typer.Exit(EXIT_INVALID)
    if output == "-":
        write_stdout(result.stream())
        return
    if record in {a.path for a in result.artifacts}:
        raise fail(f"{shell_word(spec)} is where the build writes {record} of "
                   f"{shell_word(out_dir)}; choose another -o DIR")
    try:
        changes = write_tree(out_dir, result.artifacts, force=force)
    except WriteError as error:
        raise fail(str(error)) from None
    written = changes.directory or out_dir  # as resolved: through a symlinked parent, its target
    for path in changes.removed:
        say(f"removed stale {written / path}")
    say(built_message(spec, written, changes))


def is_stdin(spec: Path) -> bool:
    return str(spec) == "-"


def record_of(spec: Path, out_dir: Path) -> str | None:
    """What out_dir's manifest records of spec: its path from out_dir (None for standard input,
    which has none). Raises typer.Exit for a path no manifest line can hold."""
    record = recordable_way(spec, out_dir)
    if record is None and not is_stdin(spec):
        raise fail(f"cannot record the way from {shell_word(out_dir)} to {shell_word(spec)} in "
                   "its manifest (a control character, space around it, or too long); rename "
                   "it or choose another -o DIR")
    return record


def recordable_way(spec: Path, out_dir: Path) -> str | None:
    """spec's path from out_dir as its manifest records it; None for standard input, and for a
    path that no manifest line can hold (which no build records)."""
    from paddlegen.compiler.ownership import is_spec_record, spec_record

    record = None if is_stdin(spec) else spec_record(spec, out_dir)
    return record if record is not None and is_spec_record(record) else None


def built_message(spec: Path, out_dir: Path, changes: Changes) -> str:
    """What a build did to out/, in one line."""
    from paddlegen.compiler.writer import shown

    if not changes:
        return f"paddlegen: {shown(out_dir)} is up to date with {shown(spec)}"
    done = [plural(len(changes.added), "new file") if changes.added else "",
            f"{plural(len(changes.replaced), 'file')} replaced" if changes.replaced else "",
            f"{plural(len(changes.removed), 'stale file')} removed" if changes.removed else ""]
    return (f"paddlegen: updated {shown(out_dir)} from {shown(spec)}: "
            f"{', '.join(filter(None, done))}")


def shell_word(path: Path) -> str:
    """A path as one word of a command to paste: quoted, never read as an option, and printable
    (a name with control characters is shown escaped: the one case not pasted as it is)."""
    from paddlegen.compiler.writer import shown

    text = shown(path)
    if text.startswith("-") and text != "-":
        text = f"./{text}"
    return shlex.quote(text)


def build_command(spec: Path, out_dir: Path, kube_version: str | None) -> str:
    """The command that makes out_dir what spec compiles to."""
    words = ["paddlegen", "build", shell_word(spec), "-o", shell_word(out_dir)]
    if kube_version:
        words += ["--kube-version", kube_version]
    return " ".join(words)


def drifted_message(spec: Path, out_dir: Path, kube_version: str | None) -> str:
    from paddlegen.compiler.writer import shown

    return (f"{shown(out_dir)} is not what {shown(spec)} compiles to; to update it: "
            f"{build_command(spec, out_dir, kube_version)}")


def tree_problem(error: WriteError, spec: Path, out_dir: Path) -> str:
    """The message for a tree whose build options cannot be read back: a recorded option that
    no build writes comes with the command that rebuilds the tree (for the spec's own release)."""
    from paddlegen.compiler.writer import RecordedOptionError

    if isinstance(error, RecordedOptionError):
        return f"{error}; to rebuild it: {build_command(spec, out_dir, None)}"
    return str(error)


def kube_version_for(out_dir: Path, given: str | None) -> str | None:
    """The release to compare out_dir with: the command line's --kube-version, else the one the
    tree's last build recorded in its manifest, else None (the spec's own). Raises WriteError
    (RecordedOptionError: a recorded release this paddlegen has no schemas for)."""
    from paddlegen.compiler.kube_schema import supported_versions
    from paddlegen.compiler.writer import RecordedOptionError, recorded_kube_version, shown

    if given is not None:
        return given
    recorded = recorded_kube_version(out_dir)
    if recorded is not None and recorded not in supported_versions():
        raise RecordedOptionError(f"{shown(out_dir / MANIFEST)} records kube-version {recorded},"
                                  " a release this paddlegen has no schemas for")
    return recorded


SpecsArgument = Annotated[list[Path], typer.Argument(metavar="SPEC", help="Spec files.",
                                                    show_default=False)]
OnlySpecsOption = Annotated[bool, typer.Option(
    "--only-specs", help="Skip files that are not paddlegen specs (for hooks given every YAML "
    "file). A spec is never skipped, wherever it lies, an output tree too.")]
FormatOption = Annotated[Format, typer.Option(
    "--format", help="text on stderr; or on stdout: json, the problems as data; sarif, a SARIF "
    "2.1.0 log (code scanning); github, GitHub Actions annotations.")]


def readable(specs: list[Path], only_specs: bool) -> tuple[list[tuple[Path, bytes]],
                                                            list[Problem]]:
    """Each spec's bytes, and the problems of unreadable ones; with only_specs, files that are
    not specs are skipped."""
    found: list[tuple[Path, bytes]] = []
    problems: list[Problem] = []
    for spec in specs:
        raw, unread = taken(spec, only_specs)
        problems.extend(unread)
        if raw is not None:
            found.append((spec, raw))
    return found, problems


def taken(spec: Path, only_specs: bool) -> tuple[bytes | None, tuple[Problem, ...]]:
    """The file's bytes if it is taken (with only_specs: if it is a spec), else None, with the
    problem of a file that cannot be read. Whether a file is a spec is decided by its content
    alone, never by where it lies: a manifest (which a repository can make up) hides no spec,
    and a build never writes its output over its spec (cli.build refuses), so no file of an
    output tree is one."""
    try:
        raw = read_spec(spec)
    except SpecError as error:
        return None, error.problems
    return (raw if not only_specs or is_spec(raw) else None), ()


@app.command(cls=Command,
             short_help="Report every problem of every SPEC; exit 2 if any is invalid.")
def validate(
    specs: SpecsArgument,
    only_specs: OnlySpecsOption = False,
    output: FormatOption = Format.text,
    kube_version: KubeVersionOption = None,
    strict: StrictOption = False,
) -> None:
    """Validate every SPEC and report every problem of every file; exit 2 if any is invalid.

    Each valid spec is also compiled and its objects checked, as build does: a spec that
    passes builds.

    Example: paddlegen validate --format json specs/*.yaml
    """
    from paddlegen.compiler.build import ManifestError
    from paddlegen.compiler.build import validate as validate_spec

    found, problems = readable(specs, only_specs)
    for spec, raw in found:
        try:
            problems.extend(validate_spec(raw, str(spec), kube_version, strict))
        except (SpecError, ManifestError) as error:
            problems.extend(error.problems)
    report(sorted(problems, key=lambda p: (p.position, p.path)), output)
    if any(p.severity == "error" for p in problems):
        raise typer.Exit(EXIT_INVALID)
    if output is Format.text:
        say(f"paddlegen: {plural(len(found), 'spec')} valid"
            f"{'' if found else ' (no paddlegen spec among the files)'}")


@app.command(cls=Command, short_help="Exit 1 when an output tree is not what its spec compiles to.")
def check(
    specs: Annotated[list[Path] | None, typer.Argument(
        metavar="SPEC", help="Spec files; none: every output tree below the current directory.",
        show_default=False)] = None,
    only_specs: OnlySpecsOption = False,
    kube_version: KubeVersionOption = None,
    strict: StrictOption = False,
    output: FormatOption = Format.text,
) -> None:
    """Exit 1 when an output tree is not what its spec compiles to.

    With no SPEC: every output tree below the current directory, whatever its name (a directory
    whose .paddlegen-manifest paddlegen wrote), against the spec its manifest records: the
    pre-commit hook `paddlegen-check`. A tree whose spec is gone, and a .paddlegen-manifest that
    paddlegen did not write, are errors. With SPECs: the trees below the current directory built
    from them (else the out/ beside each). Each tree is built as it was: for the --kube-version
    its manifest records, unless one is given.

    Example: paddlegen check golden/*/spec.yaml
    """
    from paddlegen.compiler.batch import Workers, workers_for
    from paddlegen.compiler.ownership import discover_trees

    # The parent walks the directories and prints; workers do everything a tree needs (read its
    # manifest and its spec, build it, compare).
    found, problems = discover_trees(Path())
    failed: list[tuple[int, Lines]] = []
    targets: list[Any]
    if specs:  # a directory that cannot be read is the no-SPEC check's to report
        targets, problems, failed = named_targets(specs, only_specs, found)
        work: Any = partial(check_tree, given=kube_version, strict=strict)
    else:
        targets = found
        work = partial(check_found, given=kube_version, strict=strict)
    if output is Format.text:
        report(problems, output)
    if not targets and not problems and not failed:
        say("paddlegen: no output tree below the current directory" if not specs
            else "paddlegen: no paddlegen spec among the files")
    states = {0}
    reported = list(problems)  # in a format other than text, reported at the end
    for state, lines in failed:
        reported += print_lines(lines, output)
        states.add(state)
    with Workers(workers_for(len(targets))) as workers:
        for state, lines in workers.map(work, targets):
            reported += print_lines(lines, output)
            states.add(state)
    if output is not Format.text:
        report(reported, output)
    if problems or EXIT_INVALID in states:
        raise typer.Exit(EXIT_INVALID)  # an invalid spec outweighs drift
    if EXIT_DRIFT in states:
        raise typer.Exit(EXIT_DRIFT)
    if targets and output is Format.text:
        say(f"paddlegen: {plural(len(targets), 'tree')} up to date with "
            f"{'its spec' if len(targets) == 1 else 'their specs'}")


# What checking one tree printed, in order: (True: stdout, False: stderr; the text, or the
# problem its line is), with its state: 0 up to date, EXIT_DRIFT or EXIT_INVALID.
Lines = tuple[tuple[bool, str | Problem], ...]


@dataclass(frozen=True)
class Target:
    """A tree, and the spec to check it against."""

    spec: Path
    out_dir: Path
    record: str | None  # what the manifest records of the spec (None: nothing, as for stdin)
    raw: bytes | None = None  # the spec's bytes, when read already (stdin cannot be read twice)


def named_targets(specs: list[Path], only_specs: bool, trees: list[Path]) -> tuple[
        list[Target], list[Problem], list[tuple[int, Lines]]]:
    """The trees to check for specs named on the command line: each tree below the current
    directory whose manifest records the spec, else the out/ beside the spec (unless its
    manifest records another spec). A spec with neither is reported, never skipped silently; so
    are files that cannot be read. What is found, the problems, and the lines for specs
    without a tree."""
    by_spec = recorded_specs(trees)
    targets: list[Target] = []
    problems: list[Problem] = []
    missing: list[tuple[int, Lines]] = []
    for spec in specs:
        raw, unread = taken(spec, only_specs)
        problems.extend(unread)
        if raw is None:
            continue
        stdin = is_stdin(spec)
        owned = [] if stdin else by_spec.get(from_here(spec), [])
        targets += [Target(spec, out_dir, record, raw if stdin else None)
                    for out_dir, record in owned]
        if not owned:
            target, line = beside(spec, raw if stdin else None, by_spec)
            if target is not None:
                targets.append(target)
            else:
                missing.append((EXIT_DRIFT, ((False, TreeProblem.at(str(spec), DRIFT_RULE,
                                                                     line)),)))
    return targets, problems, missing


def recorded_specs(trees: list[Path]) -> dict[str, list[tuple[Path, str]]]:
    """For each spec the trees' manifests record (as a normalised path from the current
    directory), the trees and their records. Trees that cannot be read are left to `check`
    with no SPEC: here they record nothing."""
    from paddlegen.compiler.ownership import is_written_by_paddlegen, recorded_spec, spec_below
    from paddlegen.compiler.writer import WriteError, read_manifest

    found: dict[str, list[tuple[Path, str]]] = {}
    for out_dir in trees:
        try:
            manifest = read_manifest(out_dir)
        except WriteError:
            continue
        if manifest is None or not is_written_by_paddlegen(list(manifest.lines)):
            continue
        record = recorded_spec(list(manifest.lines)).path
        spec = None if record is None else spec_below(out_dir, record)
        if record is not None and spec is not None:
            found.setdefault(str(spec), []).append((out_dir, record))
    return found


def from_here(path: Path) -> str:
    """A path as discover_trees names what it finds: relative to the current directory."""
    return os.path.normpath(os.path.relpath(path))


def beside(spec: Path, raw: bytes | None,
           by_spec: dict[str, list[tuple[Path, str]]]) -> tuple[Target | None, str]:
    """The out/ beside a spec that no tree records, if it is there and not another spec's tree;
    else why there is nothing to check."""
    out_dir = spec.parent / "out"
    record = recordable_way(spec, out_dir)
    other = next((other for other, trees in by_spec.items()
                  if any(str(tree) == from_here(out_dir) for tree, _ in trees)), None)
    if os.path.isdir(out_dir) and other is None:
        return Target(spec, out_dir, record, raw), ""
    where = f" ({shell_word(out_dir)} is the tree of {shell_word(Path(other))})" if other else ""
    return None, (f"no output tree below the current directory records "
                  f"{shell_word(spec)}{where}; build one: paddlegen build {shell_word(spec)}"
                  f"{' -o DIR' if other else ''}")


def check_found(out_dir: Path, given: str | None, strict: bool) -> tuple[int, Lines]:
    """Check a tree found below the current directory against the spec its manifest records.
    Run in a worker."""
    owner = owning_spec(out_dir)
    if isinstance(owner, str):
        return EXIT_INVALID, ((False, TreeProblem.at(str(out_dir / MANIFEST), TREE_RULE, owner)),)
    return check_tree(owner, given, strict)


def owning_spec(out_dir: Path) -> Target | str:
    """The spec a tree found below the current directory is checked against, read (never
    through a link, never from outside the current directory, and only a paddlegen spec), or
    the one line that says why there is none."""
    from paddlegen.compiler.loader import MAX_BYTES
    from paddlegen.compiler.ownership import is_written_by_paddlegen, recorded_spec, spec_below
    from paddlegen.compiler.writer import WriteError, read_below, read_manifest, shown

    where = out_dir / MANIFEST
    try:
        manifest = read_manifest(out_dir)
    except WriteError as error:
        return str(error)
    lines = [] if manifest is None else list(manifest.lines)
    if manifest is None or not is_written_by_paddlegen(lines):
        what = "empty" if not lines else "without the header a build writes"
        return (f"{shown(where)} is not a manifest paddlegen wrote ({what}), so it marks no "
                f"tree; remove it: rm -- {shell_word(where)}")
    if manifest.present == 0:
        return (f"{shown(where)} lists no file that is there, so it marks no tree; remove it: "
                f"rm -- {shell_word(where)}")
    record = recorded_spec(lines)
    if record.problem:
        return (f"{shown(where)} {record.problem}; restore it from version control, or build the "
                f"tree again from its spec: paddlegen build SPEC -o {shell_word(out_dir)}")
    if record.path is None:
        return legacy_owner(out_dir)
    spec = spec_below(out_dir, record.path)
    if spec is None:
        return (f"{shown(where)} records a spec outside the current directory; run paddlegen "
                "check from a directory that holds both the tree and its spec")
    try:
        raw = read_below(spec, MAX_BYTES)
    except WriteError as error:
        return (f"{shown(out_dir)} records its spec {shown(spec)}, which {error}; paddlegen "
                "reads a recorded spec only as a regular file")
    if raw is None:
        return (f"{shown(out_dir)} was built from {shown(spec)}, which is gone; restore the "
                f"spec, or remove the tree: rm -r -- {shell_word(out_dir)}")
    if not is_spec(raw):
        return (f"{shown(out_dir)} records its spec {shown(spec)}, which is not a paddlegen "
                f"spec; build the tree again from its spec: paddlegen build SPEC -o "
                f"{shell_word(out_dir)}")
    return Target(spec, out_dir, record.path, raw)


def legacy_owner(out_dir: Path) -> Target | str:
    """The spec of a tree whose manifest records none (built from standard input, or by an
    earlier paddlegen): as before, the one spec beside it if the tree is an out/; it is
    compared with a build that records none."""
    specs = specs_beside(out_dir) if out_dir.name == "out" else []
    if len(specs) == 1:
        spec, raw = specs[0]
        return Target(spec, out_dir, None, raw)
    from paddlegen.compiler.writer import shown

    return (f"{shown(out_dir / MANIFEST)} records no spec (an earlier paddlegen, or a spec on "
            f"standard input, built it); build the tree again from its spec: paddlegen build "
            f"SPEC -o {shell_word(out_dir)}")


def specs_beside(out_dir: Path) -> list[tuple[Path, bytes]]:
    """The specs in out_dir's parent, each read as a regular file, never through a link."""
    from paddlegen.compiler.loader import MAX_BYTES
    from paddlegen.compiler.writer import WriteError, read_below

    try:
        with os.scandir(out_dir.parent) as entries:
            names = sorted(entry.name for entry in entries
                           if entry.name.endswith((".yaml", ".yml"))
                           and entry.is_file(follow_symlinks=False))
    except OSError:
        return []
    found = []
    for name in names:
        try:
            raw = read_below(out_dir.parent / name, MAX_BYTES)
        except WriteError:
            continue
        if raw is not None and is_spec(raw):
            found.append((out_dir.parent / name, raw))
    return found


def print_lines(lines: Lines, output: Format = Format.text) -> list[Problem]:
    """Print what checking a tree found. In a format other than text, the problems are returned
    for the report, not printed, and the rest (a diff, a bug's headline) goes to stderr: stdout
    is the report's."""
    if output is not Format.text:
        for _, line in lines:
            if not isinstance(line, Problem):
                for part in line.rstrip("\n").split("\n"):
                    say(part)
        return [line for _, line in lines if isinstance(line, Problem)]
    for to_stdout, line in lines:
        if to_stdout:  # a diff: the tree's files, which anyone can have written
            write_stdout(printable_lines(str(line)))
        else:
            say(str(line))
    return []


def check_tree(target: Target, given: str | None, strict: bool) -> tuple[int, Lines]:
    """Check a tree against a spec, built for the release its manifest records unless `given`
    is: what to print, and the state. `check` runs it in a worker, `build --check` in its own
    process."""
    from paddlegen.compiler.build import ManifestError
    from paddlegen.compiler.build import build as build_spec
    from paddlegen.compiler.writer import WriteError, shown, tree_drift

    spec, out_dir = target.spec, target.out_dir
    try:
        release = kube_version_for(out_dir, given)
    except WriteError as error:
        return EXIT_INVALID, ((False, TreeProblem.at(str(spec), TREE_RULE,
                                                     tree_problem(error, spec, out_dir))),)
    try:
        raw = read_spec(spec) if target.raw is None else target.raw
        result = build_spec(raw, str(spec), release, strict, target.record)
    except SpecError as error:
        return EXIT_INVALID, tuple((False, problem) for problem in error.problems)
    except ManifestError as error:
        return EXIT_INVALID, ((False, bug_line(spec)),
                              *((False, problem) for problem in error.problems))
    warnings = tuple((False, problem) for problem in result.warnings)
    try:
        drift = tree_drift(out_dir, result.artifacts)
    except WriteError as error:
        return EXIT_INVALID, (*warnings, (False, TreeProblem.at(str(spec), TREE_RULE, str(error))))
    if not drift:
        return 0, warnings
    if not drift.build_fixes:  # a build leaves foreign files: it would say "up to date"
        return EXIT_DRIFT, (*warnings, (True, drift.text), (False, TreeProblem.at(
            str(spec), DRIFT_RULE, f"{shown(out_dir)} holds files paddlegen did not write "
            "(above); move them out or remove them")))
    return EXIT_DRIFT, (*warnings, (True, drift.text), (False, TreeProblem.at(
        str(spec), DRIFT_RULE, drifted_message(spec, out_dir, release))))


@app.command(cls=Command,
             short_help="Print the spec's JSON Schema (for editors and other validators).")
def schema() -> None:
    """Print the spec's JSON Schema (for editors and other validators).

    Example: paddlegen schema > paddlegen.schema.json
    """
    from paddlegen.compiler.spec import schema_text

    write_stdout(schema_text())


@app.command(cls=Command, short_help="Print every rule a spec is checked against, in Markdown.")
def rules() -> None:
    """Print the reference of every rule a spec is checked against (Markdown).

    Example: paddlegen rules > docs/rules.md
    """
    from paddlegen.compiler.reference import rules_reference

    write_stdout(rules_reference())


@app.command(cls=Command, short_help="Print the derived values and each trainer pod's commands.")
def explain(
    spec: SpecArgument,
    output: Annotated[ExplainFormat, typer.Option("--format", help="text, or json.")
                      ] = ExplainFormat.text,
) -> None:
    """Print the derived values and every process each trainer pod will run.

    Example: paddlegen explain golden/eks/spec.yaml --format json
    """
    from paddlegen.compiler.build import explain as explain_spec
    from paddlegen.compiler.explain import explanation_text

    try:
        explanation = explain_spec(read_spec(spec), str(spec))
    except SpecError as error:
        report(list(error.problems), Format.text)
        raise typer.Exit(EXIT_INVALID) from None
    write_stdout(json.dumps(explanation.facts, indent=2) + "\n" if output is ExplainFormat.json
                 else explanation_text(explanation))


@app.command(cls=Command, short_help="Write a commented starter spec for a profile.")
def init(
    profile: Annotated[str, typer.Option(
        "--profile", help="A profile: eks (today's path), or another of docs/profiles.md; a "
                         "name that is none lists them.")] = "eks",
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", metavar="FILE|-", show_default=False,
        help="Write the spec to FILE, a new file (its directories are made), its modeline "
             "naming the schema from there. Default: stdout, for a spec in the current "
             "directory.")] = None,
    schema_url: Annotated[str, typer.Option(
        "--schema-url", help="Where editors find the JSON Schema (see `paddlegen schema`): a "
                             "path from the current directory, or a URL.")
    ] = "paddlegen.schema.json",
) -> None:
    """Write a commented starter spec for a profile, with an editor schema modeline.

    Example: paddlegen init --profile eks -o jobs/train/spec.yaml
    """
    from importlib import resources
    from pathlib import PurePath

    from paddlegen.compiler.spec import modeline

    starter = resources.files("paddlegen.profiles").joinpath(f"starters/{profile}.yaml")
    if not starter.is_file():
        from paddlegen.profiles import PROFILES

        if profile not in PROFILES:
            raise fail(f"no profile {quoted(profile)}; the profiles: {', '.join(sorted(PROFILES))}")
        raise fail(f"no starter for profile {quoted(profile)}")
    if output is None or str(output) == "-":
        write_stdout(modeline(schema_url, PurePath(".")) + starter.read_text("utf-8"))
        return
    text = modeline(schema_url, output.parent) + starter.read_text("utf-8")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with output.open("x", encoding="utf-8") as spec:  # never over a spec filled in
            spec.write(text)
    except FileExistsError:
        raise fail(f"{output} exists; init writes a new spec only") from None
    except OSError as error:
        raise fail(f"cannot write {output}: {error.strerror or error}") from None
    say(f"paddlegen: wrote {output}; fill in each <placeholder>")

