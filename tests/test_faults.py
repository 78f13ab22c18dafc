"""Safe under every fault: nothing touched outside out/, nothing leaked, one writer at a time,
crash-consistent, and never a traceback."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paddlegen.compiler import writer
from paddlegen.compiler.build import build
from paddlegen.compiler.ownership import spec_record

from conftest import GOLDEN, PADDLEGEN, children_of, run_cli, run_cli_process

KUBE_AWS = GOLDEN / "kube-aws" / "spec.yaml"  # writes aws/
LOCAL = GOLDEN / "local" / "spec.yaml"  # writes no aws/
ROOT_USER = os.geteuid() == 0  # permissions do not bind root


def snapshot(directory: Path) -> dict[str, object]:
    """Everything below directory, symlinks as links (never followed)."""
    found: dict[str, object] = {}
    for parent, subdirectories, files in os.walk(directory):
        for name in subdirectories + files:
            path = Path(parent) / name
            relative = path.relative_to(directory).as_posix()
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path))
            elif path.is_dir():
                found[relative] = "dir"
            else:
                found[relative] = path.read_bytes()
    return found


def expected_tree(spec: Path, out: Path | None = None) -> dict[str, object]:
    """The tree spec builds (into out: its manifest records the way there; else none)."""
    record = None if out is None else spec_record(spec, out)
    files: dict[str, object] = {a.path: a.text.encode() for a in
                                build(spec.read_bytes(), "spec.yaml", spec_record=record).artifacts}
    for path in list(files):
        for parent in Path(path).parents[:-1]:
            files[parent.as_posix()] = "dir"
    return files


# 1. Nothing outside out/ is touched.

def test_a_symlinked_directory_stops_the_build_before_anything_moves(tmp_path: Path) -> None:
    out, victim, spec = tmp_path / "out", tmp_path / "victim", tmp_path / "spec.yaml"
    shutil.copy(KUBE_AWS, spec)
    assert run_cli("build", spec, "-o", out).returncode == 0
    shutil.rmtree(out / "aws")
    victim.mkdir()
    (victim / "cluster.yaml").write_text("precious")
    (victim / "iam-policy.json").write_text("precious too")
    (out / "aws").symlink_to(victim)
    before = snapshot(out)
    shutil.copy(LOCAL, spec)  # the same spec, of a profile that writes no aws/: stale files
    result = run_cli("build", spec, "-o", out)
    assert result.returncode == 2
    assert "aws is a symlink" in result.stderr and "Traceback" not in result.stderr
    assert snapshot(victim) == {"cluster.yaml": b"precious", "iam-policy.json": b"precious too"}
    assert snapshot(out) == before


def test_a_symlinked_out_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    result = run_cli("build", LOCAL, "-o", tmp_path / "out")
    assert result.returncode == 2 and "is a symlink" in result.stderr
    assert list(elsewhere.iterdir()) == []


# 2. check never reads through a symlink, never shows a file paddlegen does not own.

def job_with_tree(tmp_path: Path) -> Path:
    (tmp_path / "job").mkdir()
    shutil.copy(KUBE_AWS, tmp_path / "job" / "spec.yaml")
    assert run_cli("build", tmp_path / "job" / "spec.yaml", "-o",
                   tmp_path / "job" / "out").returncode == 0
    return tmp_path / "job" / "out"


def test_check_names_a_symlink_in_k8s_and_never_shows_what_it_points_at(tmp_path: Path) -> None:
    out = job_with_tree(tmp_path)
    (out / "k8s" / "zz.yaml").symlink_to("/proc/self/environ")
    # a child, whose /proc/self/environ holds the secret (this process's would not)
    result = run_cli_process("check", cwd=tmp_path,
                             env={"PADDLEGEN_TEST_SECRET": "hunter2-secret"})
    assert result.returncode == 1
    assert ("job/out/k8s/zz.yaml: a symlink, not written by paddlegen; move it out of k8s/ or "
            "remove it: rm -- ") in result.stdout
    assert "hunter2-secret" not in result.stdout + result.stderr


def test_check_of_a_k8s_directory_pointing_at_etc_shows_nothing_of_it(tmp_path: Path) -> None:
    out = job_with_tree(tmp_path)
    shutil.rmtree(out / "k8s")
    (out / "k8s").symlink_to("/etc")
    result = run_cli("check", cwd=tmp_path)
    assert result.returncode == 1
    assert "k8s is a symlink" in result.stdout
    assert "root:" not in result.stdout and "localhost" not in result.stdout


def test_a_symlinked_out_beside_a_spec_is_an_error_not_a_diff(tmp_path: Path) -> None:
    out = job_with_tree(tmp_path)
    shutil.rmtree(out)
    out.symlink_to("/etc")
    # named (with no SPEC, check looks for trees without following a link: none is there)
    result = run_cli("check", "job/spec.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "is a symlink" in result.stderr
    assert result.stdout == ""


def test_the_diff_is_bounded(tmp_path: Path) -> None:
    out = job_with_tree(tmp_path)
    (out / "RUNBOOK.md").write_text("changed by hand\n" * 100_000)
    result = run_cli("build", "--check", KUBE_AWS, "-o", out)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) <= writer.MAX_DIFF_LINES + 1
    assert lines[-1].startswith("... ") and lines[-1].endswith(" more lines of diff")


# 3. One writer at a time.

@pytest.mark.conformance
def test_concurrent_builds_of_two_specs_leave_one_whole_tree(tmp_path: Path) -> None:
    # specs on standard input: their trees record no spec, so that each may replace the other
    # (a tree that records a spec is refused to another's build)
    trees = {spec: expected_tree(spec) for spec in (KUBE_AWS, LOCAL)}
    out = tmp_path / "out"
    delays = random.Random(20).choices([i / 1000 for i in range(0, 151, 10)], k=20)
    for delay in delays:
        first = subprocess.Popen([*PADDLEGEN, "build", "-", "-o", out], stdin=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        assert first.stdin is not None
        first.stdin.write(KUBE_AWS.read_bytes())
        first.stdin.close()
        time.sleep(delay)
        second = run_cli_process("build", "-", "-o", out,  # two processes racing
                                 stdin=LOCAL.read_bytes())
        first.wait(timeout=120)
        assert first.stderr is not None
        first_err = first.stderr.read().decode()
        first.stderr.close()
        assert (first.returncode, second.returncode) == (0, 0), first_err + second.stderr
        [spec] = [spec for spec, tree in trees.items() if snapshot(out) == tree]
        assert writer.drift(out, build(spec.read_bytes(), "spec.yaml").artifacts) == ""
    assert run_cli("build", "--check", "-", "-o", out, stdin=spec.read_bytes()).returncode == 0


def test_a_second_writer_waits_and_then_gives_up_with_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(writer, "LOCK_TIMEOUT_SECONDS", 0.2)
    artifacts = build(LOCAL.read_bytes(), "spec.yaml").artifacts
    with writer.locked(out, exclusive=True), pytest.raises(
            writer.WriteError, match="another paddlegen is writing"):
        writer.write_tree(out, artifacts)
    assert list(out.iterdir()) == []


# 4. Crash consistency: kill -9 after every file operation of a build.

CRASHING_BUILD = """
import json, os, sys
from pathlib import Path
from paddlegen.compiler import writer
from paddlegen.compiler.artifact import Artifact

