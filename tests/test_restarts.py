"""The gang launchers (`jobset`, `trainjob`) under what a cluster does to a run, with the real
PaddlePaddle 3 across simulated pods wired exactly as the built objects say (tests/podsim.py
plays JobSet v0.12.0, Kubeflow Trainer v2.3.0, the Job controller and the kubelet; the example
script, examples/train_linear.py, checkpoints and resumes):

- no fault: every rank trains to the end, the same parameters everywhere;
- a crash (a pod's container SIGKILLed): the whole gang is made again as the next attempt,
  which resumes from the newest checkpoint and ends with the parameters of an uninterrupted run;
- more crashes than `restarts`: the JobSet fails, nothing of it is left running, and the
  runbook's wait for the run ends with a failure;
- an eviction (DisruptionTarget, then SIGTERM): the script saves where it is, the restart does
  not count against `restarts`, and the run completes; wired without the JobSet rule or without
  the Job's podFailurePolicy, the same eviction fails the run.

Each test waits for what a pod writes (its trainer's step lines) before it acts, and asserts
what happened, never how long it took.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from podsim import (
    RESTARTS_KEY,
    PodResult,
    Simulation,
    claim_dir,
    leftover_processes,
    why_paddle_cannot_run,
)
from ruamel.yaml import YAML

from paddlegen.compiler.build import build

from conftest import GOLDEN, ROOT

pytestmark = [pytest.mark.paddle]
SPEC = GOLDEN / "eks-paddle-kubeflow" / "spec.yaml"  # CPU, on EKS: what this machine can run
CLAIM = "efsvol"  # the shared volume's claim there
STEP_SECONDS = "0.25"  # a pause after each of the script's 40 steps, so that a test can act
CHECKPOINT_EVERY = 5  # the script's default
KILL_AT_STEP = 7  # past the first checkpoint
GRACE_SECONDS = 40  # terminationGracePeriodSeconds: above the launcher's own 30 s
TIMEOUT = 300.0  # seconds: a bound on a whole run, never reached when all goes well
WAIT = 120.0  # seconds: a bound on a wait for a pod's line


@pytest.fixture(autouse=True, scope="module")
def _requirements() -> None:
    reason = why_paddle_cannot_run()
    if reason:
        pytest.skip(reason)


@dataclass(frozen=True)
class Built:
    objects: list[dict[str, Any]]
    runbook: str


def built(launcher: str, nodes: int, restarts: int) -> Built:
    """The golden CPU spec with this launcher, node count and restarts, the script pausing
    after each step; its k8s/ objects and its RUNBOOK.md."""
    spec = YAML(typ="safe").load(SPEC.read_text())
    training = spec["training"]
    training.update(launcher=launcher, nodes=nodes, restarts=restarts,
                    gracePeriodSeconds=GRACE_SECONDS)
    training["args"] = [*training["args"], "--step-seconds", STEP_SECONDS]
    result = build(json.dumps(spec).encode(), "spec.yaml")
    objects = [YAML(typ="safe").load(a.text) for a in result.artifacts
               if a.path.startswith("k8s/")]
    [runbook] = [a.text for a in result.artifacts if a.path == "RUNBOOK.md"]
    return Built(objects, runbook)


def simulation(objects: list[dict[str, Any]], workdir: Path) -> Simulation:
    return Simulation(objects, image_fs={"/workspace": ROOT / "examples"},
                      python=Path(sys.executable), timeout=TIMEOUT, workdir=workdir)


def trainer_log(workdir: Path, pod: str) -> Path:
    """Trainer 0's log of a pod: the launcher's --log_dir, /mnt/shared/linear/logs/<pod>."""
    return claim_dir(workdir, CLAIM) / "linear" / "logs" / pod / "workerlog.0"


def events(line: str) -> dict[str, Any] | None:
    """One of the script's JSON event lines, or None for any other line."""
    if not line.startswith('{"event"'):
        return None
    event: dict[str, Any] = json.loads(line)
    return event


def step_at_least(step: int) -> Callable[[str], bool]:
    def reached(line: str) -> bool:
        event = events(line)
        return event is not None and event["event"] == "step" and event["step"] >= step
    return reached


def script_events(workdir: Path, pod: str) -> list[dict[str, Any]]:
    path = trainer_log(workdir, pod)
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in map(events, lines) if e is not None]


