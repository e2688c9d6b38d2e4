"""The interfaces of the pipeline's pluggable stages: benchmarks, claim extractors, and judges of claims
or of whole answers.

A benchmark scores in its own way (Tri-HE extracts claims and judges them against a scene graph;
Reefknot parses a yes/no or a letter; HQH asks a judge), so scoring lives with the benchmark, while the
run machinery (responses, resume, caching, logs) in runs/ is shared by all of them and needs only this
interface, never a benchmark module.

Both work on batches, because the fast implementations (sentence embeddings, spaCy) gain from seeing many
inputs at once, while LLM-backed ones fan a batch out into concurrent requests. Both report a failure per
item instead of raising, so one bad answer never stops a run. Caching of stage results is done by the
runner around these calls, keyed on :meth:`identity`, so implementations stay simple.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from halluscope.cache import Cache
from halluscope.options import BenchmarkOption
from halluscope.types import Claim, MetricsReport, Response, Sample, SampleRecord, Verdict

if TYPE_CHECKING:
    from halluscope.responses import ResponsesFile
    from halluscope.scene.graph import SceneGraph


@dataclass(frozen=True)
class Failure:
    """A stage could not produce a result for one item; ``reason`` says why, in words a user can act on."""

    reason: str


@dataclass
class JudgeItem:
    """Everything a judge may look at for one answer: its claims and the image's ground truth."""

    sample_id: str
    claims: list[Claim]
    scene: SceneGraph
    question: str | None = None
    response: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Extractor(ABC):
    """Turns a free-form answer into (subject, relation, object) claims."""

    name: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """Everything that changes this extractor's output; part of cache keys and of ``spec.json``."""
        return {"extractor": self.name}

    @abstractmethod
    async def extract_many(self, texts: Sequence[str]) -> list[list[Claim] | Failure]:
        """Claims for each text, in order; a :class:`Failure` where extraction failed."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients or models."""


class Judge(ABC):
    """Decides, for each claim, whether the image's ground truth supports it."""

    name: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """Everything that changes this judge's verdicts; part of cache keys and of ``spec.json``."""
        return {"judge": self.name}

    @abstractmethod
    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[Verdict] | Failure]:
        """One verdict per claim for each item, in order; a :class:`Failure` where the whole item failed.

        A judge that fails on a single claim returns ``Verdict.unjudged(reason)`` for it instead.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients or models."""


ItemT = TypeVar("ItemT")
GradeT = TypeVar("GradeT")


class AnswerJudge(ABC, Generic[ItemT, GradeT]):
    """A judge of whole answers rather than of claims (HQH's correct/incorrect, MMHal-Bench's 0-6 rating,
    HallusionBench's correct/incorrect/unclear, PROVE's visual entailment of a statement).

    What an item holds and what a grade says differ by benchmark, so the protocol is generic in both; a
    benchmark checks that the judge in its slot grades its kind of item and says which judges do when not.
    It fills the same judge slot as a claim :class:`Judge` (``--judge``, ``--judge-model``, ``--judge-opt``),
    and reports a per-item :class:`Failure` instead of raising, like every stage.
    """

    name: ClassVar[str]
    #: The benchmark whose answers it grades, as named to users and on the command line.
    answers_of: ClassVar[str]
    benchmark_option: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """Everything that changes this judge's grades; part of cache keys and of ``spec.json``."""
        return {"judge": self.name}

    @abstractmethod
    async def grade_many(self, items: Sequence[ItemT]) -> list[GradeT | Failure]:
        """One grade per item, in order; a :class:`Failure` where grading it failed (redone on resume)."""

    async def aclose(self) -> None:
        """Release clients or models."""

    def not_claims(self) -> Failure:
        """Why this judge cannot fill the slot of a benchmark that judges claims."""
        return Failure(
            f"judge {self.name!r} grades whole {self.answers_of} answers, not claims; use it with "
            f"--benchmark {self.benchmark_option}"
        )


#: Whatever fills a run's judge slot: a judge of claims or a judge of whole answers.
AnyJudge = Judge | AnswerJudge[Any, Any]


