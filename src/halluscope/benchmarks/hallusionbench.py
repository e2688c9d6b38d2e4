"""HallusionBench: yes/no questions about figures, charts and photos, original and edited.

Guan et al., "HallusionBench: An Advanced Diagnostic Suite for Entangled Language Hallucination and Visual
Illusion in Large Vision-Language Models" (CVPR 2024). Official data and code:
https://github.com/tianyi-lab/HallusionBench (``HallusionBench.json``; figures in a separate archive, not
needed for scoring, only to ask a model: ``images=DIR`` finds each question's ``filename``, e.g.
``./VD/illusion/0_0.png``, under DIR or ``DIR/hallusion_bench`` — the folder the official archive unpacks to).
Questions with ``visual_input`` 0 are asked without a figure by design: they carry no image and
``metadata["text_only"]``, and never need one.

Sample ids are ``<category>-<subcategory>-<set_id>-<figure_id>-<question_id>`` (the key the official code
asserts unique), e.g. ``VD-illusion-0-0-0``.

Correctness of each answer, coded as the official code codes it (1 correct, 0 incorrect, 2 unclear), comes
from the grader in the run's judge slot (``judge_kind`` "answers"; :mod:`halluscope.judges.hallusionbench`):

- ``--judge parser`` (default, offline): the shared yes/no parser reads the prediction; agreeing with
  ``gt_answer`` is 1, disagreeing 0, no readable yes/no (refusal, hedge) 2;
- ``--judge vlmevalkit``: VLMEvalKit's exact-matching reading and its rating (fAcc over every figure group,
  no "unclear" codes), to reproduce a VLMEvalKit ``HallusionBench_score.csv``
  (:mod:`halluscope.metrics.vlmevalkit`);
- ``--judge llm --judge-model M``: an LLM grader on any OpenAI-compatible endpoint (the paper's way),
  bounded retries, unjudged (redone next run) when it fails.

The old spelling, ``--bench-opt judge=llm`` with ``llm_model``, ``llm_base_url``, ``llm_api_key_env``, still
works: the orchestrator moves it into the judge slot with a note (:mod:`halluscope.benchmarks.judge_aliases`).
Built directly in Python (``HallusionBench(judge="llm", llm_model=...)``), the benchmark keeps such a grader
for runs whose context has no judge, with a ``FutureWarning``.

Metrics (:mod:`halluscope.metrics.hallusionbench`): aAcc, qAcc, fAcc, easy and hard, VD / VS, and the
language-hallucination / visual-illusion analysis. The official result layout (``HallusionBench.json``
rows with ``model_prediction``, e.g. ``HallusionBench_result_sample.json``) is accepted as responses.

Benchmark options (``--bench-opt``) are declared once, in :attr:`HallusionBench.options` (``halluscope
list``, docs/hallusionbench.md).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.closed import ClosedDataError, check_prompt
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    TEXT_ONLY,
    ImageLookup,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.benchmarks.pope import PROMPTS
from halluscope.download import ByHand, DataSet, github_files
from halluscope.jsonio import loads_json
from halluscope.judges.answers import parse_yes_no
from halluscope.judges.hallusionbench import HallusionGrade, HallusionGrader, HallusionItem
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesFile
from halluscope.stages import Failure, HeadlineView, MetricDeclaration, MetricTable, TaskOrder
from halluscope.types import Response, Sample, SampleRecord

__all__ = ["HallusionBench", "hallusion_fields_from_index", "hallusion_id"]

#: The question file, at the commit the shared copy comes from; the figures are an archive fetched by hand.
HALLUSIONBENCH_DATA = DataSet(
    name="hallusionbench",
    title="HallusionBench",
    files=github_files(
        "tianyi-lab/HallusionBench",
        ("744007c",),
        "",
        {"HallusionBench.json": (431987, "ca6e0fb677dd56e5fb0e2700d06c58d01f8a6ae66e0f1773b2ac48c0a095d051")},
    ),
    by_hand=(
        ByHand(
            "the figures (hallusion_bench.zip, linked from its README)", "https://github.com/tianyi-lab/HallusionBench",
            "images", "--bench-opt images=FOLDER",
        ),
    ),
)  # fmt: skip
_ID_FIELDS = ("category", "subcategory", "set_id", "figure_id", "question_id")
_REQUIRED = (*_ID_FIELDS, "question", "gt_answer")


def hallusion_id(row: Mapping[str, Any]) -> str:
    return "-".join(str(row[k]) for k in _ID_FIELDS)


#: VLMEvalKit's ``index`` of a HallusionBench row: the official ids packed as
#: ``<category>_<subcategory>_<visual_input>_<set_id>_<figure_id>_<question_id>``.
_VLMEVALKIT_INDEX = re.compile(r"^(VD|VS)_([A-Za-z]+)_(\d+)_(\d+)_(\d+)_(\d+)$")


def hallusion_fields_from_index(index: object) -> dict[str, str] | None:
    """HallusionBench's official id fields from VLMEvalKit's ``index`` (``VD_illusion_1_0_0_0``), or None."""
    match = _VLMEVALKIT_INDEX.match(str(index).strip())
    if not match:
        return None
    category, subcategory, visual_input, set_id, figure_id, question_id = match.groups()
    return {
        "category": category,
        "subcategory": subcategory,
        "visual_input": visual_input,
        "set_id": set_id,
        "figure_id": figure_id,
        "question_id": question_id,
    }


#: What one resampling unit of every HallusionBench interval is: a set (category, subcategory, set id) — a
#: figure and its edited versions, asked the same questions. Figures of a set share questions (qAcc pairs
#: them across versions) and questions of a set share figures (fAcc groups them), so neither the question,
#: the figure nor the pair is independent of its neighbours; the set is the smallest unit that is.
SET_UNIT = "figure set"


def _declare(name: str, table: str, components: tuple[str, str], description: str) -> MetricDeclaration:
    return MetricDeclaration(
        name=name, statistic="ratio", components=components, table=table, unit=SET_UNIT, description=description
    )


#: aAcc, fAcc, qAcc and easy / hard qAcc over the tables of
#: :func:`halluscope.metrics.hallusionbench.hallusion_tables`. The same five names in every mode: with
#: ``--judge vlmevalkit`` the tables follow VLMEvalKit's rating as the figures do. Not declared: the
#: ``official_*`` figures of a VLMEvalKit run (declarations cannot see the records, which alone tell a
#: resumed run's grader), and the LH / VI / mixed counts (counts of wrong pairs, no rate).
HALLUSION_DECLARATIONS = (
    _declare("aAcc", "questions", ("correct", "questions"), "questions answered right"),
    _declare("fAcc", "figures", ("all_correct", "groups"), "figures with every question right"),
    _declare("qAcc", "pairs", ("all_correct", "groups"), "questions right on every version of their figure"),
    _declare("easy_qAcc", "easy_pairs", ("all_correct", "groups"), "questions right on the original figure"),
    _declare("hard_qAcc", "hard_pairs", ("all_correct", "groups"), "questions right on every edited figure"),
)


def _resolve(data: Path | None) -> Path:
    if data is None:
        return ensure_data(HALLUSIONBENCH_DATA) / "HallusionBench.json"
    path = Path(data)
    if path.is_dir():
        path = path / "HallusionBench.json"
    if not path.exists():
        raise ClosedDataError(f"HallusionBench data not found at {path}")
    return path


class HallusionBench(Benchmark):
    name: ClassVar[str] = "hallusionbench"
    title: ClassVar[str] = "HallusionBench"
    data_sets: ClassVar[tuple[DataSet, ...]] = (HALLUSIONBENCH_DATA,)
    headline_view: ClassVar[HeadlineView | None] = HeadlineView(
        "HallusionBench by split (VD: visual dependent, VS: visual supplement), as its leaderboard reads",
        (("qAcc", "Question Pair Acc"), ("fAcc", "Figure Acc"), ("easy_qAcc", "Easy Question Acc"),
         ("hard_qAcc", "Hard Question Acc"), ("aAcc", "All Acc")),
        rows="groups",
    )  # fmt: skip
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        BenchmarkOption(
            "categories", "csv", "visual dependent and/or visual supplement questions",
            default=("VD", "VS"), choices=("VD", "VS"),
        ),
        BenchmarkOption("judge", "text", "the old spelling of --judge (moved into the judge slot with a note)"),
        BenchmarkOption("llm_model", "text", "the old spelling of --judge-model"),
        BenchmarkOption("llm_base_url", "text", "the old spelling of --judge-opt base_url"),
        BenchmarkOption("llm_api_key_env", "text", "the old spelling of --judge-opt api_key_env"),
        IMAGES_OPTION,
        MISSING_IMAGES_OPTION,
        BenchmarkOption(
            "prompt", "choice", "question: as the file gives it (the official code, lmms-eval); yesno: followed "
            "by \" Please answer yes or no.\"; short: followed by LLaVA's \"Answer the question using a single "
            "word or phrase.\"", default="question", choices=tuple(PROMPTS),
        ),
    )
    default_judge: ClassVar[str | None] = "parser"
    judge_kind: ClassVar[str] = "answers"

    def __init__(
        self,
        data: Path | None = None,
        *,
        categories: Sequence[str] = ("VD", "VS"),
        judge: str | None = None,
        llm_model: str | None = None,
        llm_base_url: str | None = None,
        llm_api_key_env: str | None = None,
        images: Path | None = None,
        prompt: str = "question",
        missing_images: str = "refuse",
    ) -> None:
        self.path = _resolve(data)
        self.images = Path(images) if images else None
        self.prompt = check_prompt(prompt, PROMPTS, "the HallusionBench benchmark")
        self.missing_images = check_missing_policy(missing_images)
        unknown = [c for c in categories if c not in ("VD", "VS")]
        if unknown:
            raise ValueError(f"unknown HallusionBench categories {unknown}; choose VD and/or VS")
        self.categories = tuple(categories)
        # The old spelling of the grader (a benchmark option): kept for contexts without a judge.
        legacy = {"model": llm_model, "base_url": llm_base_url, "api_key_env": llm_api_key_env}
        self.legacy_judge: tuple[str, dict[str, Any]] | None = None
        if judge is not None or any(v is not None for v in legacy.values()):
            from halluscope.judges import ANSWER_JUDGES

            name = judge or "parser"
            if name not in ANSWER_JUDGES.names():
                raise ValueError(
                    f"unknown HallusionBench judge {name!r}; choose one of: {', '.join(ANSWER_JUDGES.names())}"
                )
            self.legacy_judge = (name, {k: v for k, v in legacy.items() if v is not None})
            warnings.warn(
                f"HallusionBench(judge=..., llm_*=...) is the old spelling of the grader; give it in the judge "
                f"slot instead: --judge {name} (Python: judge={name!r}, judge_options={{'model': ...}})",
                FutureWarning,
                stacklevel=2,
            )
        self._legacy_grader: HallusionGrader | None = None
        #: The grader that scored in this process (its name decides the metrics' headline).
        self.grader_name: str | None = self.legacy_judge[0] if self.legacy_judge else None

    @cached_property
    def rows(self) -> list[dict[str, Any]]:
        try:
            raw = loads_json(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ClosedDataError(f"{self.path} is not valid JSON: {error}") from error
        if not isinstance(raw, list):
            raise ClosedDataError(f"{self.path}: expected a JSON list of questions")
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for index, row in enumerate(raw):
            missing = [f for f in _REQUIRED if not isinstance(row, dict) or f not in row]
            if missing:
                raise ClosedDataError(f"{self.path} item {index}: missing field(s) {', '.join(missing)}")
            if str(row["gt_answer"]) not in ("0", "1"):
                raise ClosedDataError(f"{self.path} item {index}: gt_answer must be '0' or '1'")
            key = hallusion_id(row)
            if key in seen:
                raise ClosedDataError(f"{self.path} item {index}: duplicate id {key}")
            seen.add(key)
            if row["category"] in self.categories:
                rows.append(row)
        return rows

    def samples(self) -> Iterator[Sample]:
        for row in self.rows:
            label = "yes" if str(row["gt_answer"]) == "1" else "no"
            filename = row.get("filename") or None
            text_only = str(row.get("visual_input", "")) == "0"
            question = str(row["question"])
            photo = ImageLookup(None) if text_only or not filename else self._image(str(filename))
            yield Sample(
                id=hallusion_id(row),
                benchmark=self.name,
                prompt=question if self.prompt == "question" else PROMPTS[self.prompt].format(question=question),
                image_id=filename,
                image_path=photo.path,
                reference=str(row.get("gt_answer_details") or label),
                metadata={
                    **{k: str(row[k]) for k in _ID_FIELDS},
                    "visual_input": str(row.get("visual_input", "")),
                    "label": label,
                    "gt_answer_details": row.get("gt_answer_details"),
                    **({TEXT_ONLY: True} if text_only else {}),
                    **photo.metadata,
                },
            )

    def _image(self, filename: str) -> ImageLookup:
        """The figure by the official layout: ``./VD/<subcategory>/<set>_<figure>.png`` under the folder."""
        relative = filename.removeprefix("./").lstrip("/")
        return locate_image(self.images, [relative], ("", "hallusion_bench"))

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        """The data and selection; the grader is the run's judge (``spec.json``'s ``judge``), except the one
        of the old spelling, given to the constructor, which is recorded here."""
        legacy: dict[str, Any] = {}
        if self.legacy_judge is not None:
            name, options = self.legacy_judge
            legacy = {"judge": {"judge": name, **{k: v for k, v in options.items() if k != "api_key_env"}}}
        return {
            "benchmark": self.name,
            "data": str(self.path),
            "categories": list(self.categories),
            **legacy,
            **({"prompt": self.prompt} if self.prompt != "question" else {}),
            **image_spec(self.images, self._counted(samples), self.missing_images),
        }

    def external_id(self, row: Mapping[str, Any]) -> str | None:
        """Rows of other harnesses carry the official id fields (spreadsheets may turn "3" into 3.0)."""
        if not all(k in row and row[k] is not None for k in _ID_FIELDS):
            return None
        parts = []
        for k in _ID_FIELDS:
            value = row[k]
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            parts.append(str(value))
        return "-".join(parts)

    def external_rows(self, row: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """VLMEvalKit's HallusionBench sheet has no id columns: the official ids are packed into ``index``
        (``VD_illusion_1_0_0_0``), read back here into the five official id fields."""
        fields = dict(row)
        if not all(k in row for k in ("set_id", "figure_id", "question_id")):
            parsed = hallusion_fields_from_index(row.get("index"))
            if parsed is not None:
                fields.update(parsed)
        return [("", fields)]

    def task_orders(self, file_name: str) -> list[TaskOrder]:
        """lmms-eval's ``hallusion_bench_image`` task (lmms-lab/HallusionBench, split ``image``) holds the
        official questions that come with a figure (``visual_input`` != 0), in file order."""
        raw = loads_json(Path(self.path).read_text(encoding="utf-8"))
        ids = [
            "-".join(str(r[k]) for k in _ID_FIELDS)
            for r in raw
            if isinstance(r, dict) and str(r.get("visual_input", "")) != "0" and all(k in r for k in _ID_FIELDS)
        ]
        name = "HallusionBench.json, questions with a figure (visual_input != 0), in file order"
        return [TaskOrder("hallusion_bench_image", name, ids)]

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, the official result layout (``model_prediction``), or lmms-eval / VLMEvalKit."""
        path = Path(path)
        if path.suffix == ".json" and path.read_text(encoding="utf-8").lstrip().startswith("["):
            return self._read_official(path, benchmark_ids, key or "model_prediction")
        return super().read_responses(path, benchmark_ids=benchmark_ids, key=key)

    def _read_official(self, path: Path, benchmark_ids: set[str] | None, key: str) -> ResponsesFile:
        result = ResponsesFile()
        try:
            raw = loads_json(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ClosedDataError(f"{path} is not valid JSON: {error}") from error
        for index, row in enumerate(raw):
            where = f"{path.name} item {index}"
            if not isinstance(row, dict) or any(k not in row for k in _ID_FIELDS):
                result.problems.append(f"{where}: missing one of the id fields {', '.join(_ID_FIELDS)}")
                continue
            sample_id = hallusion_id(row)
            if benchmark_ids is not None and sample_id not in benchmark_ids:
                result.problems.append(f"{where}: {sample_id} is not a question of the benchmark")
                continue
            answer = row.get(key)
            if not isinstance(answer, str):
                result.problems.append(f"{where} ({sample_id}): no answer under {key!r}")
                continue
            if sample_id in result.responses:
                result.problems.append(f"{where}: duplicate answer for {sample_id}")
                continue
            result.responses[sample_id] = Response(id=sample_id, response=answer)
        return result

    def grader(self, ctx: ScoringContext) -> HallusionGrader:
        """The run's judge slot; else the grader of the old spelling given to the constructor; else the
        offline parser. A judge of another kind in the slot is refused, naming the graders."""
        if ctx.judge is not None:
            if self.legacy_judge is not None:
                raise ValueError(
                    "the HallusionBench grader is given twice: to the benchmark (judge=, llm_*=, the old "
                    "spelling) and in the judge slot; give it in the judge slot only"
                )
            if not isinstance(ctx.judge, HallusionGrader):
                raise ValueError(
                    f"judge {ctx.judge.name!r} cannot grade HallusionBench answers; use --judge parser, "
                    "vlmevalkit or llm"
                )
            return ctx.judge
        if self._legacy_grader is None:
            from halluscope.judges import ANSWER_JUDGES

            name, options = self.legacy_judge or ("parser", {})
            grader = ANSWER_JUDGES.create(name, cache=ctx.cache, **options)
            assert isinstance(grader, HallusionGrader)
            self._legacy_grader = grader
        return self._legacy_grader

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        grader = self.grader(ctx)
        self.grader_name = grader.name
        answered = [(s, r) for s, r in pairs if r is not None]
        items = [
            HallusionItem(
                question=s.prompt,
                reference=str(s.metadata.get("gt_answer_details") or s.metadata["label"]),
                label=s.metadata["label"],
                prediction=r.response,
            )
            for s, r in answered
        ]
        graded: dict[str, HallusionGrade | Failure] = dict(
            zip((s.id for s, _ in answered), await grader.grade_many(items), strict=True)
        )
        records = []
        for sample, response in pairs:
            meta = sample.metadata
            extras: dict[str, Any] = {k: meta[k] for k in (*_ID_FIELDS, "visual_input", "label")}
            extras["type"] = meta["subcategory"]  # what ``halluscope quality``'s coverage table counts
            failure = None if response is not None else "no response for this sample"
            if response is not None:
                reading = parse_yes_no(response.response, question=sample.prompt)
                extras["prediction"] = reading.value
                extras["parse"] = reading.how
                grade = graded[sample.id]
                if isinstance(grade, Failure):
                    failure, extras["correctness"] = grade.reason, None
                    extras["failed_stage"] = "judge"
                else:
                    extras.update(grade.fields)
                    extras["correctness"] = grade.correctness
            records.append(
                SampleRecord(
                    id=sample.id,
                    prompt=sample.prompt,
                    response=response.response if response else None,
                    failure=failure,
                    image_id=sample.image_id,
                    reference=sample.reference,
                    **extras,
                )
            )
        return records

    def rated_by_vlmevalkit(self, records: Sequence[SampleRecord]) -> bool:
        """Whether the headline is VLMEvalKit's rating: the grader that scored in this process; after a
        resume that scored nothing, the records tell."""
        return self.grader_name == "vlmevalkit" or (
            self.grader_name is None and any("vlmevalkit_reading" in (r.model_extra or {}) for r in records)
        )

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        return HALLUSION_DECLARATIONS

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        from halluscope.metrics.hallusionbench import hallusion_tables

        return hallusion_tables(records, vlmevalkit=self.rated_by_vlmevalkit(records))

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        from halluscope.metrics.hallusionbench import hallusion_metrics

        report = hallusion_metrics(records, benchmark=self.name)
        if self.rated_by_vlmevalkit(records):
            from halluscope.metrics.vlmevalkit import hallusion_vlmevalkit_report

            report = hallusion_vlmevalkit_report(records, report)
        return report
