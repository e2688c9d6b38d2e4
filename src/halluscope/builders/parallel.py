"""Parallel forms of a benchmark (HQM): the same items asked another way, for parallel-forms reliability.

As the HQM paper builds them (appendix B):

* **yes/no** (Reefknot ``YESNO.jsonl``): each question is negated and its label flipped — "Is the cup on
  the table in this photo?" (yes) becomes "Is the cup not on the table in this photo?" (no). The ``not`` goes
  where the question's relation starts: where the two questions of a Reefknot twin pair (same subject and
  object, relation swapped) begin to differ, else before the first preposition or -ing word after the
  subject. The two questions of each pair swap lines, so every pair still starts with its "yes" question and
  the loader's twin pairing holds; each line's ``source`` names the original sample id. Pairs that cannot be
  negated safely are left out and counted with the reason: a question that already holds a negation (double
  negatives read ambiguously) and twins that ask the very same question with opposite labels (an error in
  the released data).
* **multiple choice** (``Multichoice.jsonl``): the four options are shuffled so that the correct one moves to
  another letter, and the label follows it. Items whose options are not four distinct texts are left out.
* **POPE, AMBER and HallusionBench** (:mod:`halluscope.builders.parallel_yesno`): every yes/no question that
  :mod:`halluscope.builders.negation`'s rules can negate safely, with its label flipped; AMBER's captioning
  prompt paraphrased.
* **open prompts** (Reefknot VQA, Tri-HE questions, HQH instructions): paraphrased
  (:mod:`halluscope.builders.paraphrase`: offline templates, or an LLM). Reefknot VQA keeps its answer-format
  sentence, so its answers are scored as before.

Sample ids keep the benchmark's own scheme (Reefknot: line numbers of the new files; Tri-HE and HQH: the
original ids). Every rewritten item is then checked by :func:`verify_parallel`, which reads the written
files back through the benchmark's own loader (or the JSON) and compares each item with its source: a
negation inserts exactly one ``not`` after the subject into a question that had none, and flips the label;
a shuffle keeps the four option texts with exactly one equal to the original answer, at the new label; a
paraphrase keeps the content words, the answer and the id.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.builders.paraphrase import template_paraphrase, verify_paraphrase
from halluscope.jsonio import loads_json, write_json_atomic
from halluscope.scene.names import PREPOSITIONS
from halluscope.text.words import negates_phrase

#: async (prompt, item id) → (paraphrase, reason the LLM's paraphrase was rejected or None)
Paraphrase = Callable[[str, str], Awaitable[tuple[str, str | None]]]

BENCHMARKS = ("reefknot", "tri-he", "hqh", "pope", "amber", "hallusionbench")
_YESNO = re.compile(r"^(?P<aux>Is|Are)\s+(?P<body>.+?)\s+(?P<tail>this photo\?.*)$", re.S)
_DETERMINERS = frozenset({"the", "a", "an"})
_PREP_WORDS = frozenset(w for p in PREPOSITIONS for w in p.split()) - {"the", "front", "back", "top", "side"}
_VQA_SPLIT = re.compile(r"(?P<question>^.*?)\s*(?P<format>Please answer in the following format:.*)$", re.S)
LETTERS = ("A", "B", "C", "D")


@dataclass
class ParallelBuild:
    """What was written: per-kind counts, the items left out and why, and the verification result."""

    out: Path
    benchmark: str
    counts: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    paraphraser: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        reasons = Counter(s.split(": ", 1)[1] for s in self.skipped if ": " in s)
        return {
            "benchmark": self.benchmark,
            "counts": dict(self.counts),
            "skipped": len(self.skipped),
            "skipped_reasons": dict(reasons),
            "skipped_items": self.skipped[:200],
            "paraphraser": self.paraphraser,
            "verification": {"n_problems": len(self.problems), "problems": self.problems[:200]},
        }


def _negators(words: Sequence[str]) -> bool:
    return any(negates_phrase(w.lower()) for w in words)


def negation_point(body: list[str], twin: list[str] | None) -> int | None:
    """Where ``not`` goes in a yes/no question's statement words (None: nowhere safe)."""
    start = 0
    while start < len(body) - 1 and body[start].lower() in _DETERMINERS:
        start += 1
    if twin is not None:
        k = 0
        while k < min(len(body), len(twin)) and body[k] == twin[k]:
            k += 1
        if start < k < len(body):
            return k
    for i in range(start + 1, len(body)):
        word = body[i].lower()
        if word in _PREP_WORDS or (word.endswith("ing") and len(word) > 4):
            return i
    return len(body) - 1 if len(body) - 1 > start else None