@dataclass
class ScoringContext:
    """What a benchmark may use to score: the chosen extractor and judge, and the shared cache."""

    cache: Cache
    extractor: Extractor | None = None
    judge: AnyJudge | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricDeclaration:
    """One headline metric as a benchmark declares it: what it aggregates, how, and over which units.

    Why declared: the interval on every headline number, the paired test between two runs and the smallest
    difference a benchmark can see are computed once, in ``metrics.declared``, from these declarations and
    the benchmark's :meth:`BenchmarkInterface.metric_tables`, never re-implemented per benchmark. The point estimate a
    declaration gives equals the benchmark's own figure in ``metrics.json`` (tested for every benchmark).

    ``statistic`` is ``"ratio"`` (``scale · Σ components[0] / Σ components[1]``: an accuracy, a rate, CHAIRi,
    a mean score) or ``"f1"`` (components are true positives, false positives, false negatives).
    ``table`` names the benchmark's table of per-item components it reads (``"items"`` by default; a
    benchmark whose metric counts figures or question sets gives a table with one row per figure), and
    ``unit`` what one resampling unit of that table is (``"item"`` when rows are independent, else the image,
    figure, question set or caption rows share).
    """

    name: str
    statistic: str
    components: tuple[str, ...]
    scale: float = 100.0
    #: Which direction is better: True, False, or None where neither is (a yes-ratio, 50 % being unbiased).
    higher_is_better: bool | None = True
    table: str = "items"
    unit: str = "item"
    #: Shown to users beside the number: what it measures, in a few words.
    description: str = ""
    #: For a rate of what a judge called hallucinated (the numerator counts the judge's calls among the
    #: denominator's items): which reading of "hallucinated" it counts (``"paper"``: the verdict; ``"default"``:
    #: contradicted by the ground truth). The judge's measured error then corrects it (``judges.agreement``),
    #: or the run says that error was not measured. None for a metric no judge decides.
    judged: str | None = None

    def __post_init__(self) -> None:
        wanted = {"ratio": 2, "f1": 3}
        if self.statistic not in wanted:
            raise ValueError(f"metric {self.name!r}: statistic must be one of {sorted(wanted)}, not {self.statistic!r}")
        if len(self.components) != wanted[self.statistic]:
            raise ValueError(
                f"metric {self.name!r}: a {self.statistic} takes {wanted[self.statistic]} components, "
                f"got {list(self.components)}"
            )


@dataclass(frozen=True)
class HeadlineView:
    """The table a user of a benchmark's own tool expects to read, declared once by the benchmark: which
    figures, under which names, in which order, and whether a row per group (POPE's sets, HallusionBench's
    splits, AMBER's dimensions) or the run as one row.

    Why declared: a user compares halluscope's figures with those their tool printed (LLaVA's eval_pope prints
    Accuracy, Precision, Recall, F1 and Yes-ratio per set; chair.py CHAIRs, CHAIRi, Recall, Len), so the
    terminal after ``run``, ``report`` (terminal, CSV, markdown) and the HTML report all lead with that table,
    made from this one declaration and the run's ``metrics.json`` (``report.headline``).
    """

    #: What the table is, in the words of the benchmark's users ("POPE per set, as LLaVA's eval_pope prints it").
    title: str
    #: (metric key in ``metrics.json``, the name the peer tool prints), in the peer tool's order.
    columns: tuple[tuple[str, str], ...]
    #: ``"groups"``: a row per group of ``metrics.json`` (then the run as a whole, when ``overall``);
    #: ``"overall"``: the run as one row.
    rows: str = "groups"
    #: Whether a row of the whole run closes a table of groups (eval_pope prints none: its sets are its rows).
    overall: bool = True

    def __post_init__(self) -> None:
        if self.rows not in ("groups", "overall"):
            raise ValueError(f"view {self.title!r}: rows must be 'groups' or 'overall', not {self.rows!r}")

    @property
    def keys(self) -> tuple[str, ...]:
        """The metric keys of the columns, in order."""
        return tuple(key for key, _ in self.columns)


@dataclass
class MetricTable:
    """Per-item components of a benchmark's metrics: row ``i`` is item ``ids[i]`` (a sample id, or a figure or
    question-set id for a table over those), in resampling unit ``clusters[i]`` (None: every row its own
    unit), with ``components[name][i]`` its value of each component (1/0 for a hit, a count, a score)."""

    ids: list[str]
    components: dict[str, list[float]]
    clusters: list[str] | None = None
    #: Each row's group in ``metrics.json``'s ``groups`` (POPE's ``coco/adversarial``), where the benchmark
    #: reports its headlines per group too: each group then gets its own intervals.
    groups: list[str] | None = None
    #: What a unit of this table is when it differs from the declarations' ``unit``: POPE answers read from a
    #: file that names no image cannot be grouped by image, and each question is then its own unit.
    unit: str | None = None


