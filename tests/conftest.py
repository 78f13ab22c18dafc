"""Shared fixtures and helpers: the repository's paths, the installed CLI, the golden-update flag,
the hypothesis profile, and what several test files read or run."""

from __future__ import annotations

import contextlib
import locale
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
GOLDEN_SPECS = sorted(GOLDEN.glob("*/spec.yaml"))
# The installed `paddlegen`, as a command line (the console script is tested on its own).
PADDLEGEN = (sys.executable, "-m", "paddlegen.compiler")
SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
# The day rules about support calendars take as today (profiles/eks.py), fixed so that a test's
# warnings do not change with the date it runs on: 2026-11-26, 00:00 UTC.
TODAY_EPOCH = "1795651200"
os.environ["SOURCE_DATE_EPOCH"] = TODAY_EPOCH

# Here, not in strategies.py, so that every test gets it whichever files run and in what order.
settings.register_profile("paddlegen", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("paddlegen")


def example_counts(fast: int, thorough: int) -> list[Any]:
    """max_examples for a property test whose full search takes many seconds, as
    @pytest.mark.parametrize("max_examples", example_counts(...)) with @settings(max_examples=
    max_examples) on a @given function inside: `fast` in the fast part, `thorough` in the
    conformance part (CI runs both; the example database is shared, so a failure the thorough
    search found is tried again first by the fast one)."""
    return [pytest.param(fast, id="fast"),
            pytest.param(thorough, id="thorough", marks=pytest.mark.conformance)]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="Rewrite golden/*/out from golden/*/spec.yaml instead of comparing.")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def run_cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run `paddlegen` in this process, as its entry point runs it (compiler/__main__.py),
    and answer as run_cli_process does: exit code, stdout and stderr as text, and a traceback
    on stderr with exit code 1 if it raised (a child's interpreter prints one).

    For `cwd` and `env` it changes directory and os.environ for the call only; stdin is what
    `-` reads (nothing if None). A child is ~0.5 s of interpreter and imports per call, which
    most tests need not pay. Not SIGINT: main() hands it to os._exit, which would end pytest.
    What only a process shows (signals, closed or full streams, locale and other start-up
    settings, workers of `check`, exit at interpreter shutdown, racing processes) is for
    run_cli_process; an `env` that takes effect only at start-up is refused here, and a call
    from another thread runs in a child (streams, cwd and os.environ are the process's)."""
    startup = sorted(key for key in env or {} if STARTUP_ONLY.fullmatch(key))
    if startup:
        raise ValueError(f"{', '.join(startup)} take effect only as a process starts: "
                         "use run_cli_process")
    if threading.current_thread() is not threading.main_thread():
        return run_cli_process(*args, cwd=cwd, env=env, stdin=stdin)
    from paddlegen.compiler.cli import app

    argv = [str(arg) for arg in args]
    with _directory(cwd), _environment(env or {}), _signal_state():
        result = CliRunner().invoke(app, argv, input=stdin or b"", prog_name="paddlegen",
                                    terminal_width=_help_width())
    stderr = result.stderr_bytes
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # uncaught: what the interpreter prints (typer's pretty exceptions are off)
        stderr += "".join(traceback.format_exception(result.exception)).encode()
        code = 1
    return subprocess.CompletedProcess([*PADDLEGEN, *argv], code, _text(result.stdout_bytes),
                                       _text(stderr))


def run_cli_process(*args: str | Path, cwd: Path | None = None,
                    env: dict[str, str] | None = None,
                    stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `paddlegen` in a child process, as a user would: for what only a
    process shows (see run_cli)."""
    result = subprocess.run(
        [*PADDLEGEN, *map(str, args)],
        cwd=cwd, env={**os.environ, **(env or {})}, input=stdin,
        capture_output=True, timeout=60, check=False,
    )
    return subprocess.CompletedProcess(result.args, result.returncode, _text(result.stdout),
                                       _text(result.stderr))


# Read by the interpreter or the C library as a process starts (PYTHONHASHSEED,
# PYTHONIOENCODING, the locale, the time zone): changing them in this process tests nothing.
STARTUP_ONLY = re.compile(r"PYTHON\w*|LC_\w+|LANG|LANGUAGE|TZ")


def _text(data: bytes) -> str:
    """Bytes as subprocess.run(text=True) decodes a child's output: in the locale's encoding,
    strictly, with universal newlines."""
    return (data.decode(locale.getpreferredencoding(False))
            .replace("\r\n", "\n").replace("\r", "\n"))


def _help_width() -> int:
    """The width click formats help for in a child whose stdout is a pipe: COLUMNS, else 80,
    less 2 (CliRunner would force 80; this process's own terminal may be any width)."""
    columns = os.environ.get("COLUMNS", "")
    return max(min(int(columns) if columns.isdigit() and int(columns) > 0 else 80, 80) - 2, 50)


@contextlib.contextmanager
def _directory(cwd: Path | None) -> Iterator[None]:
    if cwd is None:
        yield
        return
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(previous)


@contextlib.contextmanager
def _environment(overrides: dict[str, str]) -> Iterator[None]:
    """os.environ as the child of run_cli_process starts with it, main()'s default included;
    afterwards exactly as before."""
    saved = dict(os.environ)
    try:
        os.environ.update(overrides)
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        yield
    finally:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        for key, value in saved.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


@contextlib.contextmanager
def _signal_state() -> Iterator[None]:
    """The handlers and the mask paddlegen may change (the writer blocks SIGINT and SIGTERM
    while it commits), put back whatever happens."""
    signals = (signal.SIGINT, signal.SIGTERM)
    handlers = {signum: signal.getsignal(signum) for signum in signals}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for signum, handler in handlers.items():
            if signal.getsignal(signum) is not handler and handler is not None:
                signal.signal(signum, handler)


def kubectl_or_skip() -> str:
    """kubectl's path; the calling test is skipped where it is not installed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    return kubectl


def sh_blocks(markdown: str) -> list[str]:
    """The text of each ```sh block of a markdown document, in order."""
    return SH_BLOCK.findall(markdown)


def tree(directory: Path) -> dict[str, bytes]:
    """Every file below directory, by its relative POSIX path, with its bytes."""
    return {path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file()}


@pytest.fixture
def kube_aws_spec() -> Path:
    return GOLDEN / "kube-aws" / "spec.yaml"


@pytest.fixture(scope="session")
def runbook_log(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[list[str]]]:
    """The stand-ins' log of a golden's runbook run block by block (profile_harness.run_blocks),
    run once per session for all the tests that read it."""
    from profile_harness import run_blocks

    logs: dict[str, list[list[str]]] = {}

    def log(golden: str) -> list[list[str]]:
        if golden not in logs:
            logs[golden] = run_blocks(golden, tmp_path_factory.mktemp(f"runbook-{golden}"))
        return logs[golden]
    return log


def children_of(pid: int) -> list[int]:
    """Processes whose parent is `pid`, ended or not (a zombie has not been reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found
