"""The `paddlegen` command: thin wrappers that read files, call the compiler and report.

Exit codes: 0 ok, 1 drift (`build --check`), 2 invalid input or usage.
Diagnostics go to stderr; stdout carries only what was asked for (manifests, schema, JSON).
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import shlex
import stat
import sys
from collections.abc import Iterable, Iterator
from enum import Enum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paddlegen.compiler.artifact import MANIFEST
from paddlegen.compiler.problems import Position, Problem, SpecError, printable, quoted

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


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def say(line: str) -> None:
    """A line on stderr, file names that are not UTF-8 escaped (they would not encode)."""
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
    stops being YAML."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    events = YAML(typ="safe", pure=True).parse(io.StringIO(text))
    depth, key, is_key = 0, None, True
    try:
        for event in events:
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
    except (YAMLError, ValueError, OverflowError, AssertionError, RecursionError):
        return  # ruamel's errors, as the loader meets them: no spec so far


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
        # UTF-8 bytes whatever the locale: output is the same on every machine
        sys.stdout.buffer.write(printable(text).encode("utf-8"))
        sys.stdout.flush()
    except OSError as error:
        # what is still buffered goes nowhere, so that exiting does not fail on it again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if not isinstance(error, BrokenPipeError):  # `| head`: the reader has what it wanted
            raise fail(f"cannot write to stdout: {error.strerror or error}") from None


def report(problems: list[Problem], output: Format) -> None:
    if output is Format.json:
        write_stdout(json.dumps([p.as_dict() for p in problems], indent=2) + "\n")
    else:
        for problem in problems:
            say(str(problem))


SpecArgument = Annotated[Path, typer.Argument(metavar="SPEC", help="The training spec (YAML).",
                                              show_default=False)]
OutputOption = Annotated[str, typer.Option(
    "-o", "--output", metavar="DIR|-", help="Output directory, or - for the manifests on stdout.")]
CheckOption = Annotated[bool, typer.Option(
    "--check", help="Write nothing; exit 1 with a diff when DIR is not what SPEC compiles to.")]
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Take over files in DIR that paddlegen did not write.")]


def supported_release(value: str | None) -> str | None:
    from paddlegen.compiler.kube_schema import supported_versions

    if value is not None and value not in supported_versions():
        raise typer.BadParameter(f"no schemas for {value}; one of "
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
             artifacts: bool = True) -> Build | None:
    """The build of one spec, or None after reporting why there is none; warnings to stderr.
    Without `artifacts`, the objects alone (no file texts: no runbook, no template engine)."""
    from paddlegen.compiler.build import ManifestError, build, checked

    try:
        result = (build if artifacts else checked)(read_spec(spec), str(spec), kube_version,
                                                   strict)
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


@app.command(cls=Command)
def build(
    spec: SpecArgument,
    output: OutputOption,
    check: CheckOption = False,
    force: ForceOption = False,
    kube_version: KubeVersionOption = None,
    strict: StrictOption = False,
) -> None:
    """Compile SPEC into the output tree (or, with -o -, the manifests as one YAML stream).

    Example: paddlegen build golden/eks/spec.yaml -o out/
    """
    if not output:
        raise fail("-o needs a directory, or - for stdout")
    if check and output == "-":
        raise fail("--check needs an output directory, not -")
    from paddlegen.compiler.writer import WriteError, write_tree

    out_dir = Path(output)
    if check:
        state, lines = check_tree((spec, None), kube_version, strict, out_dir)
        print_lines(lines)
        if state:
            raise typer.Exit(state)
        say(f"paddlegen: {out_dir} is up to date with {spec}")
        return
    result = compiled(spec, strict, kube_version, artifacts=output != "-")
    if result is None:
        raise typer.Exit(EXIT_INVALID)
    if output == "-":
        write_stdout(result.stream())
        return
    try:
        changes = write_tree(out_dir, result.artifacts, force=force)
    except WriteError as error:
        raise fail(str(error)) from None
    for path in changes.removed:
        say(f"removed stale {out_dir / path}")
    say(built_message(spec, out_dir, changes))


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

    return (f"paddlegen: {shown(out_dir)} is not what {shown(spec)} compiles to; to update it: "
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
    "--only-specs", help="Skip files that are not paddlegen specs, and every file of an output "
    "tree (for hooks given every YAML).")]
FormatOption = Annotated[Format, typer.Option(
    "--format", help="text on stderr, or json: the problems as data on stdout.")]


def readable(specs: list[Path], only_specs: bool) -> tuple[list[tuple[Path, bytes]],
                                                            list[Problem]]:
    """Each spec's bytes, and the problems of unreadable ones. With only_specs, files that are
    not specs are skipped, and so is every file of an output tree (its .paddlegen-manifest in
    the file's directory or one above it) without being read."""
    found: list[tuple[Path, bytes]] = []
    problems: list[Problem] = []
    owners: dict[Path, bool] = {}
    for spec in specs:
        raw, unread = taken(spec, only_specs, owners)
        problems.extend(unread)
        if raw is not None:
            found.append((spec, raw))
    return found, problems


def taken(spec: Path, only_specs: bool,
          owners: dict[Path, bool]) -> tuple[bytes | None, tuple[Problem, ...]]:
    """The file's bytes if it is taken (with only_specs: a spec outside any output tree), else
    None, with the problem of a file that cannot be read."""
    if only_specs and in_output_tree(spec, owners):
        return None, ()
    try:
        raw = read_spec(spec)
    except SpecError as error:
        return None, error.problems
    return (raw if not only_specs or is_spec(raw) else None), ()


def in_output_tree(path: Path, owners: dict[Path, bool]) -> bool:
    """Whether path lies in a tree that a .paddlegen-manifest owns: one in a directory above it,
    as far up as the path goes (not above the current directory for a relative path); `owners`
    remembers the directories looked at."""
    if str(path) == "-":
        return False
    for directory in Path(os.path.normpath(path)).parents:
        if directory.name == "..":
            return False
        if directory not in owners:
            owners[directory] = os.path.lexists(directory / MANIFEST)
        if owners[directory]:
            return True
    return False


def discover_specs(root: Path) -> tuple[list[Path], list[Problem]]:
    """The YAML files under root with an out/ beside them, which may be specs that keep their
    tree there (for `check` alone: `taken` reads them), and a problem for each directory that
    cannot be read. A directory with a .paddlegen-manifest is an output tree: nothing in it or
    below it is looked at."""
    skip = {"out", "node_modules", "__pycache__"}
    problems: list[Problem] = []

    def unreadable(error: OSError) -> None:
        problems.append(Problem(Position(os.path.normpath(error.filename), 1, 1), "", "io",
                                f"cannot read this directory: {error.strerror}"))

    candidates = []
    for directory, subdirectories, files in os.walk(root, onerror=unreadable):
        if MANIFEST in files or MANIFEST in subdirectories:
            subdirectories[:] = []
            continue
        # out/ as the listing has it, whatever it is (a symlink too: check refuses it)
        beside_out = "out" in subdirectories or "out" in files
        subdirectories[:] = sorted(d for d in subdirectories
                                   if not d.startswith(".") and d not in skip)
        if beside_out:
            candidates += [Path(directory, name) for name in sorted(files)
                           if name.endswith((".yaml", ".yml"))]
    return candidates, problems


@app.command(cls=Command)
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


@app.command(cls=Command)
def check(
    specs: Annotated[list[Path] | None, typer.Argument(
        metavar="SPEC", help="Spec files; none: every spec below the current directory "
        "with an out/ beside it.", show_default=False)] = None,
    only_specs: OnlySpecsOption = False,
    kube_version: KubeVersionOption = None,
    strict: StrictOption = False,
) -> None:
    """Exit 1 when the out/ directory beside any SPEC is not what SPEC compiles to.

    The drift check of `build --check` for many specs at once, each with its tree in out/
    next to it (the pre-commit hook `paddlegen-check`), each built as its tree was: for the
    --kube-version its manifest records, unless one is given.

    Example: paddlegen check golden/*/spec.yaml
    """
    from paddlegen.compiler.batch import Workers, workers_for

    # Workers do everything a spec needs (read it, decide whether it is one, read its tree's
    # options, build it, compare the tree); the parent walks the directories and prints.
    # Files that cannot be read are reported first, so every file is read once before any
    # spec is checked; the second read is the spec's, in the worker that checks it.
    candidates, unreadable = (list(specs), []) if specs else discover_specs(Path())
    with Workers(workers_for(len(candidates))) as workers:
        found: list[tuple[Path, bytes | None]] = []
        taken_or_not = workers.map(partial(check_candidate, only_specs=only_specs or not specs),
                                   candidates)
        for spec, (is_taken, problems, raw) in zip(candidates, taken_or_not, strict=True):
            unreadable.extend(problems)
            if is_taken:
                found.append((spec, raw))
        report(unreadable, Format.text)
        if not found and not unreadable:
            say("paddlegen: no spec with an out/ beside it below the current directory")
        states = {0}
        for state, lines in workers.map(partial(check_tree, given=kube_version, strict=strict),
                                        found):
            print_lines(lines)
            states.add(state)
    if unreadable or EXIT_INVALID in states:
        raise typer.Exit(EXIT_INVALID)  # an invalid spec outweighs drift
    if EXIT_DRIFT in states:
        raise typer.Exit(EXIT_DRIFT)
    if found:
        say(f"paddlegen: {plural(len(found), 'tree')} up to date with "
            f"{'its spec' if len(found) == 1 else 'their specs'}")


# What checking one tree printed, in order: (True: stdout, False: stderr; the text), with
# its state: 0 up to date, EXIT_DRIFT or EXIT_INVALID.
Lines = tuple[tuple[bool, str], ...]


def check_candidate(spec: Path, only_specs: bool) -> tuple[bool, tuple[Problem, ...],
                                                           bytes | None]:
    """Whether `check` takes the file, why it cannot be read, and its bytes if they cannot be
    read again (standard input). Run in a worker."""
    raw, problems = taken(spec, only_specs, {})
    return raw is not None, problems, raw if str(spec) == "-" else None


def print_lines(lines: Lines) -> None:
    for to_stdout, text in lines:
        if to_stdout:
            write_stdout(text)
        else:
            say(text)


def check_tree(found: tuple[Path, bytes | None], given: str | None, strict: bool,
               out_dir: Path | None = None) -> tuple[int, Lines]:
    """Check a spec's tree (in out/ beside it unless `out_dir` is given), built for the release
    its manifest records unless `given` is: what to print, and the state. `check` runs it in a
    worker, `build --check` in its own process."""
    from paddlegen.compiler.build import ManifestError
    from paddlegen.compiler.build import build as build_spec
    from paddlegen.compiler.writer import WriteError, drift

    spec, raw = found
    out_dir = spec.parent / "out" if out_dir is None else out_dir
    try:
        release = kube_version_for(out_dir, given)
    except WriteError as error:
        return EXIT_INVALID, ((False, f"paddlegen: {tree_problem(error, spec, out_dir)}"),)
    try:
        result = build_spec(read_spec(spec) if raw is None else raw, str(spec), release, strict)
    except SpecError as error:
        return EXIT_INVALID, tuple((False, str(problem)) for problem in error.problems)
    except ManifestError as error:
        return EXIT_INVALID, ((False, bug_line(spec)),
                              *((False, str(problem)) for problem in error.problems))
    warnings = tuple((False, str(problem)) for problem in result.warnings)
    try:
        diff = drift(out_dir, result.artifacts)
    except WriteError as error:
        return EXIT_INVALID, (*warnings, (False, f"paddlegen: {error}"))
    if not diff:
        return 0, warnings
    return EXIT_DRIFT, (*warnings, (True, diff),
                        (False, drifted_message(spec, out_dir, release)))


@app.command(cls=Command)
def schema() -> None:
    """Print the spec's JSON Schema (for editors and other validators).

    Example: paddlegen schema > paddlegen.schema.json
    """
    from paddlegen.compiler.spec import schema_text

    write_stdout(schema_text())


@app.command(cls=Command)
def rules() -> None:
    """Print the reference of every rule a spec is checked against (Markdown).

    Example: paddlegen rules > docs/rules.md
    """
    from paddlegen.compiler.reference import rules_reference

    write_stdout(rules_reference())


@app.command(cls=Command)
def explain(
    spec: SpecArgument,
    output: Annotated[Format, typer.Option("--format", help="text, or json.")] = Format.text,
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
    write_stdout(json.dumps(explanation.facts, indent=2) + "\n" if output is Format.json
                 else explanation_text(explanation))


@app.command(cls=Command)
def init(
    profile: Annotated[str, typer.Option(
        "--profile", help="A profile: eks (today's path), or one README lists.")] = "eks",
    schema_url: Annotated[str, typer.Option(
        "--schema-url", help="Where editors find the JSON Schema (see `paddlegen schema`).")
    ] = "paddlegen.schema.json",
) -> None:
    """Print a commented starter spec for a profile, with an editor schema modeline.

    Example: paddlegen init --profile eks > spec.yaml
    """
    from importlib import resources

    starter = resources.files("paddlegen.profiles").joinpath(f"starters/{profile}.yaml")
    if not starter.is_file():
        raise fail(f"no starter for profile {quoted(profile)}")
    write_stdout(f"# yaml-language-server: $schema={schema_url}\n" + starter.read_text("utf-8"))

