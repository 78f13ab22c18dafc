"""The `paddlegen` command: thin wrappers that read files, call the compiler and report.

Exit codes: 0 ok, 1 drift (`build --check`), 2 invalid input or usage.
Diagnostics go to stderr; stdout carries only what was asked for (manifests, schema, JSON).
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from importlib.metadata import version
from pathlib import Path
from typing import Annotated

import typer

from paddlegen.compiler.problems import Position, Problem, SpecError

EXIT_DRIFT = 1
EXIT_INVALID = 2

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
        typer.echo(f"paddlegen {version('paddlegen')}")
        raise typer.Exit()


@app.callback()
def main_options(
    _version: Annotated[bool, typer.Option("--version", callback=show_version, is_eager=True,
                                           help="Print the version and exit.")] = False,
) -> None:
    """paddlegen: one training spec in, every artifact to run it out."""


def fail(message: str) -> typer.Exit:
    typer.echo(f"paddlegen: {message}", err=True)
    return typer.Exit(EXIT_INVALID)


def read_spec(path: Path) -> bytes:
    if str(path) == "-":
        return sys.stdin.buffer.read()
    try:
        return path.read_bytes()
    except OSError as error:
        raise SpecError([Problem(Position(str(path), 1, 1), "", "io",
                                 error.strerror or str(error))]) from None


def report(problems: list[Problem], output: Format) -> None:
    if output is Format.json:
        typer.echo(json.dumps([p.as_dict() for p in problems], indent=2))
    else:
        for problem in problems:
            typer.echo(str(problem), err=True)


SpecArgument = Annotated[Path, typer.Argument(help="The training spec (YAML).",
                                              show_default=False)]
OutputOption = Annotated[str, typer.Option(
    "-o", "--output", metavar="DIR|-", help="Output directory, or - for the manifests on stdout.")]
CheckOption = Annotated[bool, typer.Option(
    "--check", help="Write nothing; exit 1 with a diff when DIR is not what SPEC compiles to.")]
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Take over files in DIR that paddlegen did not write.")]
KubeVersionOption = Annotated[str | None, typer.Option(
    "--kube-version", metavar="1.N",
    help="Check the manifests against this Kubernetes release instead of the spec's.")]


@app.command()
def build(
    spec: SpecArgument,
    output: OutputOption,
    check: CheckOption = False,
    force: ForceOption = False,
    kube_version: KubeVersionOption = None,
) -> None:
    """Compile SPEC into the output tree (or, with -o -, the manifests as one YAML stream).

    Example: paddlegen build golden/kube-aws/spec.yaml -o out/
    """
    from paddlegen.compiler.build import ManifestError
    from paddlegen.compiler.build import build as compile_spec
    from paddlegen.compiler.writer import OwnershipError, drift, write_tree

    try:
        result = compile_spec(read_spec(spec), str(spec), kube_version)
    except SpecError as error:
        report(list(error.problems), Format.text)
        raise typer.Exit(EXIT_INVALID) from None
    except ManifestError as error:
        raise fail("generated objects fail validation:\n" + str(error)) from None
    if output == "-":
        if check:
            raise fail("--check needs an output directory, not -")
        sys.stdout.write(result.stream())
        return
    out_dir = Path(output)
    if check:
        diff = drift(out_dir, result.artifacts)
        if diff:
            sys.stdout.write(diff)
            typer.echo(f"paddlegen: {out_dir} is not what {spec} compiles to", err=True)
            raise typer.Exit(EXIT_DRIFT)
        return
    try:
        removed = write_tree(out_dir, result.artifacts, force=force)
    except OwnershipError as error:
        raise fail(str(error)) from None
    for path in removed:
        typer.echo(f"removed stale {out_dir / path}", err=True)
    typer.echo(f"wrote {len(result.artifacts)} files to {out_dir}", err=True)


@app.command()
def validate(
    specs: Annotated[list[Path], typer.Argument(help="Spec files.", show_default=False)],
    output: Annotated[Format, typer.Option("--format", help="text, or json (problems as data "
                                           "on stdout).")] = Format.text,
) -> None:
    """Validate every SPEC and report every problem of every file; exit 2 if any is invalid.

    Example: paddlegen validate specs/*.yaml
    """
    from paddlegen.compiler.spec import load_spec

    problems: list[Problem] = []
    for spec in specs:
        try:
            load_spec(read_spec(spec), str(spec))
        except SpecError as error:
            problems.extend(error.problems)
    report(problems, output)
    if any(p.severity == "error" for p in problems):
        raise typer.Exit(EXIT_INVALID)


@app.command()
def schema() -> None:
    """Print the spec's JSON Schema (for editors and other validators).

    Example: paddlegen schema > paddlegen.schema.json
    """
    from paddlegen.compiler.spec import schema_text

    sys.stdout.write(schema_text())


def main() -> None:
    app()
