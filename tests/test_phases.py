"""run.sh, the phases of the eks and kubernetes runbooks: what the build makes of RUNBOOK.md's
blocks, and every phase run by it against the stateful stand-ins (tests/runbook_stub.py), each
twice as a person may run it, with waits that never end, and with stacks that fail.

The trees are built afresh from the goldens' specs. The waits pause with `sleep`, which the
shells' BASH_ENV makes advance bash's own clock (profile_harness.FAST_SLEEP), so a bound of an
hour is reached in as many polls as a real one, without the hour.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import GOLDEN, run_cli
from profile_harness import (
    FAST_SLEEP,
    PRINTED_FILE_SYSTEM,
    built,
    fresh_tree,
    goldens_of,
    put_file_system,
    read_log,
    rebuilt,
    spec_values,
    stand_in_env,
)

PHASED = [golden for profile in ("eks", "kubernetes") for golden in goldens_of(profile)]
# The goldens whose phases run against the stand-ins: each launcher, with and without a queue,
# v1 and PaddlePaddle 3, a file system the spec names and one the runbook makes.
RUN = ["eks-paddle", "eks", "eks-kubeflow", "eks-paddle-jobset", "kubernetes",
       "kubernetes-trainjob"]
FENCED = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
PHASE_LINE = re.compile(r"# \./run\.sh ([a-z][a-z-]*)")
# A phase's function in run.sh: up to the `}` before the next function or the dispatch.
FUNCTION = re.compile(r"^phase_(\w+)\(\) \{\n(.*?)^\}\n(?=\n(?:phase_\w+\(\) \{|case ))",
                      re.M | re.S)
# A phase's line of `./run.sh`'s listing (a "bills:" line under it is indented further).
LISTED = re.compile(r"^  ([a-z][a-z-]*) +\S", re.M)
Call = list[str]  # a call the stand-ins logged: its tool, then its argv


def artifact(golden: str, path: str) -> str:
    return next(a.text for a in built(golden).artifacts if a.path == path)


def runbook_blocks(runbook: str) -> list[tuple[str, str]]:
    """Each ```sh block of a runbook: the phase its first line names ("" for none), and its
    text after that line."""
    found = []
    for body in FENCED.findall(runbook):
        first, _, rest = body.partition("\n")
        named = PHASE_LINE.fullmatch(first)
        found.append((named[1] if named else "", rest))
    return found


def script_functions(script: str) -> dict[str, str]:
    """Each phase function of run.sh, by phase, and its body."""
    return {name.replace("_", "-"): body for name, body in FUNCTION.findall(script)}


# --- what the build makes -------------------------------------------------------------------

@pytest.mark.parametrize("golden", PHASED)
def test_the_build_writes_run_sh_executable_and_so_does_the_golden(golden: str,
                                                                     tmp_path: Path) -> None:
    [script] = [a for a in built(golden).artifacts if a.path == "run.sh"]
    assert script.executable
    out = fresh_tree(golden, tmp_path)
    assert os.access(out / "run.sh", os.X_OK)
    committed = GOLDEN / golden / "out" / "run.sh"
    assert committed.is_file() and os.access(committed, os.X_OK), committed


@pytest.mark.parametrize("golden", PHASED)
def test_every_shell_block_of_the_runbook_belongs_to_a_phase(golden: str) -> None:
    blocks = runbook_blocks(artifact(golden, "RUNBOOK.md"))
    assert blocks and all(phase for phase, _ in blocks), [b for p, b in blocks if not p]


@pytest.mark.parametrize("golden", PHASED)
def test_each_phase_function_holds_exactly_the_runbook_blocks_of_its_phase_in_order(
        golden: str) -> None:
    blocks = runbook_blocks(artifact(golden, "RUNBOOK.md"))
    script = artifact(golden, "run.sh")
    functions = script_functions(script)
    phases = list(dict.fromkeys(phase for phase, _ in blocks))
    assert list(functions) == phases
    for phase in phases:
        assert functions[phase] == "".join(text for named, text in blocks if named == phase), \
            phase
    dispatch = re.findall(r"^  ([a-z][a-z-]*)\) phase_(\w+) ;;$", script, re.M)
    assert dispatch == [(phase, phase.replace("-", "_")) for phase in phases]


def run_script(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["./run.sh", *args], cwd=out, capture_output=True, text=True,
                          timeout=30, check=False, env={"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("golden", PHASED)
def test_run_sh_alone_lists_the_phases_in_order_and_marks_what_bills(golden: str,
                                                                      tmp_path: Path) -> None:
    out = fresh_tree(golden, tmp_path)
    listed = run_script(out)
    assert listed.returncode == 0 and listed.stderr == ""
    phases = list(dict.fromkeys(p for p, _ in runbook_blocks((out / "RUNBOOK.md").read_text())))
    assert LISTED.findall(listed.stdout) == phases
    bills = re.findall(r"^  ([a-z-]+) .*\n {4,}bills: (.*)$", listed.stdout, re.M)
    if spec_values(golden)["profile"] == "eks":
        cluster = dict(bills)["cluster"]
        assert re.search(r"about \$\d+\.\d+ an hour", cluster), cluster
        assert "image" not in dict(bills) or "GB-month" in dict(bills)["image"]
    else:
        assert bills == []  # the cluster is the user's: no phase starts a bill


@pytest.mark.parametrize("golden", ["eks-paddle", "kubernetes"])
def test_an_unknown_phase_exits_2_with_the_usage(golden: str, tmp_path: Path) -> None:
    out = fresh_tree(golden, tmp_path)
    result = run_script(out, "teardown")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("Usage: ./run.sh PHASE")
    assert result.stderr.endswith("run.sh: no phase teardown\n")
    # shell-quoted, so what a terminal would act on shows as text (printf %q, any bash)
    escaped = run_script(out, "tear\x1b]0;x\adown")
    assert escaped.returncode == 2
    assert escaped.stderr.endswith("run.sh: no phase $'tear\\E]0;x\\adown'\n")


def test_the_fast_sleep_advances_bash_s_clock_without_waiting(tmp_path: Path) -> None:
    """What every wait of the runs below rests on: BASH_ENV's sleep is a shell function (no
    process, no real pause) that moves $SECONDS on, in subshells too."""
    bash_env = tmp_path / "bash_env.sh"
    bash_env.write_text(FAST_SLEEP)
    result = subprocess.run(["bash", "-c", "( type -t sleep; sleep 3600; sleep 5.5; "
                                           "echo $SECONDS )"],
                            capture_output=True, text=True, check=True,
                            env={"BASH_ENV": str(bash_env), "PATH": "/usr/bin:/bin"})
    kind, seconds = result.stdout.split()
    assert kind == "function" and int(seconds) >= 3605


# --- the phases, run -------------------------------------------------------------------------

@dataclass
class Run:
    """One `./run.sh PHASE`: its result and the calls the stand-ins logged meanwhile."""

    phase: str
    code: int
    stdout: str
    stderr: str
    calls: list[Call]


@dataclass
class World:
    """A tree, its spec, and the stand-ins' world (log, state, home) it runs against."""

    golden: str
    root: Path
    env: dict[str, str]

    @property
    def out(self) -> Path:
        return self.root / "tree" / "out"

    @property
    def spec(self) -> Path:
        return self.root / "tree" / "spec.yaml"

    def calls(self) -> list[Call]:
        return read_log(Path(self.env["STUB_LOG"]))

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(Path(self.env["STUB_STATE"]).read_text())
        return state

    def run(self, phase: str, **stub_env: str) -> Run:
        before = len(self.calls())
        result = subprocess.run(["./run.sh", phase], cwd=self.out, env={**self.env, **stub_env},
                                capture_output=True, text=True, timeout=300, check=False,
                                start_new_session=True)  # a Ctrl-C (SIGINT) reaches run.sh alone
        assert "unbound variable" not in result.stderr, result.stderr
        assert "stub: no answer" not in result.stderr, result.stderr
        return Run(phase, result.returncode, result.stdout, result.stderr,
                   self.calls()[before:])

    def copy(self, root: Path) -> World:
        """The world as it is, copied under `root` (the stand-ins stay where they are)."""
        shutil.copytree(self.root, root, symlinks=True,
                        ignore=shutil.ignore_patterns("stubs"))
        env = {key: value.replace(str(self.root), str(root)) if key != "PATH" else value
               for key, value in self.env.items()}
        return World(self.golden, root, env)


def new_world(golden: str, root: Path) -> World:
    fresh_tree(golden, root / "tree")
    return World(golden, root, stand_in_env(spec_values(golden), root,
                                            root / "tree" / "spec.yaml"))


def phases_of(world: World) -> list[str]:
    """The phases `./run.sh` lists, in order."""
    listed = run_script(world.out)
    assert listed.returncode == 0, listed.stderr
    return LISTED.findall(listed.stdout)


def made_file_system(world: World, run: Run) -> str | None:
    """The file system a storage phase printed for the spec, if it did."""
    printed = PRINTED_FILE_SYSTEM.search(run.stderr)
    return printed[1] if printed else None


def into_the_spec(world: World, file_system: str) -> None:
    """What the storage phase asks: its file system into the spec, the tree rebuilt and checked
    (`paddlegen build`, `paddlegen build --check`)."""
    put_file_system(world.spec, file_system)
    rebuilt(world.spec)
    checked = run_cli("build", "--check", world.spec, "-o", world.out)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def run_ok(world: World, phase: str, **stub_env: str) -> Run:
    done = world.run(phase, **stub_env)
    assert done.code == 0, f"{world.golden}: {phase} failed:\n{done.stderr}"
    return done


def run_once(world: World, phase: str) -> Run:
    """The phase run as a person runs it: where it prints the file system for the spec, that
    goes into the spec, and the phase runs again; it must end at 0."""
    done = world.run(phase)
    printed = made_file_system(world, done)
    if printed and done.code != 0:
        into_the_spec(world, printed)
        done = world.run(phase)
    assert done.code == 0, f"{world.golden}: {phase} failed:\n{done.stderr}"
    return done


# --- the log, read -------------------------------------------------------------------------

def words(call: Call) -> list[str]:
    """A call without kubectl's --namespace, which may stand anywhere."""
    return [w for w in call if not w.startswith("--namespace=")]


def is_call(call: Call, tool: str, *fragment: str) -> bool:
    """Whether the call is of `tool` and holds `fragment` as consecutive words."""
    argv = words(call)
    n = len(fragment)
    return argv[0] == tool and any(argv[i:i + n] == list(fragment) for i in range(len(argv)))


def where(calls: list[Call], tool: str, *fragment: str) -> list[int]:
    return [i for i, call in enumerate(calls) if is_call(call, tool, *fragment)]


def run_kind_and_name(world: World) -> tuple[str, str]:
    """The kind (as kubectl names it) and name of the tree's run: its last manifest."""
    run = built(world.golden).manifests[-1].obj
    return run["kind"].lower(), run["metadata"]["name"]


def run_file(world: World) -> str:
    return str(world.out / built(world.golden).manifests[-1].path)


def creates_of_the_run(run: Run, world: World) -> list[int]:
    return where(run.calls, "kubectl", "create", "-f", run_file(world))


def deletes_of_the_run(run: Run, world: World) -> list[int]:
    kind, name = run_kind_and_name(world)
    return where(run.calls, "kubectl", "delete", kind, name)


# What the cloud's tear-down calls are called.
AWS_TEARDOWN = {"delete-stack", "delete-file-system", "delete-log-group"}


def tears_down(call: Call, helper: str) -> bool:
    """Whether the call deletes something: the tree's objects, a stack, the file system, the
    cluster, the log group (not the helper pod the copy makes and removes)."""
    argv = words(call)
    return ((argv[0] == "kubectl" and "delete" in argv and helper not in argv)
            or (argv[0] == "aws" and bool(AWS_TEARDOWN & set(argv[2:3])))
            or argv[:2] == ["eksctl", "delete"])


def teardown_calls(calls: list[Call], helper: str) -> list[int]:
    return [i for i, call in enumerate(calls) if tears_down(call, helper)]


def copy_helper(world: World) -> str:
    """The name of the pod the output is copied through (the down block's create -f -)."""
    script = (world.out / "run.sh").read_text()
    down = script_functions(script)["down"]
    found = re.search(r"exec (\S+) -- tar", down)
    assert found, down
    return found[1]


def is_v1(golden: str) -> bool:
    framework: str = spec_values(golden)["training"].get("framework", "paddle")
    return framework == "paddle-v1"


# --- every phase, twice ---------------------------------------------------------------------

@pytest.mark.conformance
@pytest.mark.parametrize("golden", RUN)
def test_every_phase_runs_twice_then_down_survives_a_cut_and_iam_down_ends_it(
        golden: str, tmp_path: Path) -> None:
    """Each phase but down twice in a row, exit 0 both times (the second finds what the first
    made, as the real tools answer); then down cut short by a failed `eksctl delete cluster`,
    down again, which completes, and once more, which finds nothing; then iam-down, twice."""
    world = new_world(golden, tmp_path / "world")
    for phase in phases_of(world):
        if phase in ("down", "iam-down"):
            continue
        first, second = world.run(phase), world.run(phase)
        printed = made_file_system(world, first)
        if printed:  # the stack made one: the phase stops, the same both times, with its id
            assert "fileSystemId" not in spec_values(golden)["storage"]["efs"]
            for done in (first, second):
                assert done.code != 0 and made_file_system(world, done) == printed
                assert done.stderr.endswith("go on with the rebuilt run.sh\n"), done.stderr
            into_the_spec(world, printed)
            first, second = world.run(phase), world.run(phase)
        for done in (first, second):
            assert done.code == 0, f"{golden}: {phase} failed:\n{done.stderr}"
        assert_second_run(world, phase, first, second)
    assert_down(world)
    calls = world.calls()
    assert not where(calls, "aws", "iam", "create-access-key")


def assert_second_run(world: World, phase: str, first: Run, second: Run) -> None:
    """What the second run of a phase finds made, and does not make again."""
    if phase == "iam":
        assert where(first.calls, "aws", "iam", "create-role")
        assert not where(second.calls, "aws", "iam", "create-role")
        assert not where(second.calls, "aws", "iam", "create-group")
    if phase == "image" and where(first.calls, "aws", "ecr", "describe-repositories"):
        assert len(where(first.calls, "aws", "ecr", "create-repository")) == 1
        assert not where(second.calls, "aws", "ecr", "create-repository")
    if phase == "cluster" and where(first.calls, "eksctl", "create", "cluster"):
        assert not where(second.calls, "eksctl", "create", "cluster")
        assert where(second.calls, "eksctl", "create", "nodegroup")
        assert "existing nodegroup(s) (trainers) will be excluded" in second.stdout
    if phase == "storage":
        assert "No changes to deploy" in second.stdout
    if phase == "controllers":
        assert not [c for c in second.calls if is_call(c, "kubectl", "apply", "--server-side")]
    if phase == "train":
        # the first made the run; it ended, so the second deletes it and makes a fresh one
        assert len(creates_of_the_run(first, world)) == 1
        [deleted] = deletes_of_the_run(second, world)
        [remade] = creates_of_the_run(second, world)
        assert deleted < remade
        assert "the run is done" in second.stdout or is_v1(world.golden)
    if phase == "stop":
        assert deletes_of_the_run(first, world)
        assert not where(first.calls, "eksctl") and not [
            c for c in first.calls if c[:3] == ["aws", "cloudformation", "delete-stack"]]
        assert "is stopped" in second.stdout
        kind, name = run_kind_and_name(world)
        state = world.state()
        assert not [o for o in state["objects"].values()
                    if o["kind"].lower() == kind and o["name"] == name]
        if spec_values(world.golden)["profile"] == "eks":
            assert state["clusters"] and state["api"], "stop took the cluster"


def assert_down(world: World) -> None:
    """down cut short, then down again, and once more; then iam-down twice. The output is
    copied before anything is torn down; the file system goes only if the runbook's stack made
    it; nothing is left."""
    eks = spec_values(world.golden)["profile"] == "eks"
    helper = copy_helper(world)
    if eks:
        cut = world.run("down", STUB_FAIL="eksctl-delete-cluster")
        assert cut.code != 0 and "the failed events of the stack " in cut.stderr
        assert where(cut.calls, "aws", "cloudformation", "describe-stack-events")
        assert world.state()["clusters"], "the cut down deleted the cluster"
        assert_copied_first(cut, helper)
        again = run_ok(world, "down")  # the claim went with the cut one: its copy stands
        assert "stands" in again.stdout and not where(again.calls, "kubectl", "exec")
        assert where(again.calls, "eksctl", "delete", "cluster")
    else:
        again = run_ok(world, "down")
        assert_copied_first(again, helper)
    before = {**world.state(), "counter": 0}
    last = run_ok(world, "down")  # nothing left: each step finds its part gone
    state = world.state()
    assert {**state, "counter": 0} == before
    assert not where(last.calls, "kubectl", "exec") and not where(last.calls, "eksctl")
    if eks:
        run_ok(world, "iam-down")
        assert not where(run_ok(world, "iam-down").calls, "aws", "iam", "delete-role")
        state = world.state()
        assert (state["clusters"], state["stacks"], state["roles"], state["groups"],
                state["log_groups"]) == ({}, {}, {}, {}, [])
        assert_file_system_kept_or_deleted(world)
    else:  # the tree's objects and their pods are gone; the cluster's own stay
        made = {(m.obj["kind"], m.obj["metadata"]["name"]) for m in built(world.golden).manifests}
        left = {(o["kind"], o["name"]) for o in state["objects"].values()}
        assert made & left == set() and not [k for k in left if k[0] == "Pod"], left
        assert ("Namespace", spec_values(world.golden)["metadata"]["namespace"]) in left


def assert_copied_first(down: Run, helper: str) -> None:
    """The output is copied off the shared volume (kubectl exec ... tar) before the first call
    that tears anything down."""
    [copied] = where(down.calls, "kubectl", "exec", helper, "--", "tar")
    torn = teardown_calls(down.calls, helper)
    assert torn and copied < min(torn), (copied, torn)


def assert_file_system_kept_or_deleted(world: World) -> None:
    """The runbook's stack made the file system (its owner tag): deleted; the spec's own: kept."""
    calls = world.calls()
    deleted = [c for c in calls if c[1:3] == ["efs", "delete-file-system"]]
    given = spec_values(world.golden)["storage"]["efs"].get("fileSystemId")
    if given:
        assert deleted == [] and given in world.state()["file_systems"]
    else:
        assert len(deleted) == 1 and world.state()["file_systems"] == {}


# A world as it is just before a phase: (golden, phase, where to copy it) -> the copy.
BeforePhase = Callable[[str, str, Path], World]


@pytest.fixture(scope="session")
def before(tmp_path_factory: pytest.TempPathFactory) -> BeforePhase:
    """The world of a golden just before each of its phases, each phase run once before: one
    pass a golden, copied for each test that starts there."""
    frozen: dict[str, dict[str, World]] = {}

    def world_before(golden: str, phase: str, root: Path) -> World:
        if golden not in frozen:
            base = tmp_path_factory.mktemp(f"phases-{golden}")
            world, frozen[golden] = new_world(golden, base / "world"), {}
            for each in phases_of(world):
                frozen[golden][each] = world.copy(base / f"before-{each}")
                run_once(world, each)
        return frozen[golden][phase].copy(root)
    return world_before


# --- a run that is on, one that failed, one stopped ----------------------------------------

@pytest.mark.conformance
@pytest.mark.parametrize("golden", RUN)
def test_train_follows_a_run_that_is_on_and_starts_afresh_after_a_failure_or_a_stop(
        golden: str, before: BeforePhase, tmp_path: Path) -> None:
    """Interrupted while it follows the log (Ctrl-C), the run goes on, and train again follows
    it: nothing made, nothing deleted. A run that failed is deleted and made afresh by the next
    train; so is one stopped, which leaves nothing to delete."""
    world = before(golden, "train", tmp_path / "world")
    on = {"STUB_RUN_POLLS": "99"}  # it runs until its log is followed to the end
    cut = world.run("train", STUB_FOLLOW="interrupt", **on)
    assert cut.code != 0 and len(creates_of_the_run(cut, world)) == 1
    status = run_ok(world, "status", **on)
    assert "is on, and holds its nodes" in status.stdout
    followed = run_ok(world, "train", **on)
    assert "runs already: following it" in followed.stdout
    assert not creates_of_the_run(followed, world) and not deletes_of_the_run(followed, world)

    failed = world.run("train", STUB_RUN_END="failed")
    [deleted], [made] = deletes_of_the_run(failed, world), creates_of_the_run(failed, world)
    assert deleted < made
    if is_v1(golden):  # v1's train follows the first trainer's log, which ends either way
        assert failed.code == 0
        assert "has ended: failed" in run_ok(world, "status").stdout
    else:
        kind, name = run_kind_and_name(world)
        assert failed.code != 0 and f"{kind} {name} failed: " in failed.stderr
    again = run_ok(world, "train")
    assert "the last run failed: it is deleted, and a fresh one starts" in again.stdout
    [deleted], [made] = deletes_of_the_run(again, world), creates_of_the_run(again, world)
    assert deleted < made

    run_ok(world, "stop")
    fresh = run_ok(world, "train")
    assert len(creates_of_the_run(fresh, world)) == 1 and not deletes_of_the_run(fresh, world)


@pytest.mark.conformance
@pytest.mark.parametrize("golden", [golden for golden in RUN if not is_v1(golden)])
def test_a_run_deleted_while_train_follows_it_ends_the_wait_non_zero(
        golden: str, before: BeforePhase, tmp_path: Path) -> None:
    """Someone stops the run (`./run.sh stop` in another terminal) while train follows it: the
    run and its pods go, and train's wait ends at once, saying so, instead of waiting out its
    bound of days for an end that cannot come."""
    world = before(golden, "train", tmp_path / "world")
    done = world.run("train", STUB_RUN_END="deleted")
    kind, name = run_kind_and_name(world)
    assert done.code != 0
    assert done.stderr.endswith(f"{kind} {name} was deleted before it ended\n"), done.stderr
    assert "what explains it" not in done.stderr  # no bound ran out
    asked = [call for call in done.calls if "--ignore-not-found" in call and "name" in call]
    assert asked and asked[-1] == done.calls[-1]  # the last call: is it there?


# --- waits that never end -------------------------------------------------------------------

WAITS = ("deadline=$((SECONDS +", "rollout status", "--timeout")


def waiting_phases(golden: str) -> list[str]:
    """The phases with a block that waits (a bounded poll, a rollout, a --timeout)."""
    return [phase for phase, body in script_functions(artifact(golden, "run.sh")).items()
            if any(wait in body for wait in WAITS)]


def never_ready_cases() -> list[Any]:
    """Each waiting phase with nothing ready; then what only one kind of not-ready reaches: the
    webhooks' dry runs (after rollouts that end), pods that never go once deleted (after a copy
    that ends), a run whose pods never appear (a queue waits a day for them), and a run that
    never ends (its bound is days: those two on a clock that runs fast, LONG_WAITS)."""
    cases = []
    for golden in RUN:
        functions = script_functions(artifact(golden, "run.sh"))
        for phase in waiting_phases(golden):
            cases.append(pytest.param(golden, phase, "1", id=f"{golden}-{phase}"))
            if "--dry-run=server" in functions[phase]:
                cases.append(pytest.param(golden, phase, "webhooks",
                                          id=f"{golden}-{phase}-webhooks"))
        cases.append(pytest.param(golden, "down", "deletions", id=f"{golden}-down-deletions"))
        cases.append(pytest.param(golden, "train", "admission", id=f"{golden}-train-admission"))
        if "until ended; do" in functions["train"]:  # PaddlePaddle 3's: its end is waited for
            cases.append(pytest.param(golden, "train", "runs", id=f"{golden}-train-run-end"))
    return cases


# The kinds of not-ready whose wait is bounded by days: a pause of the fast clock is this many.
LONG_WAITS, LONG_CLOCK_RATE = ("admission", "runs"), "100"


def substitutions(text: str) -> list[str]:
    """The commands of each $(...) in a shell text (quotes inside them kept whole)."""
    found, start = [], text.find("$(")
    while start != -1:
        depth, i, quote = 1, start + 2, ""
        while depth:
            char = text[i]
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char in "()":
                depth += 1 if char == "(" else -1
            i += 1
        found.append(text[start + 2:i - 1])
        start = text.find("$(", i)
    return found


def pattern(command: str) -> list[str]:
    """A command of the runbook as the stand-ins log it: its words, a word with a shell
    variable standing for any (redirections and a pipe's later commands left out)."""
    command = re.sub(r" (2>/dev/null|>&2)| \|\| true", "", command).split(" | ")[0]
    return ["*" if "$" in word else word for word in shlex.split(command)]


def matches(call: Call, command: list[str]) -> bool:
    return len(call) == len(command) and all(c in ("*", w) for w, c in zip(call, command,
                                                                            strict=True))


BOUNDED = re.compile(
    r"deadline=\$\(\(SECONDS \+ (\d+)\)\) pause=5\n\s*until (.*?); do\n"
    r"\s*if \[ \"\$SECONDS\" -ge \"\$deadline\" \]; then\n\s*echo (.*?) >&2\n(.*?)\n\s*false\n",
    re.S)
ROLLOUT = re.compile(r"^(kubectl [^\n]*rollout status \S+ --timeout=(\d+)s) \|\| \{\n(.*?)\n"
                     r"\s*false\n", re.M | re.S)


def assert_ends_with_its_diagnosis(world: World, phase: str, done: Run) -> str:
    """The wait that ran out said what it waited for and its bound, then ran the commands that
    explain it, after its last poll, and nothing else; the phase failed. Which wait it was."""
    assert done.code != 0, done.stdout
    # what explains it is there to be described
    assert "Error from server (NotFound)" not in done.stderr, done.stderr
    body = script_functions((world.out / "run.sh").read_text())[phase]
    stated = re.search(r"^(.*) after (\d+) s; what explains it:$", done.stderr, re.M)
    if stated:
        [(seconds, condition, diagnosis)] = [
            (int(seconds), condition, diagnosis) for seconds, condition, told, diagnosis
            in BOUNDED.findall(body) if shlex.split(told)[0] == stated[0]]
        assert int(stated[2]) == seconds
        commands = [pattern(line) for line in diagnosis.strip().splitlines()]
        polls = [pattern(c) for c in substitutions(condition)]
        for function in ("ended", "gone"):  # the shell functions the condition calls
            if re.search(rf"\b{function}\b", condition):
                start = body.index(f"{function}() {{")
                polls += [pattern(c) for c in substitutions(body[start:body.index("\n}\n", start)])]
        tail = done.calls[-len(commands):]
        assert all(matches(c, p) for c, p in zip(tail, commands, strict=True)), (tail, commands)
        last_poll = done.calls[-len(commands) - 1]
        assert any(matches(last_poll, p) for p in polls), (last_poll, polls)
        return "bounded"
    if "error: timed out waiting for the condition" in done.stderr:
        [(_, seconds, diagnosis)] = [found for found in ROLLOUT.findall(body)
                                     if matches(done.calls[-3], pattern(found[0]))]
        commands = [pattern(line) for line in diagnosis.strip().splitlines()]
        assert [matches(c, p) for c, p in zip(done.calls[-2:], commands, strict=True)] == [
            True, True]
        assert int(seconds) > 0
        return "rollout"
    if "admitted no dry run in" in done.stderr:
        tries = [c for c in done.calls if "--dry-run=server" in c]
        assert len(tries) == 60 and done.calls[-2] == tries[-1]  # 60 tries, 5 s apart
        [namespace] = re.findall(r"admitted no dry run in 300 s; the pods and events of (\S+):",
                                 done.stderr)[-1:]
        assert done.calls[-1] == ["kubectl", f"--namespace={namespace}", "get", "pods,events"]
        return "webhooks"
    if "no node ran the image's CUDA check within 1200 s" in done.stderr:
        polls = [c for c in done.calls if c[-1] == "jsonpath={.status.phase}"]
        # a poll every 5 s until the bound, 1200 s (of which the test's own seconds are real)
        assert len(polls) * 5 >= 1200 - 60
        assert [words(c)[1] for c in done.calls[-3:]] == ["describe", "logs", "delete"]
        assert done.calls[-4] == polls[-1]
        return "cuda"
    raise AssertionError(f"{phase}: no wait ran out:\n{done.stderr}")


@pytest.mark.conformance
@pytest.mark.parametrize(("golden", "phase", "not_ready"), never_ready_cases())
def test_every_wait_ends_with_its_diagnosis_and_a_non_zero_exit(
        golden: str, phase: str, not_ready: str, before: BeforePhase, tmp_path: Path) -> None:
    world = before(golden, phase, tmp_path / "world")
    rate = LONG_CLOCK_RATE if not_ready in LONG_WAITS else "1"
    done = world.run(phase, STUB_NEVER_READY=not_ready, TEST_CLOCK_RATE=rate)
    kind = assert_ends_with_its_diagnosis(world, phase, done)
    assert kind == "webhooks" if not_ready == "webhooks" else kind != "webhooks"
    if phase == "down":  # a copy that never starts stops down before anything is torn down
        torn = teardown_calls(done.calls, copy_helper(world))
        if not_ready == "1":
            assert torn == []
        else:
            assert where(done.calls, "kubectl", "exec")


# --- stacks that fail -----------------------------------------------------------------------

EKS_RUN = [golden for golden in RUN if spec_values(golden)["profile"] == "eks"]


def cluster_name(golden: str) -> str:
    name: str = spec_values(golden)["cluster"]["name"]
    return name


@pytest.mark.conformance
@pytest.mark.parametrize("golden", EKS_RUN)
def test_a_stack_that_fails_prints_its_failed_events_and_ends_the_phase(
        golden: str, before: BeforePhase, tmp_path: Path) -> None:
    """The file system's stack rolls back (`aws cloudformation deploy` exits 255), and so does
    eksctl's cluster stack: each phase prints the stack's failed events and ends there; no
    kubectl call follows a cluster that was not made."""
    storage = before(golden, "storage", tmp_path / "storage")
    done = storage.run("storage", STUB_FAIL="cloudformation-deploy")
    stack = f"{cluster_name(golden)}-efs"
    assert done.code != 0 and "Failed to create/update the stack" in done.stderr
    assert f"the failed events of the stack {stack}:\nMountTarget1\t" in done.stderr
    [deploy] = where(done.calls, "aws", "cloudformation", "deploy")
    [events] = where(done.calls, "aws", "cloudformation", "describe-stack-events")
    assert deploy < events == len(done.calls) - 1

    cluster = before(golden, "cluster", tmp_path / "cluster")
    done = cluster.run("cluster", STUB_FAIL="eksctl-create-cluster")
    stack = f"eksctl-{cluster_name(golden)}-cluster"
    assert done.code != 0
    assert f"the failed events of the stack {stack}:\nControlPlane\t" in done.stderr
    assert "does not currently have sufficient capacity" in done.stderr
    [create] = where(done.calls, "eksctl", "create", "cluster")
    # the cluster's stack's events, then its node group's
    first, last = where(done.calls, "aws", "cloudformation", "describe-stack-events")
    assert create < first < last == len(done.calls) - 1
    assert not [call for call in done.calls if call[0] == "kubectl"]


@pytest.mark.conformance
def test_the_cluster_phase_runs_again_after_eksctl_failed_to_make_the_cluster(
        before: BeforePhase, tmp_path: Path) -> None:
    world = before("eks-paddle", "cluster", tmp_path / "world")
    assert world.run("cluster", STUB_FAIL="eksctl-create-cluster").code != 0
    run_ok(world, "cluster")


@pytest.mark.conformance
def test_the_storage_phase_runs_again_after_its_stack_rolled_back(
        before: BeforePhase, tmp_path: Path) -> None:
    world = before("eks-paddle", "storage", tmp_path / "world")
    assert world.run("storage", STUB_FAIL="cloudformation-deploy").code != 0
    run_ok(world, "storage")


@pytest.mark.conformance
def test_a_node_group_that_fails_to_go_is_explained_by_its_stack_s_events(
        before: BeforePhase, tmp_path: Path) -> None:
    world = before("eks-paddle", "down", tmp_path / "world")
    done = world.run("down", STUB_FAIL="eksctl-delete-cluster")
    assert done.code != 0 and "Ec2SecurityGroupDeletionFailure" in done.stderr


@pytest.mark.conformance
def test_down_run_again_deletes_a_cluster_stack_that_failed_to_go(
        before: BeforePhase, tmp_path: Path) -> None:
    world = before("eks-paddle", "down", tmp_path / "world")
    assert world.run("down", STUB_FAIL="eksctl-delete-cluster-stack").code != 0
    run_ok(world, "down")
    assert world.state()["stacks"] == {}
