"""The records every stage of halluscope exchanges.

Stages (benchmark, model, extractor, judge, metrics) talk to each other only through these records, so
any stage can be re-run on its own from saved files. Keep this module small: it is the contract.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class VerdictLabel(StrEnum):
    """What a judge concluded about one claim."""

    SUPPORTED = "supported"
    HALLUCINATED = "hallucinated"
    #: The judge failed or answered something unparseable. Never counted as right or wrong.
    UNJUDGED = "unjudged"


class ErrorType(StrEnum):
    """Which part of a hallucinated claim the image does not support."""

    OBJECT = "object"
    RELATION = "relation"
    ATTRIBUTE = "attribute"


class Support(StrEnum):
    """What the image's ground truth says about a claim, three ways (judges that can tell; else None).

    ``verdict`` keeps Tri-HE's two-way reading (anything not supported is hallucinated); ``support`` says
    whether the ground truth *contradicts* the claim (a recorded fact or attribute says otherwise, or the
    object is not in the image) or is merely *silent* about it (``unverifiable``): scene graphs are
    incomplete, and silence is not evidence of a hallucination.
    """

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    UNVERIFIABLE = "unverifiable"


class Claim(BaseModel):
    """One (subject, relation, object) statement made by a model about an image."""

    model_config = ConfigDict(frozen=True)

    subject: str
    relation: str
    object: str

    @field_validator("subject", "relation", "object")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.subject, self.relation, self.object)

    def text(self) -> str:
        """The claim as a plain phrase, the way the Tri-HE similarity judge reads it."""
        return f"{self.subject} {self.relation} {self.object}"

    @classmethod
    def of(cls, triple: tuple[str, str, str] | list[str]) -> Claim:
        if len(triple) != 3:
            raise ValueError(f"a claim needs exactly 3 parts, got {len(triple)}: {triple!r}")
        subject, relation, obj = triple
        return cls(subject=str(subject), relation=str(relation), object=str(obj))


class Verdict(BaseModel):
    """A judge's decision on one claim, with what it rests on."""

    label: VerdictLabel
    #: Set only when ``label`` is hallucinated; None when the judge cannot tell which part is wrong.
    error: ErrorType | None = None
    #: The judge's score (similarity, probability); None for judges that only give a label.
    score: float | None = None
    #: Reference facts the decision rests on (reference triplets, scene-graph facts).
    evidence: list[str] = Field(default_factory=list)
    #: Why: the judge's own words, or the reason a claim stayed unjudged.
    explanation: str | None = None
    #: Three-way reading (supported / contradicted / unverifiable) for judges that make it; None otherwise.
    support: Support | None = None

    @classmethod
    def unjudged(cls, reason: str) -> Verdict:
        return cls(label=VerdictLabel.UNJUDGED, explanation=reason)


class JudgedClaim(BaseModel):
    """A claim together with its verdict: the unit stored in ``samples.jsonl``."""

    subject: str
    relation: str
    object: str
    verdict: VerdictLabel
    error: ErrorType | None = None
    score: float | None = None
    evidence: list[str] = Field(default_factory=list)
    explanation: str | None = None
    #: supported | contradicted | unverifiable, from judges that tell them apart (absent in older run logs).
    support: Support | None = None

    @classmethod
    def from_parts(cls, claim: Claim, verdict: Verdict) -> JudgedClaim:
        return cls(
            subject=claim.subject,
            relation=claim.relation,
            object=claim.object,
            verdict=verdict.label,
            error=verdict.error,
            score=verdict.score,
            evidence=verdict.evidence,
            explanation=verdict.explanation,
            support=verdict.support,
        )

    def claim(self) -> Claim:
        return Claim(subject=self.subject, relation=self.relation, object=self.object)


class Sample(BaseModel):
    """One benchmark item: a prompt about an image, with whatever the benchmark knows to be true.

    ``id`` is stable across versions and documented per benchmark, so responses files and run logs
    from different tools can be joined on it.
    """

    id: str
    benchmark: str
    prompt: str
    image_id: str | None = None
    #: Path to the image on disk when the benchmark knows it (may not exist on this machine).
    image_path: str | None = None
    #: The benchmark's reference answer, when it has one.
    reference: str | None = None
    #: Benchmark-specific fields (question index, task, relation type, label, ...).
    metadata: dict[str, Any] = Field(default_factory=dict)


