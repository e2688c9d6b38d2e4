"""lmms-eval's ``--log_samples`` files, of every version, as responses.

One JSON object a line, per answered document. What a line holds changed over the versions:

- up to 0.6: ``doc_id``, ``doc`` (the dataset row, images left out), ``target``, ``resps`` (per request, a
  list of the model's raw outputs) and ``filtered_resps`` (after the task's filters);
- some versions and forks drop ``doc`` and keep ``doc_id``, ``input`` (the prompt text as sent) and
  ``target`` (with ``doc_hash``, ``bypass``, ...);
- 0.7 flattens: ``resps`` is a flat list, and is left out when it equals ``filtered_resps``.

The answer is the first ``filtered_resps`` entry (else the first ``resps`` entry), however deeply listed.

With ``doc``, the row's fields name the item (POPE ``question_id`` + ``category``, HallusionBench's five id
fields, ...). Without it, ``doc_id`` is the row's position in the dataset split the task read, so it is
mapped through that split's order, rebuilt from the benchmark's own files:

- ``hallusion_bench_image`` (lmms-lab/HallusionBench, split ``image``): the official ``HallusionBench.json``
  restricted to the questions that come with a figure (``visual_input`` ≠ 0), in file order;
- ``pope`` (lmms-lab/POPE, split ``test``, 9,000 rows): POPE's three COCO sets one after another, each in
  its file's order; ``pope_adv`` / ``pope_pop`` / ``pope_random`` (its ``Full`` config): one set. The order of
  the three sets in the 9,000 rows is not stated in the task files, so each order of the three is tried and
  the one under which the lines' ``input`` agrees with the items' questions is used (recorded as ``order``).

Either way a line is accepted only if its question (``doc``'s ``question``, else ``input``) agrees with the
matched item's question; a line that does not is a named problem, never a silent mispairing.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from halluscope.importers.common import ExternalRow, Matcher, question_agrees
from halluscope.jsonio import iter_jsonl, loads_json
from halluscope.responses import ResponsesFile

__all__ = ["is_lmms_eval_row", "lmms_answer", "read_lmms_eval"]

_POPE_TASKS = {"pope_adv": ("adversarial",), "pope_pop": ("popular",), "pope_random": ("random",)}


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


def _task_of(path: Path, benchmark_name: str) -> str | None:
    """The lmms-eval task from the file name (``samples_pope_adv.jsonl``, ``..._pope_adv.jsonl``)."""
    stem = path.stem.lower()
    if benchmark_name == "hallusionbench":
        return "hallusion_bench_image"
    if benchmark_name == "pope":
        for task in _POPE_TASKS:
            if task in stem:
                return task
        return "pope"
    return None


_HALLUSION_ID_FIELDS = ("category", "subcategory", "set_id", "figure_id", "question_id")


def _hallusion_order(benchmark: Any) -> list[tuple[str, list[str]]]:
    """HallusionBench's sample ids (the five official id fields joined by "-") of the figure questions."""
    raw = loads_json(Path(benchmark.path).read_text(encoding="utf-8"))
    ids = [
        "-".join(str(r[k]) for k in _HALLUSION_ID_FIELDS)
        for r in raw
        if isinstance(r, dict) and str(r.get("visual_input", "")) != "0" and all(k in r for k in _HALLUSION_ID_FIELDS)
    ]
    return [("HallusionBench.json, questions with a figure (visual_input != 0), in file order", ids)]


def _pope_orders(benchmark: Any, task: str) -> list[tuple[str, list[str]]]:
    """POPE's sample ids (``coco-<setting>-<question_id>``) of the COCO sets, from the files beside the
    selected ones (POPE's COCO files are JSONL, one question a line)."""
    files: dict[tuple[str, str], Path] = getattr(benchmark, "files", {})
    folder = next((Path(p).parent for (src, _), p in files.items() if src == "coco"), None)
    if folder is None:
        return []
    sets: dict[str, list[str]] = {}
    for setting in ("adversarial", "popular", "random"):
        path = files.get(("coco", setting)) or folder / f"coco_pope_{setting}.json"
        if Path(path).is_file():
            sets[setting] = [
                f"coco-{setting}-{line.value['question_id']}"
                for line in iter_jsonl(Path(path))
                if line.ok and isinstance(line.value, dict) and "question_id" in line.value
            ]
    wanted = _POPE_TASKS.get(task)
    if wanted is not None:
        return [(f"POPE coco {wanted[0]}, in file order", sets[wanted[0]])] if wanted[0] in sets else []
    if len(sets) < 3:
        return []
    return [
        (f"POPE coco {', '.join(order)} one after another, each in file order",
         [i for setting in order for i in sets[setting]])
        for order in itertools.permutations(("adversarial", "popular", "random"))
    ]  # fmt: skip


def _orders(benchmark: Any, task: str | None) -> list[tuple[str, list[str]]]:
    name = getattr(benchmark, "name", "")
    if name == "hallusionbench" and hasattr(benchmark, "path"):
        return _hallusion_order(benchmark)
    if name == "pope" and task is not None:
        return _pope_orders(benchmark, task)
    return []


def read_lmms_eval(path: Path, benchmark: object, *, benchmark_ids: set[str] | None = None) -> ResponsesFile:
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
        task = _task_of(path, getattr(benchmark, "name", ""))
        candidates = _orders(benchmark, task)
        if candidates:
            order_name, order = _best_order(candidates, docless, matcher)
            matcher.result.notes["lmms_eval_doc_order"] = {"task": task, "order": order_name}
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
                f"{getattr(benchmark, 'name', '?')} benchmark"
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
    candidates: list[tuple[str, list[str]]], lines: list[tuple[str, dict[str, Any]]], matcher: Matcher
) -> tuple[str, list[str]]:
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

    return max(candidates, key=lambda candidate: agreeing(candidate[1]))
