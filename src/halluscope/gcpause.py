"""Pausing Python's cyclic garbage collector while a bulk step builds many small, acyclic objects.

Scoring Reefknot's 21,560 items makes several hundred thousand dicts, strings and pydantic models, none of
them in reference cycles. Each 700 allocations the collector wakes up and walks the young objects, and every
so often all the live ones; with the benchmark's own samples alive that walking was about a third of the
scoring's CPU time (``bench/reefknot_scoring_speed.py``, docs/python-api.md). Nothing is leaked by pausing:
reference counting still frees everything, and the collector resumes, with its previous state, when the
step ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the ``with`` block; restore whatever state it had before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Leave every object alive now out of the collector's walks for the ``with`` block.

    For a long step that keeps a large loaded set alive and makes many short-lived objects: scoring a
    benchmark holds its samples and the responses (hundreds of thousands of objects on Reefknot), and
    without this every full collection during the step walks all of them again. Objects made inside the
    block are collected as usual. When the block ends everything is handed back to the collector
    (``gc.unfreeze``), so nothing frozen stays out of reach: the only effect is that a reference cycle that
    became garbage among the older objects is freed at the end of the block rather than during it.

    A process that froze objects itself (``gc.freeze`` before forking workers, say) is left alone: unfreezing
    at the end would undo its freeze, so the block then runs as it is.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