@dataclass
class ExternalRow:
    """One row of another tool's answer file, as an importer read it: where it is, its fields, the answer.

    Why here: importers hand these to a benchmark's layout hooks (:meth:`BenchmarkInterface.items_from_rows`), so
    the record is part of the contract between the two layers, not of either.
    """

    where: str
    fields: dict[str, Any]
    answer: str | None
    problem: str | None = None
    #: The question the row says was asked (checked against the matched sample's question), if it has one.
    question: str | None = None
    #: The row's line or spreadsheet row number in its file, where the tool's layout has one.
    number: int | None = None


@dataclass(frozen=True)
class TaskOrder:
    """The sample ids of a harness task's documents in the order the harness numbers them (lmms-eval's
    ``doc_id`` is a position in the dataset split its task read), and that order in words."""

    task: str
    name: str
    ids: list[str]


class SampleSource(Protocol):
    """Anything that lists samples in order: a benchmark, or a run's selection of its samples
    (``runs.selection.Selection``); helpers that only read samples take either."""

    def samples(self) -> Iterator[Sample]: ...


PROFILE_KINDS = ("object", "attribute", "relation")
PROFILE_FORMS = ("discriminative", "generative")


@dataclass(frozen=True)
class ProfileFigure:
    """One figure of ``metrics.json`` as a measure of one kind of hallucination in one form of question.

    Why declared: a suite's leaderboard shows each model's hallucination profile across benchmarks (object,
    attribute, relation; discriminative yes/no or choice questions vs generative free answers), and only the
    benchmark knows which of its figures measures what. ``metric`` is a key of ``metrics`` or
    ``group/metric`` for a value under ``groups``; ``rate`` says the figure is already a hallucination rate
    in percent (else it is an accuracy in percent, and 100 - it is the share of wrong answers). A run whose
    metrics.json lacks the figure (a part not run) adds nothing to the profile.
    """

    kind: str  # one of PROFILE_KINDS
    form: str  # one of PROFILE_FORMS
    metric: str
    rate: bool = True

    def __post_init__(self) -> None:
        if self.kind not in PROFILE_KINDS or self.form not in PROFILE_FORMS:
            where = f"profile figure {self.metric!r}"
            raise ValueError(f"{where}: kind {self.kind!r} or form {self.form!r} unknown")