def negate_yes_no(rows: list[dict[str, Any]], build: ParallelBuild) -> list[dict[str, Any]]:
    """Negated twin pairs (see the module docstring); rows left out are recorded in ``build.skipped``."""
    out: list[dict[str, Any]] = []
    for first in range(0, len(rows) - 1, 2):
        pair = [rows[first], rows[first + 1]]
        ids = [f"yesno-{first}", f"yesno-{first + 1}"]
        labels = [str(r["label"]).strip().lower() for r in pair]
        if labels != ["yes", "no"]:
            build.skipped.append(f"{ids[0]}: not a yes/no twin pair (labels {labels})")
            continue
        matches = [_YESNO.match(str(r["query_prompt"]).strip()) for r in pair]
        if matches[0] is None or matches[1] is None:
            build.skipped.append(f"{ids[0]}: question not in the 'Is/Are … this photo?' form")
            continue
        bodies = [m.group("body").split() for m in matches if m is not None]
        if bodies[0] == bodies[1]:
            build.skipped.append(f"{ids[0]}: twins ask the same question with opposite labels")
            continue
        if _negators(bodies[0]) or _negators(bodies[1]):
            build.skipped.append(f"{ids[0]}: a question of the pair is already negated")
            continue
        points = [negation_point(bodies[0], bodies[1]), negation_point(bodies[1], bodies[0])]
        if points[0] is None or points[1] is None:
            build.skipped.append(f"{ids[0]}: no place for the negation after the subject")
            continue
        negated = []
        for row, match, body, point, source in zip(pair, matches, bodies, points, ids, strict=True):
            assert match is not None and point is not None
            words = [*body[:point], "not", *body[point:]]
            new = dict(row)
            new["query_prompt"] = f"{match.group('aux')} {' '.join(words)} {match.group('tail')}"
            new["label"] = "no" if str(row["label"]).strip().lower() == "yes" else "yes"
            new["source"] = source
            new["parallel"] = "negated"
            negated.append(new)
        out.extend([negated[1], negated[0]])  # the negated "no" question now has label yes: it goes first
        build.counts["yesno negated"] += 2
    if len(rows) % 2:
        build.skipped.append(f"yesno-{len(rows) - 1}: no twin")
    return out


def _options_span(prompt: str, options: dict[str, str]) -> tuple[int, int] | None:
    start = prompt.find(f"A. {options['A']}")
    end_marker = f"D. {options['D']}"
    end = prompt.find(end_marker, max(start, 0))
    if start < 0 or end < 0:
        return None
    return start, end + len(end_marker)


def shuffle_choices(rows: list[dict[str, Any]], build: ParallelBuild, rng: random.Random) -> list[dict[str, Any]]:
    """Options shuffled so the correct one moves to another letter; the label follows it."""
    from halluscope.judges.answers import parse_mcq_options

    out = []
    for line, row in enumerate(rows):
        source = f"mcq-{line}"
        prompt = str(row["query_prompt"]).strip()
        options = parse_mcq_options(prompt)
        label = str(row["label"]).strip().upper()
        if len(options) != 4 or label not in options:
            build.skipped.append(f"{source}: options or label not readable")
            continue
        if len({o.strip().lower() for o in options.values()}) != 4:
            build.skipped.append(f"{source}: the four options are not distinct")
            continue
        span = _options_span(prompt, options)
        if span is None:
            build.skipped.append(f"{source}: options not found in the prompt text")
            continue
        order = list(LETTERS)
        while True:
            rng.shuffle(order)
            if order[LETTERS.index(label)] != label and order != list(LETTERS):
                break
        # order[i] is the new letter of the option that was at LETTERS[i]
        moved = {order[i]: options[LETTERS[i]] for i in range(4)}
        text = " ".join(f"{letter}. {moved[letter]}" for letter in LETTERS)
        new = dict(row)
        new["query_prompt"] = prompt[: span[0]] + text + prompt[span[1] :]
        new["label"] = order[LETTERS.index(label)]
        new["source"] = source
        new["parallel"] = "shuffled"
        out.append(new)
        build.counts["mcq shuffled"] += 1
    return out


