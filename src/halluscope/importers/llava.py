"""LLaVA's answer files, as ``model_vqa_loader`` writes them (and the many repositories built on LLaVA).

One JSON object a line: ``question_id``, ``prompt`` (the question as asked, instructions included),
``text`` (the answer), ``answer_id``, ``model_id``, ``metadata``. The ``question_id`` is the line's id in the
*question file* the run read, which for POPE is LLaVA's own ``llava_pope_test.jsonl`` (``question_id``,
``image``, ``text``, ``category``): its ids run across the three COCO sets (adversarial 1..3,000, random
10,000,001.., popular 20,000,001..) and are not POPE's. So:

- with the question file (``--bench-opt questions=FILE``), each answer is looked up there by ``question_id``,
  its ``prompt`` must be that question's ``text``, and the question's image, text and category name the
  benchmark item (POPE: setting = category, then image and question, unique within a set);
- without it, ``question_id`` must itself be a sample id of the benchmark, and the ``prompt`` must agree
  with that sample's question.

LLaVA's ``eval_pope.py`` pairs answers with labels *by order* within each category; halluscope pairs them by
image and question, which gives the same pairs when the answers follow the label file, and a named problem
(never a silent mispairing) when they do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from halluscope.importers.common import ExternalRow, Matcher, first_line
from halluscope.jsonio import iter_jsonl_values
from halluscope.responses import ResponsesError, ResponsesFile
from halluscope.stages import BenchmarkInterface

__all__ = ["is_llava_answers", "load_question_file", "read_llava"]

#: Fields only LLaVA's answer writer puts on a line (with ``question_id``, ``prompt`` and ``text``).
_MARKERS = ("answer_id", "model_id")


def is_llava_answers(row: object) -> bool:
    return (
        isinstance(row, dict)
        and "question_id" in row
        and isinstance(row.get("text"), str)
        and "prompt" in row
        and any(k in row for k in _MARKERS)
        and "id" not in row
    )


def load_question_file(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """LLaVA's question file: ``question_id`` → row, and the problems found in it."""
    path = Path(path)
    if not path.is_file():
        raise ResponsesError(f"question file not found: {path}")
    questions: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for number, row, _, bad in iter_jsonl_values(path):
        where = f"{path.name} line {number}"
        if bad is not None or not isinstance(row, dict):
            problems.append(f"{where}: {bad.error if bad is not None else 'not a JSON object'}")
            continue
        if "question_id" not in row or not isinstance(row.get("text"), str):
            problems.append(f"{where}: a question needs 'question_id' and 'text'")
            continue
        key = str(row["question_id"])
        if key in questions:
            problems.append(f"{where}: question_id {key} appears twice; the first is used")
            continue
        questions[key] = row
    if not questions:
        raise ResponsesError(f"{path}: no question in LLaVA's layout (question_id, image, text, category)")
    return questions, problems


def read_llava(path: Path, benchmark: BenchmarkInterface, *, benchmark_ids: set[str] | None = None) -> ResponsesFile:
    """Answers in LLaVA's layout, matched through the question file the benchmark names (its
    ``external_questions`` hook), when it names one."""
    path = Path(path)
    question_path = benchmark.external_questions()
    questions: dict[str, dict[str, Any]] | None = None
    hint = None
    matcher = Matcher(benchmark, "llava", benchmark_ids)
    if question_path is not None:
        questions, problems = load_question_file(Path(question_path))
        matcher.result.problems.extend(problems)
        matcher.result.notes["questions"] = str(question_path)
    else:
        hint = (
            "LLaVA numbers its questions in its own question file; give that file with "
            "--bench-opt questions=FILE (for POPE, LLaVA's llava_pope_test.jsonl)"
        )
        matcher.hint = hint
    for number, row, _, bad in iter_jsonl_values(path):
        where = f"{path.name} line {number}"
        if bad is not None or not isinstance(row, dict):
            matcher.problem(f"{where}: {bad.error if bad is not None else 'not a JSON object'}")
            continue
        answer = row.get("text")
        if not isinstance(answer, str):
            matcher.problem(f"{where}: no answer text ('text')")
            continue
        question_id = row.get("question_id")
        prompt = row.get("prompt") if isinstance(row.get("prompt"), str) else None
        if questions is None:
            fields = {"question_id": question_id}
            matcher.add(ExternalRow(where, fields, answer, question=first_line(prompt) if prompt else None))
            continue
        asked = questions.get(str(question_id))
        if asked is None:
            matcher.problem(f"{where}: question_id {question_id} is not in the question file {question_path}")
            continue
        if prompt is not None and prompt.strip() != str(asked["text"]).strip():
            matcher.problem(
                f"{where}: its prompt {first_line(prompt)!r} is not question {question_id} of the question file "
                f"({first_line(str(asked['text']))!r}); not paired"
            )
            continue
        question = first_line(str(asked["text"]))
        fields = {
            "image": asked.get("image"),
            "question": question,
            "category": asked.get("category"),
        }
        matcher.add(
            ExternalRow(where, fields, answer, question=question),
            matched_how=f"by the question file's image {asked.get('image')}",
        )
    return matcher.finish(path)