class BenchmarkInterface(ABC):
    """One benchmark's data, scoring and metrics."""

    name: ClassVar[str]
    #: The benchmark as its paper names it, in messages ("the POPE benchmark"); the registry name if empty.
    title: ClassVar[str] = ""
    #: Every option the benchmark takes (``--bench-opt``, Python keyword arguments), declared once: parsing,
    #: the unknown-option error, ``halluscope list``, ``--bench-opt`` help and doc tables are made from it.
    options: ClassVar[tuple[BenchmarkOption, ...]] = ()
    #: Which of its figures measure which kind of hallucination, in which form of question (the leaderboard's
    #: hallucination profile); empty for a benchmark that measures none of object / attribute / relation.
    profile: ClassVar[tuple[ProfileFigure, ...]] = ()
    #: The table its users read first (:class:`HeadlineView`); None: the declared metrics in their order.
    headline_view: ClassVar[HeadlineView | None] = None
    #: The extractor and judge used when the user names none (None where the benchmark needs none).
    default_extractor: ClassVar[str | None] = None
    default_judge: ClassVar[str | None] = None
    #: Which judges fill this benchmark's judge slot (``judges.judge_registry``): "claims" (claim vs scene
    #: graph, ``judges.JUDGES``), "entailment" (statement vs statement, ``judges.ENTAILMENT_JUDGES``),
    #: "answers" (a whole answer vs its reference, ``judges.ANSWER_JUDGES``) or "visual-entailment" (a
    #: statement vs the image, ``judges.VISUAL_ENTAILMENT_JUDGES``).
    judge_kind: ClassVar[str] = "claims"
    #: What a run that asks a model does with selected samples whose image is missing: "refuse" to start,
    #: or "fail" them and go on (the ``missing_images`` benchmark option; see benchmarks/images.py).
    missing_images: str = "refuse"

    def uses_stage(self, stage: str, samples: Sequence[Sample] | None = None) -> bool:
        """Whether scoring ``samples`` (the run's selection; every sample when None) calls the ``"extractor"``
        or the ``"judge"``.

        Options for a stage that is not used are refused: they would be recorded and change nothing.
        """
        return (self.default_extractor if stage == "extractor" else self.default_judge) is not None

    @abstractmethod
    def samples(self) -> Iterator[Sample]:
        """Every sample, in the benchmark's own order, with stable ids."""

    def every_sample(self) -> tuple[Sample, ...]:
        """Every sample, as :meth:`samples` gives them, walked once and kept.

        Why: a run reads the whole benchmark several times (the selection, the ids an answers file may name,
        the questions an importer compares), and building POPE's 8,910 samples takes a good part of a
        re-run's second. Samples are records of the benchmark's files and options, which do not change
        after it is made, so one walk serves them all. Callers must not change the samples.
        """
        kept: tuple[Sample, ...] | None = self.__dict__.get("_every_sample")
        if kept is None:
            kept = self.__dict__["_every_sample"] = tuple(self.samples())
        return kept

    def sample_ids(self) -> list[str]:
        """Every sample id, in order. Benchmarks whose samples cost more to build than their ids (HQH parses
        each image's regions) override it: a run needs every id (answers to samples past ``--limit`` are not
        unknown) but only the selected samples."""
        return [sample.id for sample in self.every_sample()]

    def _counted(self, samples: Sequence[Sample] | None) -> Sequence[Sample]:
        """What :meth:`spec` and :meth:`uses_stage` count over: the run's selection, else every sample."""
        return self.every_sample() if samples is None else samples

    def scene(self, sample: Sample) -> SceneGraph | None:
        """The scene graph of the sample's image, when the benchmark has one."""
        return None

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        """What identifies this benchmark's data in ``spec.json`` (paths, options), with what it counts over
        ``samples`` (the run's selection, e.g. images found; every sample when None). How the run chose its
        samples is added by the run (``runs.selection``), not here."""
        return {"benchmark": self.name}

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """Read a responses file for this benchmark's samples.

        halluscope's benchmarks inherit the reader of :class:`halluscope.benchmarks.Benchmark` (halluscope's
        own layouts, lmms-eval and VLMEvalKit outputs, and each benchmark's official layout); it lives there,
        not here, because reading those files is above the contract in the layering (docs/architecture.md).
        """
        raise NotImplementedError(
            f"{type(self).__name__} cannot read responses files: subclass halluscope.benchmarks.Benchmark, "
            "which reads halluscope's layouts and other tools' outputs, or override read_responses"
        )

    # -- hooks the importers call: they read other tools' files without knowing which benchmark they serve --

    def external_id(self, row: Mapping[str, Any]) -> str | None:
        """The sample id another tool's row names through this benchmark's own id fields, or None (then the
        importer tries the fields that may hold a sample id: ``id``, ``sample_id``, ``question_id``, ``index``)."""
        return None

    def external_rows(self, row: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The items one row of another tool's table stands for, as (label, fields), the label naming the item
        in messages ("" when the row is one item). A table that merges several items into one row is split
        here; a row that names none raises ``ValueError`` with the problem."""
        return [("", dict(row))]

    def items_from_rows(self, rows: Sequence[ExternalRow], kind: str) -> ResponsesFile | None:
        """Items made from the rows of a ``kind`` file none of whose rows names an item of the benchmark, with
        their answers, or None when the benchmark makes none (then the rows are problems, as usual). For a
        tool whose copy of the data keeps the labels but loses the ids that tie a row to an item."""
        return None

    def external_questions(self) -> Path | None:
        """The question file another tool numbered its questions by, when the run names one: LLaVA's
        ``question_id`` counts the lines of its own question file, not the benchmark's items."""
        return None

    def task_orders(self, file_name: str) -> list[TaskOrder]:
        """The candidate orders of the documents of the harness task that wrote ``file_name``, for lines that
        keep only a document's position; the importer uses the one under which the lines' questions agree
        with the items'. Empty when the benchmark knows no such order."""
        return []

    @abstractmethod
    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        """Score each (sample, response) pair; a missing response gives a record with a ``failure``."""

    @abstractmethod
    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        """Pure function of the scored records: never calls a model."""

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        """The headline metrics of this run (they may depend on its mode), each computable from
        :meth:`metric_tables`; intervals, paired tests and detectable differences are made from them."""
        return ()

    def answer_reader(self) -> str | None:
        """The rule that reads the model's yes/no answers in this run (``robust``, or a paper's own rule by
        name), so that the run can state how well that rule was measured to read real answers; None where the
        benchmark reads no yes/no answer or a judge in the slot does the reading."""
        return None

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        """The tables of per-item components that :meth:`metric_declarations` name, from the scored records
        (the same records :meth:`metrics` counts, so the figures agree)."""
        return {}