async def paraphrase_vqa(rows: list[dict[str, Any]], build: ParallelBuild,
                         paraphrase: Paraphrase) -> list[dict[str, Any]]:
    """The question sentence paraphrased; the answer-format sentence and the label kept."""
    out = []
    for line, row in enumerate(rows):
        source = f"vqa-{line}"
        match = _VQA_SPLIT.match(str(row["query_prompt"]).strip())
        if match is None:
            build.skipped.append(f"{source}: no answer-format sentence")
            continue
        text, why = await paraphrase(match.group("question"), source)
        if why:
            build.counts[f"llm paraphrase rejected: {why}"] += 1
        new = dict(row)
        new["query_prompt"] = f"{text} {match.group('format')}"
        new["source"] = source
        new["parallel"] = "paraphrased"
        out.append(new)
        build.counts["vqa paraphrased"] += 1
    return out


async def _template(prompt: str, item_id: str) -> tuple[str, str | None]:
    return template_paraphrase(prompt, item_id), None


async def build_parallel(benchmark: str, data: Path, out: Path, *, seed: int = 0,
                         tasks: Sequence[str] | None = None, paraphrase: Paraphrase | None = None,
                         paraphraser: dict[str, Any] | None = None) -> ParallelBuild:
    """Write the parallel form of ``benchmark``'s data into ``out``, then verify it (``build.problems``)."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"no parallel-form builder for {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    build = ParallelBuild(out=out, benchmark=benchmark, paraphraser=paraphraser or {"paraphraser": "templates"})
    rewrite = paraphrase or _template
    rng = random.Random(seed)
    if benchmark == "reefknot":
        from halluscope.benchmarks.reefknot import OFFICIAL_FILES, read_reefknot_file, resolve_data_dir

        _, files = resolve_data_dir(data)
        chosen = [t for t in (tasks or files) if t in files]
        if not chosen:
            raise ValueError(f"{data}: none of the tasks {', '.join(tasks or [])} has a file there")
        for task in chosen:
            rows = read_reefknot_file(files[task])
            if task == "yesno":
                new = negate_yes_no(rows, build)
            elif task == "mcq":
                new = shuffle_choices(rows, build, rng)
            else:
                new = await paraphrase_vqa(rows, build, rewrite)
            with (out / OFFICIAL_FILES[task]).open("w", encoding="utf-8") as handle:
                handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in new)
    elif benchmark == "tri-he":
        await _paraphrase_tri_he(Path(data), out, build, rewrite)
    elif benchmark == "hqh":
        await _paraphrase_hqh(Path(data), out, build, rewrite)
    else:
        from halluscope.builders import parallel_yesno

        if benchmark == "pope":
            await parallel_yesno.build_pope(Path(data), out, build)
        elif benchmark == "amber":
            await parallel_yesno.build_amber(Path(data), out, build, rewrite)
        else:
            await parallel_yesno.build_hallusionbench(Path(data), out, build)
    build.problems = verify_parallel(benchmark, data, out)
    write_json_atomic(out / "parallel.json", build.summary())
    return build


async def _paraphrase_tri_he(data: Path, out: Path, build: ParallelBuild, rewrite: Paraphrase) -> None:
    from halluscope.benchmarks.tri_he import resolve_data_path

    path = resolve_data_path(data)
    raw = loads_json(path.read_text(encoding="utf-8"))
    for image_id, entry in raw.items():
        for index, item in enumerate(entry.get("instance", [])):
            item_id = f"{image_id}-{index}"
            text, why = await rewrite(str(item["question"]), item_id)
            if why:
                build.counts[f"llm paraphrase rejected: {why}"] += 1
            item["source_question"] = item["question"]
            item["question"] = text
            build.counts["questions paraphrased"] += 1
    write_json_atomic(out / path.name, raw)
    images = path.parent / "images"
    if images.is_dir() and not (out / "images").exists():
        (out / "images").symlink_to(images.resolve(), target_is_directory=True)


def _hqh_file(data: Path) -> Path:
    path = data / "HQH.json" if data.is_dir() else data
    if not path.is_file():
        raise ValueError(f"HQH data not found at {path}")
    return path


async def _paraphrase_hqh(data: Path, out: Path, build: ParallelBuild, rewrite: Paraphrase) -> None:
    path = _hqh_file(data)
    items = loads_json(path.read_text(encoding="utf-8"))
    for item in items:
        text, why = await rewrite(str(item["instruction"]), str(item["id"]))
        if why:
            build.counts[f"llm paraphrase rejected: {why}"] += 1
        item["source_instruction"] = item["instruction"]
        item["instruction"] = text
        build.counts["instructions paraphrased"] += 1
    write_json_atomic(out / "HQH.json", items)
    for other in sorted(path.parent.glob("image_data*.json")):
        if not (out / other.name).exists():
            (out / other.name).symlink_to(other.resolve())


# -- verification ------------------------------------------------------------------------------------------


def _verify_negation(sid: str, new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    problems = []
    new_match = _YESNO.match(str(new["prompt"]))
    old_match = _YESNO.match(str(old["query_prompt"]).strip())
    if new_match is None or old_match is None:
        return [f"{sid}: not an 'Is/Are … this photo?' question"]
    after, before = new_match.group("body").split(), old_match.group("body").split()
    nots = [i for i, w in enumerate(after) if w == "not"]
    if len(nots) != 1 or after[: nots[0]] + after[nots[0] + 1 :] != before:
        problems.append(f"{sid}: not the source question with exactly one 'not' inserted")
    elif not [w for w in after[: nots[0]] if w.lower() not in _DETERMINERS]:
        problems.append(f"{sid}: the negation comes before the subject")
    if _negators(before):
        problems.append(f"{sid}: the source question was already negated (double negative)")
    if new_match.group("tail") != old_match.group("tail") or new_match.group("aux") != old_match.group("aux"):
        problems.append(f"{sid}: the question's frame changed")
    labels = {str(new["label"]).lower(), str(old["label"]).strip().lower()}
    if labels != {"yes", "no"}:
        problems.append(f"{sid}: label {new['label']!r} is not the opposite of the source's {old['label']!r}")
    if new.get("pair") is None:
        problems.append(f"{sid}: lost its twin pair")
    from halluscope.benchmarks.reefknot import parse_prompt

    if parse_prompt("yesno", str(old["query_prompt"])).get("statement") and not new.get("statement"):
        problems.append(f"{sid}: the loader no longer reads it as a yes/no question")
    return problems


def _verify_shuffle(sid: str, new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    from halluscope.judges.answers import parse_mcq_options

    options = parse_mcq_options(str(new["prompt"]))
    source = parse_mcq_options(str(old["query_prompt"]).strip())
    answer = source.get(str(old["label"]).strip().upper())
    if len(options) != 4:
        return [f"{sid}: four options not readable from the prompt"]
    problems = []
    if sorted(options.values()) != sorted(source.values()):
        problems.append(f"{sid}: the options differ from the source's")
    correct = [k for k, v in options.items() if v == answer]
    if len(correct) != 1:
        problems.append(f"{sid}: {len(correct)} options equal the source's correct answer {answer!r}")
    elif correct[0] != new["label"]:
        problems.append(f"{sid}: label {new['label']} but the correct answer is at {correct[0]}")
    if new["label"] == str(old["label"]).strip().upper():
        problems.append(f"{sid}: the correct answer did not move")
    return problems


def verify_parallel(benchmark: str, data: Path, out: Path, *, share: float = 0.6) -> list[str]:
    """Every problem found by reading the written parallel form back (see the module docstring)."""
    problems: list[str] = []
    if benchmark in ("pope", "amber", "hallusionbench"):
        from halluscope.builders.parallel_yesno import verify_yes_no

        return verify_yes_no(benchmark, Path(data), out, share=share)
    if benchmark == "reefknot":
        from halluscope.benchmarks.reefknot import Reefknot, read_reefknot_file, resolve_data_dir

        _, sources = resolve_data_dir(data)
        originals = {task: read_reefknot_file(path) for task, path in sources.items()}
        try:
            written = Reefknot(out)
        except ValueError as error:
            return [f"the parallel form does not load: {error}"]
        for task, rows in written.official_rows.items():
            for line, row in enumerate(rows):
                sid = f"{task}-{line}"
                src = str(row.get("source", ""))
                src_task, _, src_line = src.rpartition("-")
                if src_task != task or not src_line.isdigit() or int(src_line) >= len(originals.get(task, [])):
                    problems.append(f"{sid}: unknown source {src!r}")
                    continue
                old = originals[task][int(src_line)]
                sample = written._sample(task, line, row, rows)
                new = {"prompt": sample.prompt, "label": sample.reference, **sample.metadata}
                if task == "yesno":
                    problems += _verify_negation(f"{sid} (from {src})", new, old)
                elif task == "mcq":
                    problems += _verify_shuffle(f"{sid} (from {src})", new, old)
                else:
                    if str(row["label"]) != str(old["label"]):
                        problems.append(f"{sid} (from {src}): the label changed")
                    old_parts = _VQA_SPLIT.match(str(old["query_prompt"]).strip())
                    new_parts = _VQA_SPLIT.match(sample.prompt)
                    if old_parts is None or new_parts is None or old_parts.group("format") != new_parts.group("format"):
                        problems.append(f"{sid} (from {src}): the answer-format sentence changed")
                    else:
                        problems += verify_paraphrase(f"{sid} (from {src})", new_parts.group("question"),
                                                       old_parts.group("question"), share=share)
        return problems
    if benchmark == "tri-he":
        from halluscope.benchmarks.tri_he import resolve_data_path

        path = resolve_data_path(data)
        old_raw = loads_json(path.read_text(encoding="utf-8"))
        new_raw = loads_json((out / path.name).read_text(encoding="utf-8"))
        if set(old_raw) != set(new_raw):
            problems.append("the images differ from the source's")
        for image_id, entry in new_raw.items():
            old_items = old_raw.get(image_id, {}).get("instance", [])
            for index, item in enumerate(entry.get("instance", [])):
                sid = f"{image_id}-{index}"
                if index >= len(old_items):
                    problems.append(f"{sid}: no such question in the source")
                    continue
                if item.get("answer") != old_items[index].get("answer"):
                    problems.append(f"{sid}: the reference answer changed")
                problems += verify_paraphrase(sid, str(item["question"]), str(old_items[index]["question"]),
                                               share=share)
        return problems
    old_items = {str(i["id"]): i for i in loads_json(_hqh_file(Path(data)).read_text(encoding="utf-8"))}
    for item in loads_json((out / "HQH.json").read_text(encoding="utf-8")):
        sid = str(item.get("id"))
        source = old_items.get(sid)
        if source is None:
            problems.append(f"{sid}: no such item in the source")
            continue
        if any(item.get(k) != source.get(k) for k in ("ground_truth", "type", "image_id")):
            problems.append(f"{sid}: ground truth, type or image changed")
        problems += verify_paraphrase(sid, str(item["instruction"]), str(source["instruction"]), share=share)
    return problems
