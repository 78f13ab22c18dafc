"""compiler/batch.py's workers: each item's result as the function gives it here, in the items'
order, whatever happens to a worker; none left behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from paddlegen.compiler import batch
from paddlegen.compiler.batch import WorkerError, Workers

from conftest import children_of


def square(number: int) -> int:
    return number * number


def with_worker(number: int) -> tuple[int, int]:
    return number, os.getpid()


def unlucky(number: int) -> int:
    if number == 13:
        raise ValueError(f"unlucky {number}")
    return number


def dies(number: int) -> int:
    if number == 13:
        os._exit(3)
    return number


@pytest.fixture(autouse=True)
def nothing_left_behind() -> object:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to see child processes")
    threads, before = set(threading.enumerate()), set(children_of(os.getpid()))
    yield
    assert set(children_of(os.getpid())) <= before
    assert set(threading.enumerate()) <= threads


def test_results_come_in_the_items_order_from_as_many_workers_as_asked() -> None:
    with Workers(3) as workers:
        results = list(workers.map(with_worker, range(200)))
        assert list(workers.map(square, range(50))) == [n * n for n in range(50)]  # once more
    assert [number for number, _ in results] == list(range(200))
    assert len({pid for _, pid in results}) == 3 and os.getpid() not in {p for _, p in results}


def test_fewer_than_two_workers_is_this_process() -> None:
    with Workers(1) as workers:
        assert {pid for _, pid in workers.map(with_worker, range(20))} == {os.getpid()}


def test_a_worker_that_has_grown_too_much_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "WORKER_GROWTH_BYTES", -(1 << 50))  # over it after any item
    with Workers(2) as workers:
        results = list(workers.map(with_worker, range(30)))
    assert [number for number, _ in results] == list(range(30))
    assert len({pid for _, pid in results}) == 30  # each item in a fresh worker


def test_an_exception_in_a_worker_is_raised_here() -> None:
    with pytest.raises(ValueError, match="unlucky 13"), Workers(2) as workers:
        list(workers.map(unlucky, range(40)))


def test_a_worker_that_dies_is_an_error_not_a_wait() -> None:
    with pytest.raises(WorkerError, match="exit code 3"), Workers(2) as workers:
        list(workers.map(dies, range(40)))


def test_leaving_before_the_end_ends_every_worker() -> None:
    with Workers(2) as workers:
        for _ in workers.map(square, range(400)):
            break
