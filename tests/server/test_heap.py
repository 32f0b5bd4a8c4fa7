"""The served process keeps its long-lived objects out of the garbage collector's full passes."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from sayso.server._heap import HeapSettler


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Give the process's frozen objects back to the collector after the test."""
    yield
    gc.unfreeze()


def test_a_grown_oldest_generation_is_frozen_and_later_objects_are_still_collected(unfrozen: None) -> None:
    """Past the limit the survivors are frozen (after a full collection); garbage made afterwards is still freed."""
    gc.collect()
    gc.unfreeze()
    settler = HeapSettler(unfrozen_limit=len(gc.get_objects(generation=2)) + 1_000, max_freezes=2)
    assert not settler.check()  # under the limit: nothing frozen
    assert gc.get_freeze_count() == 0

    kept = [[i] for i in range(5_000)]
    gc.collect()  # the new lists reach the oldest generation
    assert settler.check()
    assert gc.get_freeze_count() >= len(kept)
    assert len(gc.get_objects(generation=2)) < settler.unfrozen_limit

    class Cycle:
        other: object

    a, b = Cycle(), Cycle()
    a.other, b.other = b, a
    del a, b
    assert gc.collect() >= 2  # a cycle made after the freeze is still collected


def test_freezes_stop_at_the_limit(unfrozen: None) -> None:
    """A process freezes at most `max_freezes` times: a frozen cycle that dies is never collected."""
    settler = HeapSettler(unfrozen_limit=0, max_freezes=2)
    assert settler.check()
    assert settler.check()
    assert not settler.check()
    assert settler.freezes == 2
