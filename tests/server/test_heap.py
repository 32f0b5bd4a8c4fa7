"""The served process keeps its long-lived objects out of the garbage collector's full passes, and few malloc arenas."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
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


ARENAS_PROBE = """
import ctypes, ctypes.util, os, sys, tempfile, threading
from sayso.server._heap import limit_malloc_arenas
if sys.argv[1] == "limited":
    assert limit_malloc_arenas()
together = threading.Barrier(12)
def churn():
    together.wait()  # all alive at once, so none can take over another's arena
    blocks = [bytearray(64 * 1024) for _ in range(16)]
    together.wait()
    del blocks
threads = [threading.Thread(target=churn) for _ in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fdopen.restype = ctypes.c_void_p
libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.TemporaryFile() as f:
    stream = libc.fdopen(os.dup(f.fileno()), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    f.seek(0)
    print(f.read().decode().count("<heap nr="))
"""


def arenas(mode: str) -> int:
    """How many malloc arenas a fresh process has after twelve threads allocated, with or without the limit."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_PROBE, mode], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    return int(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc arenas")
def test_a_served_process_keeps_its_threads_to_two_malloc_arenas() -> None:
    """`sayso serve` limits glibc's per-thread arenas (each kept its freed memory: the soak's growth) to two."""
    assert arenas("limited") <= 2
    assert arenas("unlimited") > 2  # the probe would show more without the limit
