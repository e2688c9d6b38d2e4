"""How long scoring all 21,560 official Reefknot items takes when the responses are supplied.

Yes/no and multiple-choice answers are read by both rule sets (paper and robust) for every item; VQA goes
through the bidirectional-entailment path with the judge stubbed out by an instant exact-match function, so
the figure measures halluscope's own work (loading, parsing, records, metrics), not an NLI model's.

The synthetic answers mix the shapes real models produce ("Yes.", "No, there is not.", " B", "The answer
is C.", the option's text, refusals, bare relations), with answer-token probabilities on yes/no items so
the confidence analysis runs too. They are written to a responses file (not timed) and read back with the
benchmark's own reader (timed). Scoring goes in chunks and with the loaded set frozen out of the
collector's walks, as ``halluscope run`` does.

Run: ``.venv/bin/python bench/reefknot_scoring_speed.py`` (reads ``$HALLUSCOPE_SHARED`` or ``../shared``).
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from pathlib import Path

from halluscope.benchmarks import ScoringContext
from halluscope.benchmarks.reefknot import Reefknot
from halluscope.cache import Cache
from halluscope.gcpause import gc_frozen
from halluscope.judges.entailment import FunctionEntailment
from halluscope.runs.runner import DEFAULT_CHUNK_SIZE
from halluscope.types import MetricsReport, Response, Sample, SampleRecord

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO_ROOT.parent / "shared"))
DATA = SHARED / "data" / "reefknot"
CHUNK = DEFAULT_CHUNK_SIZE


def exact_match(premise: str, hypothesis: str) -> bool:
    return premise.lower().strip(" .") == hypothesis.lower().strip(" .")


def synthetic_answer(sample: Sample, rng: random.Random) -> Response:
    meta = sample.metadata
    label = str(meta["label"])
    metadata: dict[str, float] = {}
    if meta["task"] == "yesno":
        text = rng.choice(["Yes.", "yes", "No, there is not.", "No", "I cannot tell from the image.",
                           "No, the eyes are closed.", f"Sure! {label.capitalize()}, it is."])
        p_yes = rng.random()
        metadata = {"yes_prob": p_yes, "no_prob": (1 - p_yes) * rng.uniform(0.8, 1.0)}
    elif meta["task"] == "mcq":
        options = meta.get("options", {})
        letter = rng.choice("ABCD")
        text = rng.choice([letter, f" {letter}", f"({letter})", f"The answer is {letter}.",
                           f"{letter}. {options.get(letter, '')}", options.get(letter, letter)])
    else:
        text = rng.choice([label, "on", "I don't know.", f"The {meta.get('subject', 'thing')} is near it."])
    return Response(id=sample.id, response=text, metadata=metadata)


async def score_all(bench: Reefknot, pairs: list[tuple[Sample, Response | None]]) -> list[SampleRecord]:
    ctx = ScoringContext(cache=Cache(None))
    records: list[SampleRecord] = []
    for start in range(0, len(pairs), CHUNK):
        records.extend(await bench.score_many(pairs[start : start + CHUNK], ctx))
    return records


def score_and_measure(bench: Reefknot, pairs: list[tuple[Sample, Response | None]]) -> tuple[
    list[SampleRecord], MetricsReport, float, float
]:
    """Score and compute the metrics as the runner does (the loaded set frozen out of the collector's walks,
    ``halluscope.gcpause.gc_frozen``); also returns the wall and CPU seconds at which scoring ended."""
    with gc_frozen():
        records = asyncio.run(score_all(bench, pairs))
        scored, cpu_scored = time.perf_counter(), time.process_time()
        return records, bench.metrics(records), scored, cpu_scored


def main() -> None:
    cpu_started = time.process_time()
    started = time.perf_counter()
    judge = FunctionEntailment(exact_match, label="exact-match stub")
    bench = Reefknot(data=DATA, entailment=judge)
    samples = list(bench.samples())
    loaded = time.perf_counter()
    cpu_loaded = time.process_time()

    # The answers are written to a responses file first (not timed), then read back as `halluscope run
    # --responses` reads them (timed, as part of loading).
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        answers_file = Path(tmp) / "answers.jsonl"
        with answers_file.open("w", encoding="utf-8") as out:
            for sample in samples:
                out.write(synthetic_answer(sample, rng).model_dump_json(exclude_defaults=True) + "\n")
        cpu_written = time.process_time()
        written = time.perf_counter()
        answers = bench.read_responses(answers_file, benchmark_ids={s.id for s in samples})
    assert not answers.problems, answers.problems[:3]
    pairs: list[tuple[Sample, Response | None]] = [(s, answers.responses.get(s.id)) for s in samples]
    prepared = time.perf_counter()
    cpu_prepared = time.process_time()
    read_s, cpu_read_s = prepared - written, cpu_prepared - cpu_written

    records, report, scored, cpu_scored = score_and_measure(bench, pairs)
    done = time.perf_counter()
    cpu_done = time.process_time()

    shown = ("scored", "unanswered", "mode_disagreements", "with_answer_probs")
    counts = ", ".join(f"{k} {report.counts[k]}" for k in shown if k in report.counts)
    print(f"items: {len(records)} ({counts})")
    print(f"load official files:          {loaded - started:6.2f} s")
    print(f"read the responses file:       {read_s:6.2f} s")
    print(f"score (both modes, chunks {CHUNK}): {scored - prepared:6.2f} s  "
          f"({1e6 * (scored - prepared) / len(records):.0f} µs/item; {judge.calls} stub entailment calls)")
    print(f"metrics + confidence:          {done - scored:6.2f} s")
    print(f"total (load + read + score + metrics): {(loaded - started) + read_s + (done - prepared):5.2f} s")
    # CPU time of this process: what the wall-clock figures are when the machine is not shared.
    cpu_total = (cpu_loaded - cpu_started) + cpu_read_s + (cpu_done - cpu_prepared)
    print(f"cpu: load {cpu_loaded - cpu_started:.2f} s, read {cpu_read_s:.2f} s, "
          f"score {cpu_scored - cpu_prepared:.2f} s, metrics {cpu_done - cpu_scored:.2f} s, total {cpu_total:.2f} s")
    robust, paper = report.metrics["robust_r_score"], report.metrics["paper_r_score"]
    print(f"R (robust) {robust:.2f}, R (paper) {paper:.2f}")


if __name__ == "__main__":
    main()
