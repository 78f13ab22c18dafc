"""One function over many items (`paddlegen check`), on every core the process may use.

Forked workers do the work and the parent only hands out items and passes results on: results
come back in the items' order as soon as the ones before them are in, and at most a few chunks
ahead of the one awaited are handed out, so that the parent holds a bounded number of results
however many items there are. A worker that has grown by WORKER_GROWTH_BYTES since it was
forked leaves after the item it is on and a fresh one takes its place, so no worker holds more
than that plus what the item it is on costs.

Items and results cross processes pickled, through a pipe each way per worker; the function
must be picklable (a module's function, or a functools.partial of one).
"""

from __future__ import annotations

import contextlib
import heapq
import os
import pickle
import selectors
import signal
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Below this many items per extra process, starting it costs more than it saves.
SPECS_PER_WORKER = 8
# Items handed to a worker at once: few enough that the cores end together, enough that the
# parent's part (a pickled message each way) stays small beside the work.
MAX_CHUNK = 8
# Chunks a worker may be ahead of the result awaited (results held at most: this many chunks a
# worker, plus the ones being worked on).
CHUNKS_AHEAD = 4
# A worker that has grown by this much since it was forked is replaced after its current item.
WORKER_GROWTH_BYTES = 64 << 20

_FRAME = struct.Struct("!Q")


