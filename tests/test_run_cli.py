"""The tests' two ways of running `paddlegen` (conftest.py): in this process, as most tests do,
it answers as the installed command does in a process of its own, and leaves this process as
it found it."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from conftest import GOLDEN, run_cli, run_cli_process

KUBE_AWS = GOLDEN / "kube-aws" / "spec.yaml"


def test_in_process_answers_as_a_process_does(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(KUBE_AWS.read_text().replace("nodes: 3", "nodes: three"))
    for args in (("build", "--help"),  # help formatted for the same width
                 ("validate", bad, KUBE_AWS),  # problems on stderr, exit 2
                 ("build", KUBE_AWS, "-o", "-"),  # bytes written to sys.stdout.buffer
                 ("frobnicate",)):  # a usage error
        in_process, child = run_cli(*args), run_cli_process(*args)
        assert (in_process.returncode, in_process.stdout, in_process.stderr) == (
            child.returncode, child.stdout, child.stderr), args


def test_stdin_cwd_and_env_are_the_calls_own(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from paddlegen.compiler import cli

    seen = []

    def read_spec(path: Path) -> bytes:
        seen.append((os.getcwd(), os.environ.get("PADDLEGEN_TEST_VARIABLE"),
                     os.environ.get("PYDANTIC_DISABLE_PLUGINS")))
        return real_read_spec(path)

    real_read_spec = cli.read_spec
    monkeypatch.setattr(cli, "read_spec", read_spec)
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    (tmp_path / "spec.yaml").write_bytes(KUBE_AWS.read_bytes())
    result = run_cli("build", "-", "-o", "out", cwd=tmp_path, stdin=KUBE_AWS.read_bytes(),
                     env={"PADDLEGEN_TEST_VARIABLE": "set"})
    assert result.returncode == 0, result.stderr
    assert seen == [(str(tmp_path), "set", "__all__")]  # main()'s default too
    assert (tmp_path / "out" / "RUNBOOK.md").is_file()
    assert run_cli("check", cwd=tmp_path).returncode == 0  # it found spec.yaml beside out/


def test_this_process_is_left_as_it_was(tmp_path: Path) -> None:
    before = (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGINT),
              signal.pthread_sigmask(signal.SIG_BLOCK, []), sys.stdout, sys.stderr, sys.stdin)
    run_cli("build", KUBE_AWS, "-o", tmp_path / "out", cwd=tmp_path,
            env={"PADDLEGEN_TEST_VARIABLE": "set"})
    run_cli("validate", tmp_path / "missing.yaml", cwd=tmp_path)
    after = (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGINT),
             signal.pthread_sigmask(signal.SIG_BLOCK, []), sys.stdout, sys.stderr, sys.stdin)
    assert after == before


def test_an_uncaught_exception_is_a_traceback_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    from paddlegen.compiler import cli

    def broken(path: Path) -> bytes:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "read_spec", broken)
    result = run_cli("validate", KUBE_AWS)
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert result.stderr.endswith("RuntimeError: a bug\n")


def test_what_only_a_process_has_is_refused_in_this_one() -> None:
    with pytest.raises(ValueError, match="run_cli_process"):
        run_cli("--version", env={"LC_ALL": "C"})