def summaries(workdir: Path) -> list[dict[str, Any]]:
    output = claim_dir(workdir, CLAIM) / "linear" / "output"
    return [json.loads(path.read_text()) for path in sorted(output.glob("rank-*.json"))]


def checkpoints(workdir: Path) -> set[int]:
    directory = claim_dir(workdir, CLAIM) / "linear" / "checkpoints"
    return {int(p.name[5:]) for p in directory.glob("step-*")}


def pod_logs(results: list[PodResult], workdir: Path) -> str:
    return "\n".join(f"--- {r.name} (exit {r.exit_code}, {r.phase})\n{r.log[-1500:]}\n"
                     f"trainer: {script_events(workdir, r.name)[-3:]}" for r in results)


def act_at_step(run: Simulation, workdir: Path, act: Callable[[str], None], *, index: int = 1,
                attempt: int = 0, step: int = KILL_AT_STEP) -> PodResult:
    """Once the pod of this index and attempt has printed a step past `step`, `act` on it."""
    assert run.wait_until(lambda: run.pod(index=index, attempt=attempt) is not None, WAIT), \
        run.events()
    pod = run.pod(index=index, attempt=attempt)
    assert pod is not None
    line = run.wait_for_line(trainer_log(workdir, pod.name), step_at_least(step), WAIT)
    assert line is not None, pod_logs(run.pods(), workdir)
    act(pod.name)
    return pod


def attempts(results: list[PodResult]) -> list[list[PodResult]]:
    """The pods of each attempt, by the restart-attempt label JobSet gave them."""
    count = 1 + max(int(r.labels[RESTARTS_KEY]) for r in results)
    return [[r for r in results if r.labels[RESTARTS_KEY] == str(n)] for n in range(count)]


def assert_attempts_apart(results: list[PodResult]) -> None:
    """Every process of an attempt had ended before any pod of the next one started, and the
    next one's pods have the same hostnames (job-index), other names."""
    runs = attempts(results)
    for old, new in itertools.pairwise(runs):
        assert max(r.ended_at or 0 for r in old) <= min(r.started_at or 0 for r in new)
        assert sorted(r.index or 0 for r in old) == sorted(r.index or 0 for r in new)
        assert not {r.name for r in old} & {r.name for r in new}
    assert leftover_processes(results) == []


def runbook_wait(runbook: str, manifest: str) -> str:
    """What the train phase runs once the run's object (`manifest`) is made: the run's `ended`
    function (defined before it), then it follows pod 0 and waits for the run's end (up to the
    line that closes the phase's subshell)."""
    lines = runbook.splitlines()
    created = lines.index(f'  kubectl create -f "$OUT/k8s/{manifest}"')
    start = lines.index("fi", created) + 1
    end = lines.index(")", start)
    first = max(i for i in range(created) if lines[i] == "ended() {")
    return "\n".join(lines[first:lines.index("}", first) + 1] + lines[start:end]) + "\n"