class Response(BaseModel):
    """What a model answered to one sample."""

    id: str
    response: str
    #: Claims supplied with the response (already extracted); when present, extraction is skipped.
    claims: list[Claim] | None = None
    model: str | None = None
    #: Backend extras: answer-token probabilities, transcripts of multi-step mitigations, usage.
    metadata: dict[str, Any] = Field(default_factory=dict)


class SampleRecord(BaseModel):
    """One line of a run's ``samples.jsonl``: a sample, the response, and every judged claim."""

    model_config = ConfigDict(extra="allow")

    id: str
    prompt: str
    response: str | None
    claims: list[JudgedClaim] = Field(default_factory=list)
    #: Where the claims came from: "extracted", "supplied" (pre-extracted in the responses file).
    claims_source: str | None = None
    #: Set when a stage failed for this sample; the sample is kept and reported, not dropped.
    failure: str | None = None
    #: The stage whose failure left this sample unscored ("model", "extractor", "judge", "scoring"), or
    #: "input" when the failure lies in the data (a missing response, no scene graph); None without a
    #: failure. The runner fills it in for every benchmark (``runs.runner.settle_failures``); stage
    #: failures decide whether a run failed.
    failed_stage: str | None = None
    image_id: str | None = None
    image_path: str | None = None
    #: The benchmark's reference answer, when it has one.
    reference: str | None = None
    #: The model that gave the response, when known.
    model: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def count(self, label: VerdictLabel, error: ErrorType | None = None) -> int:
        return sum(1 for c in self.claims if c.verdict == label and (error is None or c.error == error))

    # -- the benchmark's own fields ---------------------------------------------------------------------
    # A benchmark writes what its metrics need (``label``, ``prediction``, ``type``, ...) either as extra
    # top-level fields of the record or in ``metadata``. These two methods are the one place that says where
    # to look: the extra field first — even when it is None, which a benchmark writes on purpose ("no
    # prediction") — then metadata. The declared fields (``response``, ``image_id``, ...) are attributes.

    def field(self, name: str, default: Any = None) -> Any:
        """The benchmark's field ``name``: the record's extra field if present, else ``metadata[name]``,
        else ``default``."""
        extra = self.model_extra
        if extra and name in extra:
            return extra[name]
        return self.metadata.get(name, default)

    def fields(self) -> dict[str, Any]:
        """All the benchmark's fields at once (metadata, then the extra fields over it): what :meth:`field`
        reads one name of, for code that looks up many names per record."""
        return {**self.metadata, **(self.model_extra or {})}


class MetricsReport(BaseModel):
    """The content of a run's ``metrics.json``: what every benchmark's metrics function returns.

    It lives here, in the contract, so metrics/, runs/, report/ and quality/ read it without importing
    benchmarks/.
    """

    benchmark: str
    metrics: dict[str, float | None]
    groups: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    #: Anything else worth keeping that is not a single number (distributions, curves).
    details: dict[str, Any] = Field(default_factory=dict)
    #: The confidence interval of each headline metric the benchmark declares, on the metric's scale:
    #: ``low``, ``high``, ``level``, ``method``, resampling ``unit``, ``n`` items, ``units``, ``seed``,
    #: ``resamples``; None where the metric is undefined. Empty for a benchmark that declares none.
    intervals: dict[str, dict[str, Any] | None] = Field(default_factory=dict)
    #: The same per group of ``groups`` (group -> metric -> interval), where the benchmark's tables give groups.
    group_intervals: dict[str, dict[str, dict[str, Any] | None]] = Field(default_factory=dict)
    #: For benchmarks whose headlines a judge decides: the judge's measured sensitivity and specificity on
    #: labelled real answers and each judged headline corrected for them, with an interval carrying both
    #: errors; or ``measured: null`` and a note that the judge's error was not measured.
    judge_error: dict[str, Any] = Field(default_factory=dict)
