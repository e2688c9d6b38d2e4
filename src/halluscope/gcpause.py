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