# A kubectl that answers what that block asks from podsim's status files: `get <kind> <name>
# --ignore-not-found -o name` (whether it is there), `get <kind> <name> -o jsonpath=...` (the
# JSONPath forms `{.status.<field>}` and `{.status.conditions[?(@.<key>=="<value>")].<field>}`,
# several matches space-separated, as kubectl prints them), `get pods -l <selector>` (a table,
# or `-o jsonpath={.items[*].metadata.name}`), `get pod <name> -o jsonpath={.status.phase}`,
# `logs -f <pod>` (its log so far: the run has ended), `describe`. Anything else fails loudly.
KUBECTL = r"""
import json, os, re, sys
from pathlib import Path

STATUS = Path(os.environ["PODSIM_STATUS"])
words = [w for w in sys.argv[1:] if not w.startswith("--namespace=")]
def option(name):
    return words[words.index(name) + 1] if name in words else None
def fail(message, code=99):
    print(message, file=sys.stderr)
    sys.exit(code)
def jsonpath(document, template):
    def one(match):
        path = match.group(1)
        found = re.fullmatch(r'\.status\.conditions\[\?\(@\.(\w+)=="([^"]*)"\)\]\.(\w+)', path)
        if found:
            key, value, field = found.groups()
            return " ".join(str(c[field]) for c in document["status"]["conditions"]
                            if str(c.get(key)) == value)
        if path == ".items[*].metadata.name":
            return " ".join(item["metadata"]["name"] for item in document["items"])
        value = document
        for part in path.strip(".").split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return str(value)
    return re.sub(r"\{([^{}]*)\}", one, template)
def pods(selector):
    wanted = dict(term.split("=", 1) for term in selector.split(",")) if selector else {}
    items = json.loads((STATUS / "pods.json").read_text())["items"]
    return [p for p in items if all(p["metadata"]["labels"].get(k) == v
                                    for k, v in wanted.items())]
verb = words[0] if words else ""
output = option("-o") or ""
if verb == "describe":
    print("Name:", words[2])
elif verb == "logs":
    [pod] = [p for p in pods("") if p["metadata"]["name"] == words[-1]]
    print(Path(pod["log"]).read_text(errors="replace"), end="")
elif verb == "get" and words[1] == "pods":
    found = pods(option("-l"))
    if output.startswith("jsonpath="):
        print(jsonpath({"items": found}, output[len("jsonpath="):]), end="")
    elif not output:
        print("NAME   READY   STATUS")
        for p in found:
            print(p["metadata"]["name"], "0/1", p["status"]["phase"])
    else:
        fail(f"kubectl stand-in: no answer for {sys.argv[1:]}")
elif verb == "get" and words[1] == "pod" and output.startswith("jsonpath="):
    [pod] = [p for p in pods("") if p["metadata"]["name"] == words[2]]
    print(jsonpath(pod, output[len("jsonpath="):]), end="")
elif verb == "get" and output == "name" and "--ignore-not-found" in words:
    there = (STATUS / f"{words[1]}-{words[2]}.json").exists()
    print(f"{words[1]}/{words[2]}" if there else "", end="")
elif verb == "get" and output.startswith("jsonpath="):
    path = STATUS / f"{words[1]}-{words[2]}.json"
    if not path.exists():
        fail(f'Error from server (NotFound): {words[1]} "{words[2]}" not found', 1)
    print(jsonpath(json.loads(path.read_text()), output[len("jsonpath="):]), end="")
else:
    fail(f"kubectl stand-in: no answer for {sys.argv[1:]}")
"""


def run_runbook_wait(block: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    """The block in `bash -euo pipefail`, as a person pastes it, the stand-in first on PATH,
    answering from the status files of the run in `workdir`."""
    stubs = workdir / "runbook-stubs"
    stubs.mkdir()
    kubectl = stubs / "kubectl"
    kubectl.write_text(f"#!{sys.executable}\n{KUBECTL}")
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}",
           "PODSIM_STATUS": str(workdir / "status")}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


@dataclass(frozen=True)
class Outcome:
    """A run that ended: its pods, the JobSet's (or TrainJob's) status, the ranks' summaries."""

    workdir: Path
    results: list[PodResult]
    jobset: dict[str, Any]
    trainjob: dict[str, Any] | None
    ranks: list[dict[str, Any]]


def outcome(run: Simulation, workdir: Path) -> Outcome:
    results = run.results()
    jobset = run.jobset_status()
    assert jobset is not None
    return Outcome(workdir, results, jobset, run.trainjob_status(), summaries(workdir))


def conditions(status: dict[str, Any]) -> list[tuple[str, str]]:
    """(type, reason) of the True conditions."""
    return [(c["type"], c["reason"]) for c in status["conditions"] if c["status"] == "True"]


def assert_completed(done: Outcome, nodes: int, attempt: int) -> None:
    """The last attempt's ranks all trained to the end with the same parameters."""
    last = attempts(done.results)[-1]
    logs = pod_logs(done.results, done.workdir)
    assert [r.exit_code for r in last] == [0] * nodes, logs
    assert done.jobset["terminalState"] == "Completed", (done.jobset, logs)
    assert conditions(done.jobset) == [("Completed", "AllJobsCompleted")]
    assert sorted(r["rank"] for r in done.ranks) == list(range(nodes)), logs
    assert {r["restart_attempt"] for r in done.ranks} == {str(attempt)}
    assert len({r["params_sha256"] for r in done.ranks}) == 1
    assert all(r["world_size"] == nodes for r in done.ranks)


