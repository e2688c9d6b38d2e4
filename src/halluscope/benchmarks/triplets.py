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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from halluscope.benchmarks.base import ScoringContext
from halluscope.cache import content_key
from halluscope.scene.graph import SceneGraph
from halluscope.stages import Failure, Judge, JudgeItem
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