crash_after, out, artifacts = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
done = 0

def counted(real):
    def operation(*args, **kwargs):
        global done
        result = real(*args, **kwargs)
        done += 1
        if done == crash_after:
            os._exit(137)  # as kill -9: no cleanup, no finally
        return result
    return operation

for name in ("mkdir", "replace", "rename", "unlink", "rmdir", "fsync"):
    setattr(os, name, counted(getattr(os, name)))
writer.write_tree(out, [Artifact(**a) for a in json.loads(artifacts.read_text())])
print(done)
"""


def crashing_build(crash_after: int, out: Path,
                   artifacts: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CRASHING_BUILD, str(crash_after), str(out),
                           str(artifacts)], capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.conformance
def test_a_build_killed_after_any_file_operation_leaves_old_or_new_in_full(
        tmp_path: Path) -> None:
    old = build(KUBE_AWS.read_bytes(), "spec.yaml").artifacts
    new = build(LOCAL.read_bytes(), "spec.yaml").artifacts
    artifacts = tmp_path / "artifacts.json"
    artifacts.write_text(json.dumps([a.__dict__ for a in new]))
    pristine = tmp_path / "pristine"
    writer.write_tree(pristine, old)
    old_tree, new_tree = snapshot(pristine), expected_tree(LOCAL)

    whole = tmp_path / "whole"
    shutil.copytree(pristine, whole)
    operations = int(crashing_build(0, whole, artifacts).stdout)
    assert snapshot(whole) == new_tree and operations > 20
    outcomes = set()
    for k in range(1, operations + 1):
        out = tmp_path / f"crash-{k}"
        shutil.copytree(pristine, out)
        assert crashing_build(k, out, artifacts).returncode == 137
        interrupted = (out / writer.JOURNAL).exists()
        if interrupted:
            assert "an interrupted build" in writer.drift(out, new)
        writer.recover(out)  # what every build does first
        after = snapshot(out)
        assert after in (old_tree, new_tree), f"crash after operation {k}"
        assert not any(name.startswith(".paddlegen-") and name != ".paddlegen-manifest"
                       for name in after), f"crash after operation {k} left {sorted(after)}"
        outcomes.add((interrupted, after == new_tree))
    # crashes before the journal keep the old tree; after it, the build is rolled forward
    assert outcomes == {(False, False), (True, True), (False, True)}


# 5. Never a traceback.

def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    assert "Aborted" not in result.stderr


def test_closed_stdin_and_stdout_are_clean_errors() -> None:
    closed_stdin = subprocess.run(
        [*PADDLEGEN, "validate", "-"], capture_output=True,
        text=True, check=False, preexec_fn=lambda: os.close(0))
    assert closed_stdin.returncode == 2 and "standard input is closed" in closed_stdin.stderr
    no_traceback(closed_stdin)
    closed_stdout = subprocess.run(
        [*PADDLEGEN, "build", str(LOCAL), "-o", "-"],
        stdout=None, stderr=subprocess.PIPE, text=True, check=False,
        preexec_fn=lambda: os.close(1))
    assert closed_stdout.returncode == 2 and "standard output is closed" in closed_stdout.stderr
    no_traceback(closed_stdout)


def test_a_full_disk_on_stdout_is_a_clean_error() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("this system has no /dev/full")
    with open("/dev/full", "w") as full:
        result = subprocess.run([*PADDLEGEN, "validate",
                                 "--format", "json", str(KUBE_AWS)], stdout=full,
                                stderr=subprocess.PIPE, text=True, check=False)
    assert result.returncode == 2 and "cannot write to stdout" in result.stderr
    no_traceback(result)


# The child says it is ready once paddlegen's SIGINT handler is in place; a signal before that
# lands in the interpreter's own start-up, which is Python's to handle, not paddlegen's.
READY_THEN_MAIN = """
import signal
from paddlegen.compiler.__main__ import exit_interrupted, main
signal.signal(signal.SIGINT, exit_interrupted)
print("ready", flush=True)
main()
"""


def test_ctrl_c_at_any_moment_exits_130_without_a_traceback() -> None:
    codes = []
    for delay in (0.0, 0.02, 0.05, 0.1):
        child = subprocess.Popen([sys.executable, "-c", READY_THEN_MAIN, "validate",
                                  str(KUBE_AWS)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        time.sleep(delay)  # anywhere in the run; the outcome may not depend on where
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        no_traceback(subprocess.CompletedProcess(child.args, child.returncode, "", err))
        assert (child.returncode, err) in {(130, "paddlegen: interrupted\n"), (0, err)}
        codes.append(child.returncode)
    assert 130 in codes


@pytest.mark.parametrize("to", ["the process group", "paddlegen alone"])
def test_ctrl_c_during_a_check_on_every_core_leaves_no_worker_behind(tmp_path: Path,
                                                                        to: str) -> None:
    first = tmp_path / "team00"
    first.mkdir()
    shutil.copy(KUBE_AWS, first / "spec.yaml")
    writer.write_tree(first / "out", build(KUBE_AWS.read_bytes(), "spec.yaml").artifacts)
    for index in range(1, 150):  # enough for worker processes (compiler/batch.py)
        shutil.copytree(first, tmp_path / f"team{index:02d}")  # each spec built again by check
    child = subprocess.Popen([*PADDLEGEN, "check"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    deadline = time.monotonic() + 60  # ends as soon as a worker is there
    while not (workers := children_of(child.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    if to == "the process group":
        os.killpg(child.pid, signal.SIGINT)
    else:
        child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert workers, "no worker process was started"
    assert (child.returncode, err) == (130, "paddlegen: interrupted\n")
    deadline = time.monotonic() + 30  # ends as soon as every worker has
    while any(map(running, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if running(pid)]


def running(pid: int) -> bool:
    """Not ended: a zombie has ended, and waits only for whoever adopted it to reap it (init,
    which on some machines does so only every second or so)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def unprivileged(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """paddlegen run by a user whom permissions bind (root reads everything): as nobody, when
    this runs as root."""
    command = [*PADDLEGEN, *args]
    if ROOT_USER:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root, and no setpriv to drop to an unprivileged user")
        command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temporary directory the unprivileged user can enter (pytest's are root's only)."""
    directory = Path(tempfile.mkdtemp())
    directory.chmod(0o755)
    yield directory
    for path in [directory, *directory.rglob("*")]:
        if not path.is_symlink():
            path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    shutil.rmtree(directory)


@pytest.mark.parametrize("make", ["dangling", "looping", "fifo", "unreadable", "directory"])
def test_check_refuses_a_recorded_spec_that_is_not_a_readable_file(shared_tmp: Path,
                                                                   make: str) -> None:
    out = job_with_tree(shared_tmp)
    for path in [shared_tmp, *shared_tmp.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    odd = out.parent / "spec.yaml"  # the spec the tree records
    odd.unlink()
    if make == "dangling":
        odd.symlink_to(shared_tmp / "nowhere.yaml")
    elif make == "looping":
        odd.symlink_to(odd)
    elif make == "fifo":
        os.mkfifo(odd)
    elif make == "unreadable":
        odd.write_text("apiVersion: paddlegen/v1\n")
        odd.chmod(0)
    else:
        odd.mkdir()
    result = unprivileged(["check"], shared_tmp)  # a FIFO must not block it
    no_traceback(result)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("paddlegen: job/out records its spec job/spec.yaml, which "), line
    assert result.stdout == ""


@pytest.mark.parametrize("where", ["subdirectory", "out", "k8s"])
def test_check_reports_an_unreadable_directory(shared_tmp: Path, where: str) -> None:
    out = job_with_tree(shared_tmp)
    for path in [shared_tmp, *shared_tmp.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    closed = {"subdirectory": shared_tmp / "private", "out": out, "k8s": out / "k8s"}[where]
    closed.mkdir(exist_ok=True)
    closed.chmod(0)
    result = unprivileged(["check"], shared_tmp)
    no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""


def test_a_spec_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    result = run_cli("validate", fifo)
    assert result.returncode == 2 and f"{fifo}:1:1: not a regular file [io]" in result.stderr



def test_leftover_staging_is_drift_and_the_next_build_removes_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", LOCAL, "-o", out).returncode == 0
    (out / ".paddlegen-staging-abc12345" / "new").mkdir(parents=True)
    (out / ".paddlegen-staging-abc12345" / "new" / "RUNBOOK.md").write_text("half")
    check = run_cli("build", "--check", LOCAL, "-o", out)
    assert check.returncode == 1
    assert ".paddlegen-staging-abc12345: staging left by an interrupted build" in check.stdout
    assert run_cli("build", LOCAL, "-o", out).returncode == 0
    assert snapshot(out) == expected_tree(LOCAL, out)


def test_a_damaged_journal_stops_the_build(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", LOCAL, "-o", out).returncode == 0
    (out / writer.JOURNAL).write_text('{"staging": "../elsewhere", "install": [], "remove": []}')
    result = run_cli("build", LOCAL, "-o", out)
    assert result.returncode == 2 and "is not a journal paddlegen wrote" in result.stderr
    no_traceback(result)


def test_an_interrupted_build_is_not_finished_through_a_symlink(tmp_path: Path) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim"
    assert run_cli("build", LOCAL, "-o", out).returncode == 0
    victim.mkdir()
    (victim / "cluster.yaml").write_text("precious")
    (out / "aws").symlink_to(victim)
    staging = out / ".paddlegen-staging-abcd1234"
    staging.mkdir()
    identity = [[os.stat(d).st_dev, os.stat(d).st_ino] for d in (out, staging)]
    (out / writer.JOURNAL).write_text(json.dumps(  # bound to this very directory
        {"version": 2, "out": identity[0], "staging": staging.name, "stagingId": identity[1],
         "install": [], "remove": ["aws/cluster.yaml"]}))
    result = run_cli("build", LOCAL, "-o", out)
    assert result.returncode == 2 and "aws is a symlink" in result.stderr
    assert (victim / "cluster.yaml").read_text() == "precious"
