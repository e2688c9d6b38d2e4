"""The samples a run could not score, as the run hands them to its caller: how many, and the first few.

Why: a table with ``failed 2`` and nothing else makes the user open ``samples.jsonl`` to learn which items
failed and why, so the command line names the first few. The runner holds every record when it finishes
(it reads the log to resume and to compute the metrics), so it keeps the first failures as it goes;
reading ``samples.jsonl`` again after the run to find them cost a tenth of a second per 9,000 records,
most of what a re-run of a finished run takes beyond start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from halluscope.types import SampleRecord

__all__ = ["SHOWN", "FailedSample", "FailedSamples"]

#: Failures kept one by one (the command line prints each); the rest are counted.
SHOWN = 5


@dataclass(frozen=True)
class FailedSample:
    """One sample that could not be scored: its id and the failure as ``samples.jsonl`` holds it."""

    id: str
    failure: str

    def reason(self) -> str:
        """The failure naming its sample (most failures' texts already do)."""
        return self.failure if self.id in self.failure else f"sample {self.id}: {self.failure}"


@dataclass(frozen=True)
class FailedSamples:
    """How many samples of a run failed, and the first :data:`SHOWN` of them in the log's order."""

    count: int = 0
    first: tuple[FailedSample, ...] = ()

    @classmethod
    def of(cls, records: Iterable[SampleRecord], shown: int = SHOWN) -> FailedSamples:
        """The failed records among ``records``, the first ``shown`` kept."""
        count, first = 0, list[FailedSample]()
        for record in records:
            if record.failure is None:
                continue
            count += 1
            if len(first) < shown:
                first.append(FailedSample(record.id, str(record.failure)))
        return cls(count, tuple(first))

    @property
    def more(self) -> int:
        """Failures counted but not kept one by one."""
        return self.count - len(self.first)