def usable_cpus() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def workers_for(items: int) -> int:
    """How many workers `items` items are worth on this machine: 0 (do them here) below two."""
    count = min(usable_cpus(), items // SPECS_PER_WORKER)
    return count if count >= 2 and hasattr(os, "fork") else 0


class WorkerError(RuntimeError):
    """A worker ended without giving its results (killed, or out of memory)."""


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, as the worker formatted it."""


class _Worker:
    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid, self.tasks, self.results = pid, tasks, results
        self.chunk: tuple[int, int] | None = None  # the items it is on: [start, end)


class Workers:
    """A pool of `count` forked workers (none below two: then `map` runs in this process),
    started on first use and ended on leaving the `with` block."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._workers: list[_Worker] = []
        self._selector: selectors.BaseSelector | None = None
        self._parent = os.getpid()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close(abort=error is not None)

    def map(self, function: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        """function(item) for each item, in the items' order, each as soon as it and the ones
        before it are done. An exception the function raises is raised here."""
        if self.count < 2 or len(items) < 2:
            yield from map(function, items)
            return
        if not self._workers:
            self._start()
        chunk = max(1, min(MAX_CHUNK, len(items) // (self.count * 4)))
        # chunks to hand out, first the earliest: never held back is the one with the result
        # awaited, so that a result is always on its way
        pending = [(start, min(start + chunk, len(items)))
                   for start in range(0, len(items), chunk)]
        ahead = chunk * self.count * CHUNKS_AHEAD
        done: dict[int, R] = {}
        following = 0  # the next result to give
        idle = list(self._workers)
        while following < len(items):
            # before each result is given: the caller may take its time over it
            while pending and idle and pending[0][0] < following + ahead:
                worker = idle.pop()
                worker.chunk = heapq.heappop(pending)
                _send(worker.tasks, (function, items[slice(*worker.chunk)]))
            if following in done:
                yield done.pop(following)
                following += 1
                continue
            assert self._selector is not None
            for key, _ in self._selector.select():
                worker = key.data
                assert worker.chunk is not None
                start, end = worker.chunk
                results, retiring = self._receive(worker)
                done.update(enumerate(results, start))
                if start + len(results) < end:  # it left before the rest: someone else does it
                    heapq.heappush(pending, (start + len(results), end))
                worker.chunk = None
                idle.append(self._replace(worker) if retiring else worker)

    def close(self, abort: bool = False) -> None:
        """End every worker: at once if aborting or still working (`map` left before its
        end), else as it reads that there is no more to do."""
        if os.getpid() != self._parent:
            return
        for worker in self._workers:
            if abort or worker.chunk is not None:
                _signal(worker.pid, signal.SIGKILL)
            os.close(worker.tasks)  # end of input: it leaves
        for worker in self._workers:
            _reap(worker.pid)
            os.close(worker.results)
        self._workers = []
        if self._selector is not None:
            self._selector.close()
            self._selector = None

    def _start(self) -> None:
        self._selector = selectors.DefaultSelector()
        for _ in range(self.count):
            self._workers.append(self._fork())

    def _fork(self) -> _Worker:
        assert self._selector is not None
        tasks_read, tasks = os.pipe()
        results, results_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            code = 1
            try:
                # the parent's ends, its own and the other workers': a worker sees the end of
                # its input when the parent closes it or is gone
                for fd in [tasks, results, *(fd for other in self._workers
                                             for fd in (other.tasks, other.results))]:
                    os.close(fd)
                _serve(tasks_read, results_write, self._parent)
                code = 0
            finally:
                os._exit(code)
        os.close(tasks_read)
        os.close(results_write)
        worker = _Worker(pid, tasks, results)
        self._selector.register(results, selectors.EVENT_READ, worker)
        return worker

    def _forget(self, worker: _Worker) -> tuple[int, str]:
        """Take a worker that left out of the pool, closing its pipes and reaping it: its
        place in the pool and how it ended."""
        assert self._selector is not None
        index = self._workers.index(worker)
        del self._workers[index]
        self._selector.unregister(worker.results)
        os.close(worker.tasks)
        os.close(worker.results)
        return index, _reap(worker.pid)

    def _replace(self, worker: _Worker) -> _Worker:
        """A fresh worker in the place of one that left."""
        index, _ = self._forget(worker)
        fresh = self._fork()
        self._workers.insert(index, fresh)
        return fresh

    def _receive(self, worker: _Worker) -> tuple[list[Any], bool]:
        """A worker's results and whether it is leaving; raises what the function raised."""
        message = _receive(worker.results)
        if message is None:
            _, status = self._forget(worker)
            raise WorkerError(f"a worker process ended without its results ({status})")
        results, retiring, error = message
        if error is not None:
            exception, text = error
            raise exception from _RemoteTraceback(text)
        return results, retiring


def _serve(tasks: int, results: int, parent: int) -> None:
    """A worker's life: each chunk of items it is handed, until there are no more, or it has
    grown too large. It says nothing itself (its results are its only output) and never
    outlives `parent`: Ctrl-C, which reaches the whole process group, ends it at once, the
    parent saying so; and it ends when the parent is gone, however that went."""
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a parent gone: end here, quietly
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)

    def end_with_parent() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(130)

    threading.Thread(target=end_with_parent, daemon=True).start()
    limit = _resident_bytes() + WORKER_GROWTH_BYTES
    while (task := _receive(tasks)) is not None:
        function, items = task
        done: list[Any] = []
        retiring = False
        try:
            for item in items:
                done.append(function(item))
                if _resident_bytes() > limit:
                    retiring = True
                    break
        except BaseException as error:  # raised again in the parent
            _send(results, (done, True, _portable(error)))
            return
        _send(results, (done, retiring, None))
        if retiring:
            return


def _portable(error: BaseException) -> tuple[BaseException, str]:
    """An exception as the parent can raise it again, with the worker's traceback as text."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # any exception that does not cross
        return RuntimeError(f"{type(error).__name__}: {error}"), text
    return error, text


def _resident_bytes() -> int:
    """This process's resident memory now (Linux), else its peak so far."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _send(fd: int, message: object) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    view = memoryview(_FRAME.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int) -> Any:
    """The next message on fd; None at its end (the other side has gone)."""
    head = _read_exactly(fd, _FRAME.size)
    if head is None:
        return None
    data = _read_exactly(fd, _FRAME.unpack(head)[0])
    return None if data is None else pickle.loads(data)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def _reap(pid: int) -> str:
    """Wait for a worker to end; how it ended."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return "already reaped"
        except InterruptedError:
            continue
        if os.WIFSIGNALED(status):
            return f"signal {os.WTERMSIG(status)}"
        return f"exit code {os.waitstatus_to_exitcode(status)}"
