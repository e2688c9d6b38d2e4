"""lmms-eval's ``--log_samples`` files, of every version, as responses.

One JSON object a line, per answered document. What a line holds changed over the versions:

- up to 0.6: ``doc_id``, ``doc`` (the dataset row, images left out), ``target``, ``resps`` (per request, a
  list of the model's raw outputs) and ``filtered_resps`` (after the task's filters);
- some versions and forks drop ``doc`` and keep ``doc_id``, ``input`` (the prompt text as sent) and
  ``target`` (with ``doc_hash``, ``bypass``, ...);
- 0.7 flattens: ``resps`` is a flat list, and is left out when it equals ``filtered_resps``.

The answer is the first ``filtered_resps`` entry (else the first ``resps`` entry), however deeply listed.

With ``doc``, the row's fields name the item (through the benchmark's ``external_id`` hook, else a field
holding a sample id). Without it, ``doc_id`` is the row's position in the dataset split the task read, so it
is mapped through that split's order, which only the benchmark knows: its ``task_orders`` hook gives the
candidate orders for the file (HallusionBench's figure questions in file order; POPE's COCO sets, whose order
in lmms-eval's 9,000 rows is not stated), and the one under which most lines' ``input`` agrees with the
items' questions is used (recorded as ``order``). This module names no benchmark.

Either way a line is accepted only if its question (``doc``'s ``question``, else ``input``) agrees with the
matched item's question; a line that does not is a named problem, never a silent mispairing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from halluscope.importers.common import ExternalRow, Matcher, question_agrees
from halluscope.jsonio import iter_jsonl
from halluscope.responses import ResponsesFile
from halluscope.stages import BenchmarkInterface, TaskOrder

__all__ = ["is_lmms_eval_row", "lmms_answer", "read_lmms_eval"]


def is_lmms_eval_row(row: object) -> bool:
    return isinstance(row, dict) and "doc_id" in row and ("resps" in row or "filtered_resps" in row)


def lmms_answer(row: dict[str, Any]) -> str | None:
    """The first ``filtered_resps`` entry, else the first ``resps`` entry, through any nesting of lists."""
    for key in ("filtered_resps", "resps"):
        value = row.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return value
    return None


def read_lmms_eval(
    path: Path, benchmark: BenchmarkInterface, *, benchmark_ids: set[str] | None = None
) -> ResponsesFile:
    """An lmms-eval samples log of any version (see the module docstring)."""
    path = Path(path)
    matcher = Matcher(benchmark, "lmms-eval", benchmark_ids)
    lines: list[tuple[str, dict[str, Any]]] = []
    for line in iter_jsonl(path):
        where = f"{path.name} line {line.number}"
        if not line.ok or not isinstance(line.value, dict):
            matcher.problem(f"{where}: {line.error or 'not a JSON object'}")
            continue
        lines.append((where, line.value))
    docless = [(w, r) for w, r in lines if not isinstance(r.get("doc"), dict)]
    order: list[str] | None = None
    if docless:
        candidates = benchmark.task_orders(path.name)
        if candidates:
            chosen = _best_order(candidates, docless, matcher)
            order = chosen.ids
            matcher.result.notes["lmms_eval_doc_order"] = {"task": chosen.task, "order": chosen.name}
    for where, row in lines:
        answer = lmms_answer(row)
        problem = None if answer is not None else "no model output in resps / filtered_resps"
        doc = row.get("doc")
        if isinstance(doc, dict):
            question = doc.get("question") if isinstance(doc.get("question"), str) else None
            fields = {**doc, "doc_id": row.get("doc_id")}
            matcher.add(ExternalRow(where, fields, answer, problem, question=question))
            continue
        asked = row.get("input") if isinstance(row.get("input"), str) else None
        doc_id = row.get("doc_id")
        if problem is None and order is None:
            problem = (
                "no 'doc' in the line, and no known dataset order to map its doc_id through for the "
                f"{benchmark.name} benchmark"
            )
        elif problem is None and asked is None:
            problem = "no 'doc' and no 'input' text: nothing to check the doc_id against"
        elif problem is None and not (isinstance(doc_id, int) and order is not None and 0 <= doc_id < len(order)):
            problem = f"doc_id {doc_id!r} is outside the task's {len(order or [])} documents"
        if problem is not None:
            matcher.problem(f"{where}: {problem}")
            continue
        assert order is not None and isinstance(doc_id, int)
        matcher.add(
            ExternalRow(where, {"doc_id": doc_id}, answer, question=asked),
            order[doc_id],
            matched_how=f"doc_id {doc_id} in the task's order",
        )
    return matcher.finish(path)


def _best_order(
    candidates: list[TaskOrder], lines: list[tuple[str, dict[str, Any]]], matcher: Matcher
) -> TaskOrder:
    """The candidate order under which most doc-less lines' ``input`` agrees with the item's question."""
    if len(candidates) == 1:
        return candidates[0]
    prompts = matcher.prompts

    def agreeing(order: list[str]) -> int:
        count = 0
        for _, row in lines:
            doc_id, asked = row.get("doc_id"), row.get("input")
            if isinstance(doc_id, int) and 0 <= doc_id < len(order) and isinstance(asked, str):
                item = prompts.get(order[doc_id])
                count += item is not None and question_agrees(asked, item)
        return count

    return max(candidates, key=lambda candidate: agreeing(candidate.ids))
