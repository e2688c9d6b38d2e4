"""What every importer shares: one row of another tool's file, and the matcher that ties rows to samples.

Why one matcher: each tool names its rows differently (LLaVA's ``question_id`` counts across a question
file, VLMEvalKit packs the official ids into ``index``, lmms-eval may keep only the row's position), but the
checks a user relies on are the same everywhere. A row is paired with a sample only when

- its fields name exactly one sample (the benchmark's own rule, its ``external_id`` hook, else a field ``id`` /
  ``sample_id`` / ``question_id`` / ``index`` holding a sample id), and
- the question the row says was asked, when it carries one, agrees with the sample's question (one contains
  the other once case and spacing are set aside: harnesses add instructions before or after it).

Everything else is a problem naming the row (line or spreadsheet row) and what was wrong; nothing is dropped
or paired silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.stages import BenchmarkInterface, ExternalRow
from halluscope.types import Response

__all__ = ["ExternalRow", "Matcher", "first_line", "question_agrees"]

_ID_FIELDS = ("id", "sample_id", "question_id", "index")
_SPACE = re.compile(r"\s+")


def normalise_question(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def first_line(text: str) -> str:
    """The question without the instruction lines a harness appended (LLaVA: "\\nAnswer the question ...")."""
    return text.strip().split("\n", 1)[0].strip()


def question_agrees(asked: str, item: str) -> bool:
    """Whether a row's question and a sample's question are the same question.

    One must contain the other once case and spacing are ignored: harnesses wrap the official question in
    their own instructions ("...?\\nAnswer the question using a single word or phrase."), and a benchmark's
    prompt may carry instructions of its own.
    """
    a, b = normalise_question(asked), normalise_question(item)
    if not a or not b:
        return True
    return a in b or b in a


def _short(text: str, limit: int = 70) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Matcher:
    """Collects rows into a :class:`ResponsesFile`, pairing each with one sample or naming its problem."""

    def __init__(
        self, benchmark: BenchmarkInterface, kind: str, benchmark_ids: set[str] | None, *, hint: str | None = None
    ) -> None:
        self.benchmark = benchmark
        self.kind = kind
        self.ids = benchmark_ids
        self.hint = hint
        self._prompts: dict[str, str] | None = None
        self.result = ResponsesFile(layout=kind)
        self.seen: dict[str, str] = {}
        self.unmatched = 0

    @property
    def prompts(self) -> dict[str, str]:
        """Each sample's question, by id (read once, on the first row that needs it)."""
        if self._prompts is None:
            self._prompts = {s.id: s.prompt for s in self.benchmark.every_sample()}
        return self._prompts

    def match(self, fields: Mapping[str, Any]) -> str | None:
        """The sample id the fields name: the benchmark's own rule first, then a field holding a sample id."""
        found = self.benchmark.external_id(fields)
        if found is not None:
            return found
        for key in _ID_FIELDS:
            value = fields.get(key)
            if value is None:
                continue
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            text = str(value).strip()
            if text in self.prompts or (self.ids is not None and text in self.ids):
                return text
        return None

    def problem(self, message: str) -> None:
        self.result.problems.append(message)

    def add(self, row: ExternalRow, sample_id: str | None = None, *, matched_how: str | None = None) -> str | None:
        """Pair ``row`` with ``sample_id`` (or the one its fields name); returns the id, or None (a problem)."""
        if row.problem is not None:
            self.problem(f"{row.where}: {row.problem}")
            return None
        if sample_id is None:
            sample_id = self.match(row.fields)
        if sample_id is None or (self.ids is not None and sample_id not in self.ids):
            self.unmatched += 1
            shown = {k: row.fields[k] for k in list(row.fields)[:6]}
            self.problem(f"{row.where}: matches no sample of the benchmark ({self.kind} fields {shown})")
            return None
        item = self.prompts.get(sample_id)
        if row.question is not None and item is not None and not question_agrees(row.question, item):
            how = f" ({matched_how})" if matched_how else ""
            self.problem(
                f"{row.where}: its question {_short(row.question)!r} is not the question of {sample_id}{how}, "
                f"{_short(item)!r}; not paired"
            )
            return None
        if sample_id in self.seen:
            self.problem(f"{row.where}: duplicate answer for {sample_id} (first at {self.seen[sample_id]})")
            return None
        if row.answer is None:
            self.problem(f"{row.where}: no answer")
            return None
        self.seen[sample_id] = row.where
        self.result.responses[sample_id] = Response(
            id=sample_id, response=row.answer, metadata={"imported_from": self.kind, "source_row": row.where}
        )
        return sample_id

    def finish(self, path: Path) -> ResponsesFile:
        """The result; raises :class:`ResponsesError` naming the first problems when no row was usable."""
        result = self.result
        if not result.responses and not result.items and result.problems:
            hint = f" — {self.hint}" if self.hint and self.unmatched else ""
            raise ResponsesError(
                f"no row of {path} matched the benchmark{hint}: " + "; ".join(result.problems[:5])
                + (f" (and {len(result.problems) - 5} more)" if len(result.problems) > 5 else "")
            )
        return result