class Uninterrupted:
    """The no-fault JobSet run of each node count, run once per module and kept: its
    parameters are what an interrupted run must end with."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.runs: dict[int, Outcome] = {}

    def __call__(self, nodes: int) -> Outcome:
        if nodes not in self.runs:
            workdir = self.factory.mktemp(f"uninterrupted-{nodes}")
            with simulation(built("jobset", nodes, restarts=0).objects, workdir) as run:
                self.runs[nodes] = outcome(run, workdir)
        return self.runs[nodes]

    def params(self, nodes: int) -> str:
        done = self(nodes)
        assert_completed(done, nodes, attempt=0)
        return str(done.ranks[0]["params_sha256"])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Uninterrupted]:
    yield Uninterrupted(tmp_path_factory)


@pytest.mark.parametrize("nodes", [2, 3])
def test_a_jobset_trains_to_the_end(uninterrupted: Uninterrupted, nodes: int) -> None:
    done = uninterrupted(nodes)
    assert_completed(done, nodes, attempt=0)
    assert (done.jobset["restarts"], done.jobset["restartsCountTowardsMax"]) == (0, 0)
    assert all(r["start_step"] == 0 for r in done.ranks)
    assert len(done.results) == nodes  # one attempt
    assert leftover_processes(done.results) == []
    # the runbook's wait sees the Completed condition and goes on
    waited = run_runbook_wait(runbook_wait(built("jobset", nodes, 0).runbook,
                                           "90-jobset-linear.yaml"), done.workdir)
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.endswith("the run is done\n")


def test_a_crash_restarts_the_whole_gang_from_the_newest_checkpoint(
        tmp_path: Path, uninterrupted: Uninterrupted) -> None:
    nodes = 3
    with simulation(built("jobset", nodes, restarts=2).objects, tmp_path) as run:
        killed = act_at_step(run, tmp_path, run.kill_pod)
        done = outcome(run, tmp_path)
    assert_completed(done, nodes, attempt=1)
    assert (done.jobset["restarts"], done.jobset["restartsCountTowardsMax"]) == (1, 1)
    first, second = attempts(done.results)
    assert [r.exit_code for r in first if r.name == killed.name] == [137]  # SIGKILLed
    assert len(second) == nodes
    assert_attempts_apart(done.results)
    # the newest checkpoint when the crash came: every step before the last printed one was
    # saved by the rank that printed it, the last one perhaps not yet
    last = max(e["step"] for r in first for e in script_events(tmp_path, r.name)
               if e["event"] == "step")
    starts = {r["start_step"] for r in done.ranks}
    assert len(starts) == 1
    [start] = starts
    assert start % CHECKPOINT_EVERY == 0
    assert CHECKPOINT_EVERY * ((last - 1) // CHECKPOINT_EVERY) <= start <= last
    assert start >= CHECKPOINT_EVERY
    assert done.ranks[0]["params_sha256"] == uninterrupted.params(nodes)


def test_more_crashes_than_restarts_fail_the_jobset_and_the_runbooks_wait(
        tmp_path: Path) -> None:
    nodes = 2
    job = built("jobset", nodes, restarts=1)
    with simulation(job.objects, tmp_path) as run:
        act_at_step(run, tmp_path, run.kill_pod)
        act_at_step(run, tmp_path, run.kill_pod, attempt=1, step=1)  # once attempt 1 steps
        done = outcome(run, tmp_path)
    logs = pod_logs(done.results, tmp_path)
    assert done.jobset["terminalState"] == "Failed", (done.jobset, logs)
    assert conditions(done.jobset) == [("Failed", "ReachedMaxRestarts")]
    assert (done.jobset["restarts"], done.jobset["restartsCountTowardsMax"]) == (1, 1)
    assert len(attempts(done.results)) == 2 and len(done.results) == 2 * nodes
    assert done.ranks == []  # no rank got to the end
    assert all(r.phase == "Failed" for r in done.results), logs
    assert_attempts_apart(done.results)  # and nothing of either attempt left running
    waited = run_runbook_wait(runbook_wait(job.runbook, "90-jobset-linear.yaml"), tmp_path)
    assert waited.returncode != 0, (waited.stdout, waited.stderr)
    assert "jobset linear failed" in waited.stderr
    assert "ReachedMaxRestarts" in waited.stderr


def test_an_eviction_saves_and_restarts_without_counting(
        tmp_path: Path, uninterrupted: Uninterrupted) -> None:
    nodes = 3
    with simulation(built("jobset", nodes, restarts=0).objects, tmp_path) as run:
        evicted = act_at_step(run, tmp_path, run.evict_pod)
        done = outcome(run, tmp_path)
    assert_completed(done, nodes, attempt=1)
    assert (done.jobset["restarts"], done.jobset["restartsCountTowardsMax"]) == (1, 0)
    first, _ = attempts(done.results)
    [pod] = [r for r in first if r.name == evicted.name]
    assert pod.conditions == ("DisruptionTarget",) and pod.deleted
    assert pod.exit_code == 15  # Paddle's launcher, after its trainer saved and exited 0
    [terminated] = [e for e in script_events(tmp_path, pod.name) if e["event"] == "terminated"]
    saved = terminated["saved_step"]
    assert saved >= KILL_AT_STEP and saved in checkpoints(tmp_path)
    assert {r["start_step"] for r in done.ranks} == {saved}  # the newest: the one saved then
    assert_attempts_apart(done.results)
    assert done.ranks[0]["params_sha256"] == uninterrupted.params(nodes)


def without_disruption_rule(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    objects = copy.deepcopy(objects)
    policy = next(o for o in objects if o["kind"] == "JobSet")["spec"]["failurePolicy"]
    policy["rules"] = [r for r in policy["rules"] if r["name"] != "DisruptionsDoNotCount"]
    return objects


def without_pod_failure_policy(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    objects = copy.deepcopy(objects)
    for rjob in next(o for o in objects if o["kind"] == "JobSet")["spec"]["replicatedJobs"]:
        del rjob["template"]["spec"]["podFailurePolicy"]
    return objects


@pytest.mark.parametrize("breaking", [without_disruption_rule, without_pod_failure_policy],
                         ids=["no-DisruptionsDoNotCount-rule", "no-podFailurePolicy"])
def test_an_eviction_fails_a_jobset_wired_without_a_part_of_it(
        tmp_path: Path, breaking: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    nodes = 2
    with simulation(breaking(built("jobset", nodes, restarts=0).objects), tmp_path) as run:
        act_at_step(run, tmp_path, run.evict_pod)
        done = outcome(run, tmp_path)
    logs = pod_logs(done.results, tmp_path)
    assert done.jobset["terminalState"] == "Failed", (done.jobset, logs)
    assert conditions(done.jobset) == [("Failed", "ReachedMaxRestarts")]
    assert done.jobset["restarts"] == 0 and len(done.results) == nodes
    assert done.ranks == []
    assert leftover_processes(done.results) == []


def test_a_trainjob_trains_to_the_end(tmp_path: Path, uninterrupted: Uninterrupted) -> None:
    nodes = 2
    with simulation(built("trainjob", nodes, restarts=0).objects, tmp_path) as run:
        done = outcome(run, tmp_path)
    assert_completed(done, nodes, attempt=0)
    assert done.trainjob is not None
    assert conditions(done.trainjob) == [("Complete", "AllJobsCompleted")]
    assert {r.labels["job-name"] for r in done.results} == {"linear-node-0"}
    assert done.ranks[0]["params_sha256"] == uninterrupted.params(nodes)
    assert leftover_processes(done.results) == []


def test_a_trainjob_restarts_after_a_crash(tmp_path: Path, uninterrupted: Uninterrupted) -> None:
    nodes = 2
    with simulation(built("trainjob", nodes, restarts=1).objects, tmp_path) as run:
        act_at_step(run, tmp_path, run.kill_pod)
        done = outcome(run, tmp_path)
    assert_completed(done, nodes, attempt=1)
    assert done.trainjob is not None
    assert conditions(done.trainjob) == [("Complete", "AllJobsCompleted")]
    assert (done.jobset["restarts"], done.jobset["restartsCountTowardsMax"]) == (1, 1)
    assert all(r["start_step"] >= CHECKPOINT_EVERY for r in done.ranks)
    assert_attempts_apart(done.results)
    assert done.ranks[0]["params_sha256"] == uninterrupted.params(nodes)
