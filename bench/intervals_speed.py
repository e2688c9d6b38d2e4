"""How long the headline intervals and a paired report take on POPE's 27,000 questions.

POPE's full release (COCO, A-OKVQA and GQA, three settings each: 27,000 questions about 1,500 images) is
answered by a simulated model whose chance of being right varies by image (so the cluster bootstrap has real
clustering to resample), scored as a run scores it, then timed:

- the intervals a run writes (overall and per set: 5 headlines x 10 groups, 4,000 resamples each), from the
  records, as the runner computes them;
- a paired report of two such runs (both runs' saved tables read back, every headline compared, Holm);
- the intervals of a Tri-HE run of 1,699 judged claims (every triplet rate, per question and per image), on
  simulated records: 300 images, four questions each, each claim hallucinated with its image's chance.

    python bench/intervals_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from halluscope.benchmarks.pope import Pope
from halluscope.benchmarks.tri_he import TriHE
from halluscope.cache import Cache
from halluscope.report.compare import compare_runs
from halluscope.runs.runner import headline_intervals
from halluscope.runs.store import METRICS_FILE
from halluscope.stages import ScoringContext
from halluscope.types import ErrorType, JudgedClaim, Response, SampleRecord, Support, VerdictLabel

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def simulated_answers(bench: Pope, seed: int) -> list[Response]:
    rng = np.random.default_rng(seed)
    skill: dict[str, float] = {}
    answers = []
    for sample in bench.samples():
        image = sample.image_id or sample.id
        if image not in skill:
            skill[image] = float(rng.beta(8, 1.5))
        label = str(sample.metadata["label"]).lower()
        right = rng.random() < skill[image]
        said = label if right else ("no" if label == "yes" else "yes")
        answers.append(Response(id=sample.id, response=said.capitalize()))
    return answers


def scored_run(bench: Pope, seed: int, out: Path) -> list[SampleRecord]:
    samples = list(bench.samples())
    by_id = {a.id: a for a in simulated_answers(bench, seed)}
    ctx = ScoringContext(cache=Cache(None))
    records = asyncio.run(bench.score_many([(s, by_id[s.id]) for s in samples], ctx))
    out.mkdir(parents=True, exist_ok=True)
    report = bench.metrics(records)
    report.intervals, report.group_intervals = headline_intervals(bench, records, out_dir=out)
    (out / METRICS_FILE).write_text(report.model_dump_json())
    return records


def tri_he_records(seed: int, claims_wanted: int = 1699) -> list[SampleRecord]:
    """Judged Tri-HE answers: 300 images, four questions each, claims dealt out until ``claims_wanted``."""
    rng = np.random.default_rng(seed)
    questions = [(f"img{i}", f"img{i}-q{j}") for i in range(300) for j in range(4)]
    per_question = np.bincount(rng.integers(0, len(questions), size=claims_wanted), minlength=len(questions))
    skill = {image: float(rng.beta(2, 5)) for image, _ in questions}
    records = []
    for (image, qid), count in zip(questions, per_question, strict=True):
        claims = []
        for _ in range(int(count)):
            wrong = bool(rng.random() < skill[image])
            error = (ErrorType.OBJECT if rng.random() < 0.5 else ErrorType.RELATION) if wrong else None
            claims.append(JudgedClaim(
                subject="man", relation="holds", object="cup",
                verdict=VerdictLabel.HALLUCINATED if wrong else VerdictLabel.SUPPORTED, error=error,
                support=(Support.CONTRADICTED if rng.random() < 0.6 else Support.UNVERIFIABLE) if wrong
                else Support.SUPPORTED,
            ))  # fmt: skip
        records.append(SampleRecord(id=qid, prompt="What is the man doing?", response="He holds a cup.",
                                    image_id=image, claims=claims))  # fmt: skip
    return records


def time_tri_he(repeats: int) -> None:
    bench = TriHE(SHARED / "data" / "tri-he")
    records = tri_he_records(3)
    claims = sum(len(r.claims) for r in records)
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        overall, _ = headline_intervals(bench, records)
        timings.append(time.perf_counter() - started)
    rates = sum(v is not None for v in overall.values())
    print(f"Tri-HE: intervals of {rates} rates over {claims} claims, {len(records)} questions: "
          f"best {min(timings):.2f} s of {repeats}")  # fmt: skip
    hallu_q = overall["hallu_q"]
    assert hallu_q is not None
    print(f"  hallu_q {hallu_q['estimate']:.2f} [{hallu_q['low']:.2f}, {hallu_q['high']:.2f}] over "
          f"{hallu_q['units']} {hallu_q['unit']}s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bench = Pope(SHARED / "data" / "pope")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [Path(tmp) / "a", Path(tmp) / "b"]
        records = scored_run(bench, 1, runs[0])
        scored_run(bench, 2, runs[1])
        print(f"{len(records)} questions, {len({r.image_id for r in records})} images")
        timings = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            overall, groups = headline_intervals(bench, records)
            timings.append(time.perf_counter() - started)
        print(f"intervals of one run (5 headlines, {len(groups)} groups): best {min(timings):.2f} s of {args.repeats}")
        accuracy = overall["accuracy"]
        assert accuracy is not None
        print(f"  accuracy {accuracy['estimate']:.2f} [{accuracy['low']:.2f}, {accuracy['high']:.2f}] over "
              f"{accuracy['units']} {accuracy['unit']}s")  # fmt: skip
        timings = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            comparison = compare_runs(runs[0], [runs[1]])[0]
            timings.append(time.perf_counter() - started)
        print(f"paired report of two runs: best {min(timings):.2f} s of {args.repeats}")
        for metric in comparison.metrics:
            c = metric.comparison
            if c is not None and c.interval is not None:
                print(f"  {metric.metric}: {c.difference:+.2f} [{c.interval.low:+.2f}, {c.interval.high:+.2f}] "
                      f"p={c.p_value:.3g} ({c.test})")  # fmt: skip
    time_tri_he(args.repeats)


if __name__ == "__main__":
    main()
