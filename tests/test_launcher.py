"""The launcher script of the indexed and kubeflow launchers (compiler/launcher.py), run as a
trainer pod runs it: with a stand-in `paddle` that logs what it is asked, a stand-in resolver
(getent) that answers for the peers' names, and the pserver ports listening here. What it runs
must be exactly what `paddlegen explain` prints."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from paddlegen.compiler.build import build, explain

from conftest import GOLDEN

SPEC = (GOLDEN / "eks" / "spec.yaml").read_text()
PORTS = 4  # portsNum + portsNumForSparse of the golden spec

# `paddle pserver` logs its start, then serves until SIGTERM (and logs that); `paddle train`
# logs its argv and ends as PADDLE_TRAIN_EXIT says, after PADDLE_TRAIN_SECONDS.
PADDLE = """#!{python}
import json, os, signal, sys, time
def log(entry):
    with open(os.environ["PADDLE_LOG"], "a") as out:
        out.write(json.dumps(entry) + "\\n")
log({{"argv": ["paddle", *sys.argv[1:]], "cwd": os.getcwd()}})
if sys.argv[1] == "pserver":
    if os.environ.get("PADDLE_PSERVER_EXIT"):
        sys.exit(int(os.environ["PADDLE_PSERVER_EXIT"]))
    signal.signal(signal.SIGTERM, lambda *_: (log({{"stopped": "pserver"}}), sys.exit(0)))
    while True:
        time.sleep(1)
time.sleep(float(os.environ.get("PADDLE_TRAIN_SECONDS", "0")))
sys.exit(int(os.environ.get("PADDLE_TRAIN_EXIT", "0")))
"""
# ahostsv4's lines: address, socket type, name; only the peers resolve.
GETENT = """#!/bin/sh
[ "$1" = ahostsv4 ] || exit 2
case "$2" in {names}) printf '127.0.0.1       STREAM %s\\n127.0.0.1       DGRAM\\n' "$2";;
  *) exit 2;;
esac
"""

# The script polls (for peers, for the other trainers' marks) with `sleep 2`, as a pod can
# afford to; here every poll takes a tenth of a second, so a test waits for what it waits for,
# not for the next poll. Its bounds are in seconds of the clock ($SECONDS), not in polls.
SLEEP = """#!/bin/sh
exec {sleep} 0.1
"""


@pytest.fixture
def pserver_ports() -> Iterator[int]:
    """A run of PORTS free ports, listening on 127.0.0.1 (as every pserver would)."""
    for _ in range(50):
        listeners = []
        try:
            first = free_port()
            for port in range(first, first + PORTS):
                listener = socket.socket()
                listeners.append(listener)
                listener.bind(("127.0.0.1", port))
                listener.listen(64)
        except OSError:
            for listener in listeners:
                listener.close()
            continue
        yield first
        for listener in listeners:
            listener.close()
        return
    pytest.skip("no run of free ports")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return min(port, 65535 - PORTS)


def spec_text(launcher: str, nodes: int, port: int, job_path: Path) -> bytes:
    text = (SPEC.replace("  launcher: indexed\n", f"  launcher: {launcher}\n")
            .replace("  nodes: 3\n", f"  nodes: {nodes}\n")
            .replace("  gradientServers: 3\n", f"  gradientServers: {nodes}\n")
            .replace("  workerCount: 3\n", f"  workerCount: {nodes}\n")
            .replace("  port: 7164\n", f"  port: {port}\n")
            + f"  jobPath: {job_path}\n")
    return text.encode()


def script_of(raw: bytes) -> str:
    [config_map] = [m.obj for m in build(raw, "spec.yaml").manifests
                    if m.obj["kind"] == "ConfigMap"]
    script: str = config_map["data"]["launch.sh"]
    return script


def stand_ins(directory: Path, names: list[str]) -> Path:
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    real_sleep = shutil.which("sleep")
    assert real_sleep is not None
    for name, text in (("paddle", PADDLE.format(python=sys.executable)),
                       ("getent", GETENT.format(names="|".join(names))),
                       ("sleep", SLEEP.format(sleep=real_sleep))):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    return bin_dir


def job_volume(job_path: Path, nodes: int) -> Path:
    """The shared volume as the data Job leaves it: the trainer config and a part per trainer."""
    job_dir = job_path / "paddle-cluster-job"
    (job_dir / "quick_start").mkdir(parents=True)
    (job_dir / "quick_start" / "trainer_config.lr.py").write_text("# config\n")
    for trainer in range(nodes):
        (job_dir / str(trainer) / "data").mkdir(parents=True)
        (job_dir / str(trainer) / "data" / "train.txt").write_text(f"part {trainer}\n")
    return job_dir


class Trainer:
    """One trainer pod's launcher script, run in a session of its own (as a pod's processes
    are), so whatever it leaves behind is found and ended."""

    def __init__(self, script: Path, trainer: int, bin_dir: Path, log: Path, **env: str) -> None:
        self.log = log
        self.process = subprocess.Popen(
            ["bash", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
            env={"PATH": f"{bin_dir}:/usr/bin:/bin", "TRAINER_ID": str(trainer),
                 "PADDLE_LOG": str(log), "TMPDIR": str(log.parent), **env})

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Its exit code and stderr; TimeoutExpired if it is still running after `timeout`."""
        _, stderr = self.process.communicate(timeout=timeout)
        return self.process.returncode, stderr

    def calls(self) -> list[dict[str, Any]]:
        return calls(self.log)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate()


