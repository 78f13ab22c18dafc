"""Compiling many specs at once (`paddlegen check`), on every core the process may use."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat

from paddlegen.compiler.artifact import Artifact
from paddlegen.compiler.build import ManifestError, build
from paddlegen.compiler.problems import Problem, SpecError

# Below this many specs per extra process, starting it costs more than it saves.
SPECS_PER_WORKER = 8


@dataclass(frozen=True)
class Outcome:
    """One spec's build, as plain data that crosses processes."""

    artifacts: tuple[Artifact, ...] | None  # None: it does not build
    problems: tuple[Problem, ...]  # its warnings, or why it does not build
    bug: bool = False  # the generated objects fail validation


def outcome(name: str, raw: bytes, kube_version: str | None, strict: bool) -> Outcome:
    try:
        result = build(raw, name, kube_version, strict)
    except SpecError as error:
        return Outcome(None, error.problems)
    except ManifestError as error:
        return Outcome(None, error.problems, bug=True)
    return Outcome(result.artifacts, result.warnings)


def usable_cpus() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def outcomes(specs: list[tuple[str, bytes]], kube_version: str | None,
             strict: bool) -> Iterator[Outcome]:
    """Each spec's outcome, in the order given. With enough specs and cores the rest are built
    in forked workers once the first has been built here, so they start with every model and
    schema validator it needed."""
    workers = min(usable_cpus(), len(specs) // SPECS_PER_WORKER)
    serial = (outcome(name, raw, kube_version, strict) for name, raw in specs)
    if workers < 2:
        yield from serial
        return
    # Imported only for a pool: a few milliseconds that `check` of a few specs need not pay.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods():
        yield from serial
        return
    (first_name, first_raw), rest = specs[0], specs[1:]
    yield outcome(first_name, first_raw, kube_version, strict)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_quiet_worker, initargs=(os.getpid(),))
    try:
        yield from pool.map(outcome, [name for name, _ in rest], [raw for _, raw in rest],
                            repeat(kube_version), repeat(strict),
                            chunksize=max(1, len(rest) // (workers * 4)))
    finally:
        # Waiting joins the pool's manager thread, which joins the workers (at most the specs
        # they are building: the rest are cancelled). Not waiting left it closing its wake-up
        # pipe while the interpreter's exit hook wrote to it: "Exception ignored ... Bad file
        # descriptor" at exit. Ctrl-C needs no wait: every process of the group exits at once.
        pool.shutdown(wait=True, cancel_futures=True)


def _quiet_worker(parent: int) -> None:
    """A worker says nothing (its outcomes are its only output) and never outlives `parent`:
    Ctrl-C, which reaches the whole process group, ends it at once, the parent saying so; and
    it ends when the parent is gone, however that went (even before it got here)."""
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)

    def end_with_parent() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(130)

    threading.Thread(target=end_with_parent, daemon=True).start()
