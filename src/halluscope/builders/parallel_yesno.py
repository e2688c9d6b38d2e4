"""Parallel forms of the yes/no benchmarks HQM measures: POPE, AMBER and HallusionBench.

Each yes/no question is negated by :mod:`halluscope.builders.negation` ("Is there a dog in the image?" →
"Is there no dog in the image?") and its label flipped, as in HQM's appendix B. Questions the rules cannot
negate safely are left out of the parallel form and listed with the reason. AMBER's generative items
(the captioning prompt) are paraphrased instead, like the other open prompts, and keep their annotations.

The written folder has the benchmark's own layout, so ``halluscope run -b <benchmark> --data OUT`` reads it:

* POPE: the same set files (``coco/coco_pope_random.json`` …), one JSON object a line, ``question_id``
  kept, so sample ids are the original's;
* AMBER: ``annotations.json`` and ``query/query_all.json`` with the kept items (ids kept, ``truth``
  flipped for negated ones), ``relation.json`` and ``safe_words.txt`` linked;
* HallusionBench: ``HallusionBench.json`` with the kept questions (ids kept, ``gt_answer`` flipped; the
  original ``gt_answer_details``, which explains the original answer, kept as ``source_gt_answer_details``).

Every written item carries ``source_question`` (or ``source_query``) and ``parallel``. :func:`verify_yes_no`
reads the folder back through the benchmark's loader and checks each sample against its source sample of
the same id: one negation added and nothing else changed (:func:`~halluscope.builders.negation.negation_problem`),
the label flipped, and for AMBER's paraphrased prompts the content words and annotations kept.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halluscope.builders.negation import negate_questions, negation_problem
from halluscope.jsonio import loads_json, write_json_atomic

if TYPE_CHECKING:
    from halluscope.builders.parallel import ParallelBuild

Paraphrase = Callable[[str, str], Awaitable[tuple[str, str | None]]]
YES_NO_BENCHMARKS = ("pope", "amber", "hallusionbench")
_FLIP = {"yes": "no", "no": "yes"}


def _link(source: Path, target: Path) -> None:
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source.resolve())


def _negate_rows(rows: list[dict[str, Any]], field: str, label: Callable[[dict[str, Any]], str],
                 ids: list[str], build: ParallelBuild) -> list[tuple[dict[str, Any], str]]:
    """(row, negated question) for each row that can be negated; the others recorded as skipped."""
    out = []
    for row, sid, (text, why) in zip(rows, ids, negate_questions([str(r[field]) for r in rows]), strict=True):
        if label(row) not in _FLIP:
            build.skipped.append(f"{sid}: label {label(row)!r} is not yes or no")
        elif text is None:
            build.skipped.append(f"{sid}: {why}")
        elif negation_problem(str(row[field]), text):  # e.g. a word the tokenizer split ("jet-black")
            build.skipped.append(f"{sid}: the edit is not one clean negation of the words")
        else:
            out.append((row, text))
    return out


async def build_pope(data: Path, out: Path, build: ParallelBuild) -> None:
    from halluscope.benchmarks.closed import read_json_rows
    from halluscope.benchmarks.pope import pope_file_name, resolve_pope_files

    for (source, setting), path in resolve_pope_files(data).items():
        rows = read_json_rows(path)
        ids = [f"{source}-{setting}-{r.get('question_id')}" for r in rows]
        kept = _negate_rows(rows, "text", lambda r: str(r.get("label", "")).strip().lower(), ids, build)
        target = out / pope_file_name(source, setting)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8") as handle:
            for row, text in kept:
                new = {**row, "text": text, "label": _FLIP[str(row["label"]).strip().lower()],
                       "source_question": row["text"], "parallel": "negated"}
                handle.write(json.dumps(new, ensure_ascii=False) + "\n")
        build.counts["questions negated"] += len(kept)


async def build_amber(data: Path, out: Path, build: ParallelBuild, rewrite: Paraphrase) -> None:
    from halluscope.benchmarks.amber import _resolve

    folder = _resolve(data)
    notes = loads_json((folder / "annotations.json").read_text(encoding="utf-8"))
    queries = {q["id"]: q for q in loads_json((folder / "query" / "query_all.json").read_text(encoding="utf-8"))}
    generative = [n for n in notes if n["type"] == "generative"]
    closed = [n for n in notes if n["type"] != "generative"]
    kept_notes, kept_queries = [], []
    for note in generative:
        query = queries[note["id"]]
        text, why = await rewrite(str(query["query"]), str(note["id"]))
        if why:
            build.counts[f"llm paraphrase rejected: {why}"] += 1
        kept_notes.append(note)
        kept_queries.append({**query, "query": text, "source_query": query["query"], "parallel": "paraphrased"})
        build.counts["generative prompts paraphrased"] += 1
    rows = [queries[n["id"]] for n in closed]
    by_id = {n["id"]: n for n in closed}
    for query, text in _negate_rows(rows, "query", lambda q: str(by_id[q["id"]]["truth"]).strip().lower(),
                                    [str(n["id"]) for n in closed], build):
        note = by_id[query["id"]]
        kept_notes.append({**note, "truth": _FLIP[str(note["truth"]).strip().lower()], "source_truth": note["truth"]})
        kept_queries.append({**query, "query": text, "source_query": query["query"], "parallel": "negated"})
        build.counts["questions negated"] += 1
    write_json_atomic(out / "annotations.json", kept_notes)
    write_json_atomic(out / "query" / "query_all.json", kept_queries)
    for name in ("relation.json", "safe_words.txt"):
        _link(folder / name, out / name)


async def build_hallusionbench(data: Path, out: Path, build: ParallelBuild) -> None:
    from halluscope.benchmarks.hallusionbench import _resolve, hallusion_id

    path = _resolve(data)
    rows = loads_json(path.read_text(encoding="utf-8"))
    ids = [hallusion_id(r) for r in rows]
    kept = _negate_rows(rows, "question", lambda r: {"1": "yes", "0": "no"}.get(str(r.get("gt_answer")), "?"),
                        ids, build)
    written = []
    for row, text in kept:
        written.append({
            **row, "question": text, "gt_answer": "0" if str(row["gt_answer"]) == "1" else "1",
            "gt_answer_details": "", "source_gt_answer_details": row.get("gt_answer_details"),
            "source_question": row["question"], "parallel": "negated",
        })  # fmt: skip
    build.counts["questions negated"] += len(written)
    write_json_atomic(out / "HallusionBench.json", written)


def verify_yes_no(benchmark: str, data: Path, out: Path, *, share: float = 0.6) -> list[str]:
    """Every problem found by reading the parallel form back through the benchmark's loader."""
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.builders.paraphrase import verify_paraphrase

    try:
        original = {s.id: s for s in BENCHMARKS.create(benchmark, data=data).samples()}
        written = list(BENCHMARKS.create(benchmark, data=out).samples())
    except (ValueError, OSError) as error:
        return [f"the parallel form does not load: {error}"]
    problems: list[str] = []
    if not written:
        problems.append("the parallel form holds no item")
    for sample in written:
        source = original.get(sample.id)
        if source is None:
            problems.append(f"{sample.id}: no such item in the source")
            continue
        if sample.image_id != source.image_id:
            problems.append(f"{sample.id}: the image changed")
        if benchmark == "amber" and sample.metadata.get("type") == "generative":
            if sample.metadata.get("truth") != source.metadata.get("truth"):
                problems.append(f"{sample.id}: the annotation changed")
            problems += verify_paraphrase(sample.id, sample.prompt, source.prompt, share=share)
            continue
        why = negation_problem(source.prompt, sample.prompt)
        if why:
            problems.append(f"{sample.id}: {why}")
        old, new = str(source.metadata.get("label")), str(sample.metadata.get("label"))
        if {old, new} != {"yes", "no"}:
            problems.append(f"{sample.id}: label {new!r} is not the opposite of the source's {old!r}")
    return problems