@pytest.fixture
def trainers() -> Iterator[list[Trainer]]:
    started: list[Trainer] = []
    yield started
    for trainer in started:
        trainer.kill()


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def launcher(tmp_path: Path, nodes: int, port: int, kind: str = "indexed"
             ) -> tuple[dict[str, Any], Path, Path, Path]:
    """The facts explain gives, the job's directory, the script and the stand-ins' directory."""
    raw = spec_text(kind, nodes, port, tmp_path / "efs")
    facts = explain(raw, "spec.yaml").facts
    job_dir = job_volume(tmp_path / "efs", nodes)
    script = tmp_path / "launch.sh"
    script.write_text(script_of(raw))
    return facts, job_dir, script, stand_ins(tmp_path, facts["stableNames"])


def wait_for(condition: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


@pytest.mark.parametrize("kind", ["indexed", "kubeflow"])
@pytest.mark.parametrize("nodes", [2, 3, 5])
def test_the_launcher_runs_exactly_what_explain_prints(
        kind: str, nodes: int, pserver_ports: int, tmp_path: Path,
        trainers: list[Trainer]) -> None:
    facts, job_dir, script, bin_dir = launcher(tmp_path, nodes, pserver_ports, kind)
    trainers += [Trainer(script, i, bin_dir, tmp_path / f"paddle-{i}.log") for i in range(nodes)]
    for trainer_id, trainer in enumerate(trainers):
        code, stderr = trainer.finish()
        assert code == 0, stderr
        *ran, stopped = trainer.calls()
        # the pserver starts in the background: its stand-in may log after the trainer's
        by_command = {call["argv"][1]: call for call in ran}
        assert len(ran) == 2 and by_command.keys() == {"pserver", "train"}
        pserver, train = by_command["pserver"], by_command["train"]
        expected = facts["processes"][trainer_id]
        assert pserver["argv"] == expected["pserver"]["argv"]
        assert train["argv"] == [word.replace("$PSERVERS", facts["pservers"])
                                 for word in expected["trainer"]["argv"]]
        assert stopped == {"stopped": "pserver"}
        # as start.sh: run where the config and this trainer's part were copied
        work = Path(train["cwd"])
        assert (work / "trainer_config.lr.py").is_file()
        assert (work / "data" / "train.txt").read_text() == f"part {trainer_id}\n"
        assert Path(expected["trainer"]["log"]).parent == job_dir / "output" / f"node_{trainer_id}"
        assert Path(expected["trainer"]["log"]).is_file()
    assert facts["pservers"] == ",".join(facts["stableNames"])
    assert len(facts["stableNames"]) == nodes


def test_a_trainer_that_is_done_keeps_its_pserver_until_every_trainer_is(
        pserver_ports: int, tmp_path: Path, trainers: list[Trainer]) -> None:
    _, job_dir, script, bin_dir = launcher(tmp_path, 2, pserver_ports)
    stale = job_dir / "output" / "node_0" / "done"
    stale.parent.mkdir(parents=True)
    stale.touch()  # an earlier run's mark
    trainers.append(Trainer(script, 0, bin_dir, tmp_path / "paddle.log"))
    wait_for(lambda: stale.exists() and len(trainers[0].calls()) == 2, "trainer 0 is done")
    with pytest.raises(subprocess.TimeoutExpired):
        trainers[0].finish(timeout=1)  # trainer 1 is not done: the pserver serves on
    # both ran (the pserver starts in the background: its stand-in may log after the trainer's)
    assert sorted(call["argv"][1] for call in trainers[0].calls()) == ["pserver", "train"]
    (job_dir / "output" / "node_1").mkdir()
    (job_dir / "output" / "node_1" / "done").touch()
    assert trainers[0].finish()[0] == 0
    assert trainers[0].calls()[-1] == {"stopped": "pserver"}


def test_a_mark_of_an_earlier_run_is_removed_before_the_pserver_starts(
        tmp_path: Path, trainers: list[Trainer]) -> None:
    _, job_dir, script, bin_dir = launcher(tmp_path, 2, free_port())  # nothing answers
    stale = job_dir / "output" / "node_1" / "done"
    stale.parent.mkdir(parents=True)
    stale.touch()
    trainers.append(Trainer(script, 1, bin_dir, tmp_path / "paddle.log"))
    wait_for(lambda: bool(trainers[0].calls()), "the pserver starts")
    assert not stale.exists()


def test_a_failing_trainer_fails_the_pod(pserver_ports: int, tmp_path: Path,
                                         trainers: list[Trainer]) -> None:
    _, job_dir, script, bin_dir = launcher(tmp_path, 2, pserver_ports)
    trainers.append(Trainer(script, 1, bin_dir, tmp_path / "paddle.log", PADDLE_TRAIN_EXIT="3"))
    assert trainers[0].finish()[0] == 3  # through `| tee`: pipefail
    assert not (job_dir / "output" / "node_1" / "done").exists()


def test_no_trainer_starts_before_every_pserver_answers(tmp_path: Path,
                                                        trainers: list[Trainer]) -> None:
    facts, _, script, _ = launcher(tmp_path, 2, free_port())  # nothing listens there
    bin_dir = tmp_path / "bin"
    (bin_dir / "getent").write_text(GETENT.format(names=facts["stableNames"][0]))
    # and the second peer does not resolve
    trainers.append(Trainer(script, 0, bin_dir, tmp_path / "paddle.log"))
    wait_for(lambda: bool(trainers[0].calls()), "the pserver starts")
    with pytest.raises(subprocess.TimeoutExpired):
        trainers[0].finish(timeout=1)  # ten polls, and the peer never answers
    assert [call["argv"][1] for call in trainers[0].calls()] == ["pserver"]


def test_a_pserver_that_ends_fails_the_pod_at_once(tmp_path: Path,
                                                   trainers: list[Trainer]) -> None:
    _, _, script, bin_dir = launcher(tmp_path, 2, free_port())
    trainers.append(Trainer(script, 0, bin_dir, tmp_path / "paddle.log",
                            PADDLE_PSERVER_EXIT="1"))
    code, stderr = trainers[0].finish()  # not after the 600 s the peers get
    assert code == 1 and "this pod's pserver has ended" in stderr


def test_sigterm_stops_every_process_of_the_pod(pserver_ports: int, tmp_path: Path,
                                                trainers: list[Trainer]) -> None:
    _, _, script, bin_dir = launcher(tmp_path, 2, pserver_ports)
    trainer = Trainer(script, 0, bin_dir, tmp_path / "paddle.log", PADDLE_TRAIN_SECONDS="600")
    trainers.append(trainer)
    wait_for(lambda: len(trainer.calls()) == 2, "the trainer starts")
    trainer.process.send_signal(signal.SIGTERM)
    code, _ = trainer.finish()
    assert code == 143
    assert trainer.calls()[-1] == {"stopped": "pserver"}  # it ended before the script did
    with pytest.raises(ProcessLookupError):
        os.killpg(trainer.process.pid, 0)  # and so did the trainer


def test_the_script_needs_the_pods_index(tmp_path: Path) -> None:
    raw = spec_text("indexed", 2, 7164, tmp_path / "efs")
    script = tmp_path / "launch.sh"
    script.write_text(script_of(raw))
    result = subprocess.run(["bash", script], capture_output=True, text=True, timeout=30,
                            check=False, env={"PATH": os.environ["PATH"]})
    assert result.returncode != 0 and "TRAINER_ID" in result.stderr
