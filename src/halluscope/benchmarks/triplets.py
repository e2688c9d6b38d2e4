"""Scoring open answers claim by claim: the pipeline shared by Tri-HE-kind benchmarks.

answer → claims (supplied with the response, or extracted) → one verdict per claim against the image's
scene graph. Extractions and judgements are cached by content (component identity + exact input), so a
re-run, a resumed run, or a second model giving the same answer costs nothing; results containing an
``unjudged`` verdict are not cached, so a judge that timed out is asked again next time.

A stage :class:`~halluscope.stages.Failure` (the extractor or the judge could not answer for a sample, e.g.
its endpoint is down) marks the record failed, with ``failed_stage`` saying which stage, so that the run
counts it, a resumed run retries it, and the runner can fail a run whose stage failed too often. LLM judges
report a reply they cannot read the same way. A claim the judge could not decide (an image with no facts to
judge against) is different: it stays ``unjudged`` in a finished record.

The family's declared headline (:func:`triplet_declarations`, :func:`triplet_tables`) lives here too, so
Tri-HE and the synthetic benchmark bound the same rates over the same unit, the image.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from statistics import fmean
from typing import Any

from halluscope.benchmarks.base import ScoringContext
from halluscope.cache import content_key
from halluscope.metrics.triplets import question_rates
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, Judge, JudgeItem, MetricDeclaration, MetricTable
from halluscope.types import Claim, JudgedClaim, Response, Sample, SampleRecord, Verdict, VerdictLabel

EXTRACT_NAMESPACE = "extract"
JUDGE_NAMESPACE = "judge"


async def _extract(texts: list[str], ctx: ScoringContext) -> list[list[Claim] | Failure]:
    """Claims for each text, from the cache where possible."""
    if ctx.extractor is None:
        return [Failure("the response has no claims and no extractor was chosen")] * len(texts)
    identity = ctx.extractor.identity()
    keys = [content_key(identity, text) for text in texts]
    cached = ctx.cache.get_many(EXTRACT_NAMESPACE, keys)
    results: list[list[Claim] | Failure | None] = [
        [Claim.of(t) for t in cached[k]] if k in cached else None for k in keys
    ]
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        unique = list(dict.fromkeys(texts[i] for i in missing))
        fresh = await ctx.extractor.extract_many(unique)
        by_text = dict(zip(unique, fresh, strict=True))
        ctx.cache.put_many(
            EXTRACT_NAMESPACE,
            {
                content_key(identity, t): [list(c.as_tuple()) for c in r]
                for t, r in by_text.items()
                if not isinstance(r, Failure)
            },
        )
        for i in missing:
            results[i] = by_text[texts[i]]
    return [r if r is not None else Failure("extraction produced no result") for r in results]


def _judge_key(identity: dict[str, Any], item: JudgeItem) -> str:
    return content_key(identity, item.scene.fingerprint(), item.question, [c.as_tuple() for c in item.claims])


async def _judge(items: list[JudgeItem], ctx: ScoringContext) -> list[list[Verdict] | Failure]:
    """Verdicts for each item, from the cache where possible."""
    if ctx.judge is None:
        return [Failure("no judge was chosen")] * len(items)
    if not isinstance(ctx.judge, Judge):
        return [ctx.judge.not_claims()] * len(items)
    identity = ctx.judge.identity()
    keys = [_judge_key(identity, item) for item in items]
    cached = ctx.cache.get_many(JUDGE_NAMESPACE, keys)
    results: list[list[Verdict] | Failure | None] = [
        [Verdict.model_validate(v) for v in cached[k]] if k in cached else None for k in keys
    ]
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        fresh = await ctx.judge.judge_many([items[i] for i in missing])
        to_store: dict[str, Any] = {}
        for i, verdicts in zip(missing, fresh, strict=True):
            if not isinstance(verdicts, Failure) and len(verdicts) != len(items[i].claims):
                verdicts = Failure(
                    f"the judge returned {len(verdicts)} verdicts for {len(items[i].claims)} claims"
                )
            results[i] = verdicts
            if not isinstance(verdicts, Failure) and all(v.label != VerdictLabel.UNJUDGED for v in verdicts):
                to_store[keys[i]] = [v.model_dump(mode="json") for v in verdicts]
        ctx.cache.put_many(JUDGE_NAMESPACE, to_store)
    return [r if r is not None else Failure("judging produced no result") for r in results]


def _base_record(sample: Sample, response: Response | None) -> SampleRecord:
    metadata = dict(sample.metadata)
    if response is not None and response.metadata:
        metadata["response_metadata"] = response.metadata
    return SampleRecord(
        id=sample.id,
        prompt=sample.prompt,
        response=response.response if response is not None else None,
        image_id=sample.image_id,
        metadata=metadata,
        image_path=sample.image_path,
        reference=sample.reference,
        model=response.model if response is not None else None,
    )


async def score_open_answers(
    pairs: Sequence[tuple[Sample, Response | None]],
    scene_of: Callable[[Sample], SceneGraph | None],
    ctx: ScoringContext,
) -> list[SampleRecord]:
    """Score every (sample, response) pair; problems are recorded per sample, never raised."""
    records = [_base_record(sample, response) for sample, response in pairs]
    scenes = [scene_of(sample) for sample, _ in pairs]

    claims_of: list[list[Claim] | None] = [None] * len(pairs)
    to_extract: list[int] = []
    for i, (sample, response) in enumerate(pairs):
        if response is None:
            records[i].failure = "missing response: the responses file has no answer for this sample"
        elif scenes[i] is None:
            records[i].failure = f"no scene graph for image {sample.image_id!r}"
            records[i].failed_stage = "input"
        elif response.claims is not None:
            claims_of[i] = list(dict.fromkeys(response.claims))
            records[i].claims_source = "supplied"
        else:
            to_extract.append(i)

    if to_extract:
        texts = [response.response for i in to_extract if (response := pairs[i][1]) is not None]
        extracted = await _extract(texts, ctx)
        for i, result in zip(to_extract, extracted, strict=True):
            if isinstance(result, Failure):
                records[i].failure = f"extraction failed: {result.reason}"
                records[i].failed_stage = "extractor"
            else:
                claims_of[i] = list(dict.fromkeys(result))
                records[i].claims_source = "extracted"

    judge_indices = [i for i, claims in enumerate(claims_of) if claims]
    items = [
        JudgeItem(
            sample_id=pairs[i][0].id,
            claims=list(claims_of[i] or []),
            scene=scenes[i],  # type: ignore[arg-type]  # checked above: samples without a scene failed
            question=pairs[i][0].prompt,
            response=records[i].response,
            extra={"image_path": pairs[i][0].image_path},  # for judges that look at the photo (vlm)
        )
        for i in judge_indices
    ]
    if items:
        judged = await _judge(items, ctx)
        for i, item, verdicts in zip(judge_indices, items, judged, strict=True):
            if isinstance(verdicts, Failure):
                # Claims left unjudged by a stage failure: the record is failed, so it is retried.
                records[i].failure = f"judge failed: {verdicts.reason}"
                records[i].failed_stage = "judge"
                verdicts = [Verdict.unjudged(f"judge failed: {verdicts.reason}")] * len(item.claims)
            records[i].claims = [
                JudgedClaim.from_parts(claim, verdict)
                for claim, verdict in zip(item.claims, verdicts, strict=True)
            ]
    return records


# -- declared headline metrics (Tri-HE and the synthetic benchmark) -------------------------------------------

#: The per-question rates of :func:`halluscope.metrics.triplets.question_rates`, as table components.
_KINDS = ("all", "object", "relation", "attribute", "contradicted", "unverifiable")
#: metric-name stem → (rate kind, which runs define it, what it counts), as ``triplet_metrics`` names them.
_RATES = {
    "hallu": ("all", "all", "hallucinated"),
    "object_hallu": ("object", "typed", "with a hallucinated object"),
    "relation_hallu": ("relation", "typed", "with a hallucinated relation"),
    "attribute_hallu": ("attribute", "typed", "with a hallucinated attribute"),
    "contradicted_hallu": ("contradicted", "three_way", "the ground truth contradicts"),
    "unverifiable_share": ("unverifiable", "three_way", "the scene graph cannot check"),
}


#: The rates whose numerator is the judge's call on each claim, and which reading of "hallucinated" they count
#: (the judge's measured error corrects these; ``judges.agreement``): Tri-HE's paper rate counts every claim
#: not supported, the three-way headline only those the ground truth contradicts.
_JUDGED = {"hallu": "paper", "contradicted_hallu": "default"}


def triplet_declarations() -> tuple[MetricDeclaration, ...]:
    """Every rate ``triplet_metrics`` reports, over the tables of :func:`triplet_tables`.

    Why two tables per rate: ``*_q`` is a mean over questions (a ratio of sums over one row per question),
    but a question's claims and its image's other questions share one picture, so its unit is the image;
    ``*_i`` weighs each image once (a mean of per-image means), so its rows are the images themselves.
    """

    def declare(name: str, components: tuple[str, str], table: str, description: str) -> MetricDeclaration:
        return MetricDeclaration(
            name=name, statistic="ratio", components=components, higher_is_better=False, table=table,
            unit="image", description=description, judged=_JUDGED.get(name.rsplit("_", 1)[0]),
        )  # fmt: skip

    declarations = []
    for stem, (kind, defined, what) in _RATES.items():
        for suffix, table, per in (("q", "questions", "question"), ("i", "images", "image")):
            description = f"share of judged claims {what}, averaged per {per}"
            declarations.append(declare(f"{stem}_{suffix}", (kind, f"{defined}_{table}"), table, description))
    for suffix, table, per in (("q", "questions_with_empty", "question"), ("i", "images_with_empty", "image")):
        description = f"share of judged claims hallucinated, averaged per {per}, a claimless answer as 0"
        declarations.append(declare(f"hallu_{suffix}_with_empty", ("all", f"all_{table}"), table, description))
    return tuple(declarations)


def _run_kinds(records: Sequence[SampleRecord]) -> tuple[bool, bool]:
    """Whether the run's typed rates and its three-way rates are defined, by ``triplet_metrics``' rules: typed
    when no hallucinated claim of a scored record lacks a type; three-way when every scored question has a
    ``support`` reading."""
    typed = not any(
        c.verdict == VerdictLabel.HALLUCINATED and c.error is None
        for r in records
        if r.failure is None
        for c in r.claims
    )
    rates = [question_rates(r) for r in records if r.failure is None and r.claims]
    scored = [q for q in rates if q is not None]
    return typed, bool(scored) and all("contradicted" in q for q in scored)


def _table(
    rows: dict[str, tuple[str, dict[str, float]]], flags: dict[str, bool], table: str, clustered: bool
) -> MetricTable:
    """Rows (id → (image, rates)) as a table: each rate kind (0 where absent) and, per denominator kind, 1 on
    every row when the run defines that family of rates, else 0 (so the rate is undefined, as reported)."""
    components: dict[str, list[float]] = {kind: [rates.get(kind, 0.0) for _, rates in rows.values()] for kind in _KINDS}
    for flag, on in flags.items():
        components[f"{flag}_{table}"] = [float(on)] * len(rows)
    clusters = [image for image, _ in rows.values()] if clustered else None
    return MetricTable(ids=list(rows), components=components, clusters=clusters)


def _image_means(rows: dict[str, tuple[str, dict[str, float]]]) -> dict[str, tuple[str, dict[str, float]]]:
    """Per image, the mean of each rate kind over its questions (only over those that have the kind)."""
    by_image: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for image, rates in rows.values():
        for kind, value in rates.items():
            by_image[image][kind].append(value)
    return {image: (image, {k: fmean(v) for k, v in kinds.items()}) for image, kinds in by_image.items()}


def triplet_tables(records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
    """The tables :func:`triplet_declarations` read, from the records ``triplet_metrics`` counts: failed
    records left out; a question with no judged claim left out (with a claimless answer kept, as 0, in the
    ``*_with_empty`` tables only); one row per question, or per image holding the mean of its questions."""
    typed, three_way = _run_kinds(records)
    questions: dict[str, tuple[str, dict[str, float]]] = {}
    with_empty: dict[str, tuple[str, dict[str, float]]] = {}
    for record in records:
        if record.failure is not None:
            continue
        image = record.image_id or record.id
        if not record.claims:
            with_empty[record.id] = (image, {"all": 0.0})
            continue
        rates = question_rates(record)
        if rates is None:
            continue
        questions[record.id] = (image, rates)
        with_empty[record.id] = (image, {"all": rates["all"]})
    flags = {"all": True, "typed": typed, "three_way": three_way}
    return {
        "questions": _table(questions, flags, "questions", clustered=True),
        "images": _table(_image_means(questions), flags, "images", clustered=False),
        "questions_with_empty": _table(with_empty, {"all": True}, "questions_with_empty", clustered=True),
        "images_with_empty": _table(_image_means(with_empty), {"all": True}, "images_with_empty", clustered=False),
    }
