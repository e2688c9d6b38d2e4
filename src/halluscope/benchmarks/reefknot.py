"""Reefknot: relation hallucination in yes/no, multiple-choice and VQA form.

Zheng et al., "Reefknot: A Comprehensive Benchmark for Relation Hallucination Evaluation, Analysis and
Mitigation in Multimodal Large Language Models" (2024). Official data and code:
https://github.com/JackChen-seu/Reefknot (``Dataset/YESNO.jsonl``, ``Multichoice.jsonl``, ``VQA.jsonl``;
Visual Genome images, not shipped).

Sample ids are ``yesno-<line>``, ``mcq-<line>`` and ``vqa-<line>``, the 0-based line of the official file.
In ``YESNO.jsonl`` consecutive lines are twins — a question built from a real triplet (label "yes") and the
same question with the relation swapped (label "no"); ``Sample.metadata["pair"]`` is their shared index.

Scoring has two modes, and every record carries both verdicts (``paper_correct``, ``robust_correct``);
``correct`` follows the chosen ``mode``:

- ``paper``: the official rules exactly (see :mod:`halluscope.judges.answers`), VQA by bidirectional
  entailment with MNLI class index 2;
- ``robust`` (default): answers read the way a person would; refusals are unanswered (counted, not rated);
  VQA by bidirectional entailment with the NLI model's own "entailment" label, or with an LLM.

The VQA entailment judge fills the run's judge slot like every other benchmark's judge
(``--judge nli|llm --judge-model NAME``, default ``nli``; ``judge_kind = "entailment"``), so ``spec.json``
names the judge that ran. Yes/no and multiple choice use no judge and no extractor: with no VQA sample
selected, ``--judge`` is an error.

Benchmark options (``--bench-opt key=value``) are declared once, in :attr:`Reefknot.options` (``halluscope
list``, docs/reefknot.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    ImageLookup,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.benchmarks.reefknot_answers import (
    REEFKNOT_FILES,
    REEFKNOT_TYPES,
    is_reefknot_jsonl,
    load_reefknot_responses,
)
from halluscope.download import ByHand, DataSet, github_files
from halluscope.gcpause import gc_paused
from halluscope.jsonio import iter_jsonl_values
from halluscope.judges.answers import (
    ParsedAnswer,
    normalise_vqa_answer,
    parse_choice,
    parse_choice_paper,
    parse_mcq_options,
    parse_yes_no,
    parse_yes_no_paper,
)
from halluscope.judges.entailment import Entailment, EntailmentModelError
from halluscope.metrics.confidence import PAPER_ENTROPY_THRESHOLD, answer_probabilities, entropy_bits
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesFile, load_responses
from halluscope.stages import Failure, MetricDeclaration, MetricTable, ProfileFigure
from halluscope.types import Response, Sample, SampleRecord

__all__ = [
    "OFFICIAL_FILES",
    "OFFICIAL_TYPES",
    "TASKS",
    "VG_PLACES",
    "Reefknot",
    "ReefknotDataError",
    "download_reefknot",
    "is_reefknot_jsonl",
    "load_reefknot_responses",
    "parse_prompt",
    "read_reefknot_file",
    "resolve_data_dir",
]

TASKS = ("yesno", "mcq", "vqa")
#: File of each task in the official release (and in what ``halluscope build reefknot`` writes).
OFFICIAL_FILES = REEFKNOT_FILES
#: The ``type`` field of each task's lines.
OFFICIAL_TYPES = REEFKNOT_TYPES
_RELATION_TYPES = {
    "perception": "perception",
    "perceptive": "perception",
    "cognitive": "cognitive",
    "cognition": "cognitive",
}
_REQUIRED = ("image_id", "query_prompt", "label")
#: The three task files from the repository's default branch (main, else master; no commit is recorded),
#: with the sizes and sha256 of the shared copies.
REEFKNOT_DATA = DataSet(
    name="reefknot",
    title="Reefknot",
    files=github_files(
        "JackChen-seu/Reefknot",
        ("main", "master"),
        "Dataset/",
        {
            "YESNO.jsonl": (2032423, "d0cc32f76763dcc4dd9c02d0d6c69cec8671d1ed834a8e77e1aa86dfad364247"),
            "Multichoice.jsonl": (1813915, "537bc558e9a207f354f53c56ec02dcd7f3e01347699abf47f104fc291786ef6b"),
            "VQA.jsonl": (1376012, "6ce3866908636d23897f078bf9c8105a205eeec3c8a03b27e026d8ae8f3cf300"),
        },
    ),
    by_hand=(
        ByHand(
            "the Visual Genome photos (VG_100K, VG_100K_2)",
            "https://homes.cs.washington.edu/~ranjay/visualgenome/api.html", "images", "--bench-opt images=FOLDER",
        ),
    ),
)  # fmt: skip
MODES = ("robust", "paper")
#: Options that chose the VQA judge before it came through the judge slot: refused with the new spelling.
_MOVED_TO_JUDGE = {
    "vqa_judge": "--judge nli|llm",
    "nli_model": "--judge nli --judge-model NAME",
    "nli_device": "--judge-opt device=DEVICE",
    "nli_batch_size": "--judge-opt batch_size=N",
    "llm_model": "--judge llm --judge-model NAME",
    "llm_base_url": "--base-url URL",
    "llm_api_key": "--judge-opt api_key_env=VARIABLE",
}


class ReefknotDataError(ValueError):
    """The Reefknot data is missing or a line is malformed; the message names the file and line."""


# -- data files ----------------------------------------------------------------------------------------------


def download_reefknot() -> Path:
    """The three official files in the user cache, fetched first if missing (machines with internet only)."""
    hint = "pass --data with a folder holding YESNO.jsonl, Multichoice.jsonl and VQA.jsonl"
    return ensure_data(REEFKNOT_DATA, error=ReefknotDataError, hint=hint)


def resolve_data_dir(data: Path | None) -> tuple[Path, dict[str, Path]]:
    """The data folder and the file of each task found there (a single task file may be given too)."""
    if data is None:
        env = os.environ.get("HALLUSCOPE_REEFKNOT")
        data = Path(env) if env else download_reefknot()
    path = Path(data)
    if path.is_file():
        for task, name in OFFICIAL_FILES.items():
            if path.name == name:
                return path.parent, {task: path}
        raise ReefknotDataError(
            f"{path}: not a Reefknot file; expected a folder with {', '.join(OFFICIAL_FILES.values())} "
            "or one of these files"
        )
    if not path.is_dir():
        raise ReefknotDataError(f"Reefknot data not found at {path}")
    files = {task: path / name for task, name in OFFICIAL_FILES.items() if (path / name).exists()}
    if not files:
        raise ReefknotDataError(f"{path} holds none of {', '.join(OFFICIAL_FILES.values())}")
    return path, files


def read_reefknot_file(path: Path) -> list[dict[str, Any]]:
    """Every line of one official file, checked; errors name the file and the 1-based line number."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    for number, row, _torn, bad in iter_jsonl_values(path):
        if number != len(rows) + 1:
            raise ReefknotDataError(
                f"{path.name} line {len(rows) + 1}: empty line (line numbers are sample ids)"
            )
        if bad is not None:
            raise ReefknotDataError(f"{path.name} line {number}: {bad.error}")
        if not isinstance(row, dict):
            raise ReefknotDataError(f"{path.name} line {number}: expected a JSON object")
        for key in _REQUIRED:
            if not isinstance(row.get(key), str | int) or isinstance(row.get(key), bool):
                raise ReefknotDataError(f"{path.name} line {number}: missing or invalid field {key!r}")
        rows.append(row)
    return rows


def normalise_relation_type(value: Any) -> str:
    """``perception`` | ``cognitive`` (also read: "perceptive", "cognition"); others kept lower-cased."""
    text = str(value or "unknown").strip().lower()
    return _RELATION_TYPES.get(text, text)


_VQA_FORMAT = re.compile(r"\b(?:format|form)\s*:\s*(?P<format>.+?)\s*$", re.DOTALL)
_TEMPLATE = re.compile(r"^(?P<s>.+?)\s+(?:(?P<copula>is|are)\s+)?<relation>\s+(?P<o>.+?)\.?$", re.IGNORECASE)
_PAIR = re.compile(
    r"relation\s+(?:\w+\s+)?(?:with|between)\s+(?:the\s+)?(?P<s>.+?)\s+and\s+(?:the\s+)?(?P<o>.+?)\s+"
    r"in (?:this|the) (?:photo|image|picture)",
    re.IGNORECASE,
)
_YES_NO = re.compile(
    r"^(?:is|are|does|do)\s+(?:the\s+)?(?P<statement>.+?)\s+in (?:this|the) (?:photo|image|picture)",
    re.IGNORECASE,
)


def parse_prompt(task: str, prompt: str) -> dict[str, Any]:
    """What a question names: the subject and object, the options (MCQ) and the answer template (VQA)."""
    info: dict[str, Any] = {}
    text = prompt.strip()
    if task == "yesno":
        match = _YES_NO.search(text)
        if match:
            info["statement"] = match.group("statement")
        return info
    pair = _PAIR.search(text)
    if pair:
        info["subject"], info["object"] = pair.group("s").strip(), pair.group("o").strip()
    if task == "mcq":
        info["options"] = parse_mcq_options(text)
    elif task == "vqa":
        fmt = _VQA_FORMAT.search(text)
        if fmt:
            info["answer_format"] = fmt.group("format")
            template = _TEMPLATE.match(fmt.group("format"))
            if template:
                info["subject"], info["object"] = template.group("s").strip(), template.group("o").strip()
                info["copula"] = (template.group("copula") or "").lower()
    return info


#: Where a Visual Genome image ``<id>.jpg`` is looked for under the images folder (the release's two parts).
VG_PLACES = ("VG_100K", "VG_100K_2", "")


# -- the benchmark -------------------------------------------------------------------------------------------


def _split_csv(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value]


@dataclass
class _ScoreState:
    """What one record collects while being scored (both modes)."""

    sample: Sample
    response: Response | None
    extras: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    #: "judge" when the entailment judge failed (retried on resume, counted against the run).
    failed_stage: str | None = None


class Reefknot(Benchmark):
    """The Reefknot benchmark (official data or a folder written by ``halluscope build reefknot``)."""

    name: ClassVar[str] = "reefknot"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("relation", "discriminative", "halr_yesno"),
        ProfileFigure("relation", "discriminative", "halr_mcq"),
        ProfileFigure("relation", "generative", "halr_vqa"),
    )
    title: ClassVar[str] = "Reefknot"
    data_sets: ClassVar[tuple[DataSet, ...]] = (REEFKNOT_DATA,)
    #: A judge object given to the constructor (``entailment=``) is the Python API's alone: it is no option,
    #: since spec.json could not record it.
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        BenchmarkOption(
            "mode", "choice", "which rule set gives correct (both are always computed)", default="robust",
            choices=MODES,
        ),
        BenchmarkOption("tasks", "csv", "which tasks", choices=TASKS, default_text="all"),
        BenchmarkOption(
            "relation_types", "csv", "which relation types (perceptive and cognition are read too)",
            choices=("perception", "cognitive"), default_text="all",
        ),
        replace(IMAGES_OPTION, help="a Visual Genome folder: <image_id>.jpg is looked up in VG_100K/, VG_100K_2/ "
                "and the folder itself; shown to the model in --model runs"),
        MISSING_IMAGES_OPTION,
        BenchmarkOption(
            "entropy_threshold", "float", "the confidence detector's threshold for yes/no (bits; scaled x2 for 4 "
            "options)", default=PAPER_ENTROPY_THRESHOLD,
        ),
    )
    default_judge: ClassVar[str | None] = "nli"
    judge_kind: ClassVar[str] = "entailment"

    def __init__(
        self,
        data: Path | None = None,
        *,
        images: Path | None = None,
        tasks: Iterable[str] | None = None,
        relation_types: Iterable[str] | None = None,
        mode: str = "robust",
        entailment: Entailment | None = None,
        entropy_threshold: float = PAPER_ENTROPY_THRESHOLD,
        missing_images: str = "refuse",
    ) -> None:
        self.data_dir, all_files = resolve_data_dir(data)
        # A plain string is a comma list ("mcq", "yesno,mcq"), never a sequence of letters.
        chosen = (_split_csv(tasks) or []) if tasks is not None else list(TASKS)
        unknown = [t for t in chosen if t not in TASKS]
        if unknown:
            raise ValueError(f"unknown Reefknot task(s) {unknown}; choose from {', '.join(TASKS)}")
        self.files = {t: p for t, p in all_files.items() if t in chosen}
        if not self.files:
            raise ReefknotDataError(
                f"{self.data_dir} has no file for the selected task(s) {', '.join(chosen)}"
            )
        self.relation_types = (
            sorted({normalise_relation_type(r) for r in _split_csv(relation_types) or []})
            if relation_types is not None
            else None
        )
        if mode not in MODES:
            raise ValueError(f"unknown scoring mode {mode!r}; choose robust or paper")
        self.mode = mode
        self.images = Path(images) if images else None
        self.missing_images = check_missing_policy(missing_images)
        #: A judge given here (Python API, tests) is used when the run's judge slot is empty.
        self._entailment = entailment
        self._entailment_error: str | None = None
        self.entropy_threshold = float(entropy_threshold)
        self._flattened: tuple[Sequence[SampleRecord], int, list[dict[str, Any]]] | None = None

    @classmethod
    def given_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """The options that chose the VQA judge before it came through the judge slot are refused, each with its
        new spelling, rather than called unknown."""
        moved = sorted(set(options) & set(_MOVED_TO_JUDGE))
        if moved:
            raise ValueError(
                "the Reefknot VQA judge is chosen through the judge slot now: "
                + "; ".join(f"instead of --bench-opt {k}, use {_MOVED_TO_JUDGE[k]}" for k in moved)
            )
        return options

    # -- data ---------------------------------------------------------------------------------------

    @cached_property
    def official_rows(self) -> dict[str, list[dict[str, Any]]]:
        """Every line of each selected task's file, unfiltered (line number = sample id)."""
        return {task: read_reefknot_file(path) for task, path in self.files.items()}

    def _sample(
        self, task: str, line: int, row: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
    ) -> Sample:
        image_id = str(row["image_id"]).strip()
        prompt = str(row["query_prompt"]).strip()
        label = str(row["label"]).strip()
        info = parse_prompt(task, prompt)
        if task == "mcq" and isinstance(row.get("options"), Mapping):
            info["options"] = {str(k): str(v) for k, v in row["options"].items()}
        triplet = row.get("triplet")
        if isinstance(triplet, list) and len(triplet) == 3:
            # Written by halluscope's builder: more reliable than splitting the question on " and ".
            info["subject"], info["object"] = str(triplet[0]), str(triplet[2])
            info["triplet"] = [str(p) for p in triplet]
        metadata: dict[str, Any] = {
            "task": task,
            "line": line,
            "relation_type": normalise_relation_type(row.get("relation_type")),
            "label": label,
            **info,
        }
        if task == "yesno":
            twin = line + 1 if label.lower() == "yes" else line - 1
            if 0 <= twin < len(rows):
                other = rows[twin]
                twin_label = str(other.get("label", "")).strip().lower()
                first = min(line, twin)
                same_image = str(other.get("image_id")).strip() == image_id
                if same_image and first % 2 == 0 and {label.lower(), twin_label} == {"yes", "no"}:
                    metadata["pair"] = first // 2
                    metadata["twin"] = f"yesno-{twin}"
            metadata["role"] = "positive" if label.lower() == "yes" else "negative"
        elif task == "mcq":
            metadata["answer_text"] = info.get("options", {}).get(label)
        # Where it was looked for when it is not there: a run asking a model names the missing files.
        photo = locate_image(self.images, [f"{image_id}.jpg"], VG_PLACES) if image_id else ImageLookup(None)
        metadata.update(photo.metadata)
        return Sample(
            id=f"{task}-{line}",
            benchmark=self.name,
            prompt=prompt,
            image_id=image_id,
            image_path=photo.path,
            reference=label,
            metadata=metadata,
        )

    def samples(self) -> Iterator[Sample]:
        # Built once per benchmark object: `halluscope run` asks for the samples several times (every id,
        # the --limit selection, the runner), and building 21,560 of them is most of the loading.
        yield from self._samples

    @cached_property
    def _samples(self) -> list[Sample]:
        with gc_paused():
            return list(self._build_samples())

    def _build_samples(self) -> Iterator[Sample]:
        for task in TASKS:
            if task not in self.files:
                continue
            rows = self.official_rows[task]
            for line, row in enumerate(rows):
                if (
                    self.relation_types
                    and normalise_relation_type(row.get("relation_type")) not in self.relation_types
                ):
                    continue
                yield self._sample(task, line, row, rows)

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "data": str(self.data_dir),
            "tasks": sorted(self.files),
            "relation_types": self.relation_types,
            "mode": self.mode,
            "entropy_threshold": self.entropy_threshold,
            **image_spec(self.images, self._counted(samples), self.missing_images),
            # The run's judge goes to spec.json's "judge"; only a judge handed to the benchmark itself is here.
            **({"vqa_judge": self._entailment.identity()} if self._entailment is not None else {}),
        }

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, or Reefknot's layout (told apart by content; see load_reefknot_responses)."""
        if is_reefknot_jsonl(Path(path)):
            return load_reefknot_responses(
                Path(path), official=self.official_rows, benchmark_ids=benchmark_ids, key=key
            )
        return load_responses(Path(path), benchmark_ids=benchmark_ids)

    # -- scoring ------------------------------------------------------------------------------------

    def uses_stage(self, stage: str, samples: Sequence[Sample] | None = None) -> bool:
        """Only the VQA task uses a judge (bidirectional entailment); no task uses an extractor."""
        return stage == "judge" and any(s.metadata.get("task") == "vqa" for s in self._counted(samples))

    def entailment(self, ctx: ScoringContext) -> Entailment:
        """The VQA entailment judge: the run's judge slot, else one given to the constructor."""
        if ctx.judge is not None:
            if not isinstance(ctx.judge, Entailment):
                raise ValueError(
                    f"judge {ctx.judge.name!r} judges claims against a scene graph; Reefknot's VQA answers "
                    "need an entailment judge (nli or llm)"
                )
            return ctx.judge
        if self._entailment is not None:
            return self._entailment
        raise ValueError("no VQA entailment judge was chosen (--judge nli|llm, or ScoringContext(judge=...))")

    @staticmethod
    def _set_mode_result(state: _ScoreState, mode: str, parsed: ParsedAnswer, correct: bool | None) -> None:
        state.extras[f"{mode}_prediction"] = parsed.value
        state.extras[f"{mode}_correct"] = correct
        state.extras[f"{mode}_parse"] = parsed.how

    def _score_closed(self, state: _ScoreState) -> None:
        sample, text = state.sample, state.response.response if state.response else ""
        meta, label = sample.metadata, str(sample.metadata["label"])
        if meta["task"] == "yesno":
            paper = parse_yes_no_paper(text)
            robust = parse_yes_no(text, question=sample.prompt)
            gold = label.lower()
            self._set_mode_result(state, "paper", paper, paper.value == gold)
            self._set_mode_result(
                state, "robust", robust, None if robust.value is None else robust.value == gold
            )
        else:
            paper = parse_choice_paper(text)
            robust = parse_choice(
                text,
                meta.get("options") or {},
                mask=[m for m in (meta.get("subject"), meta.get("object")) if m],
            )
            gold = label.upper()
            self._set_mode_result(state, "paper", paper, paper.value == gold)
            self._set_mode_result(
                state, "robust", robust, None if robust.value is None else robust.value == gold
            )

    async def _score_vqa(self, states: list[_ScoreState], ctx: ScoringContext) -> None:
        if not states:
            return
        robust_texts: list[ParsedAnswer] = []
        for state in states:
            meta = state.sample.metadata
            robust_texts.append(
                normalise_vqa_answer(
                    state.response.response if state.response else "",
                    meta.get("subject"),
                    meta.get("object"),
                    meta.get("copula", "is"),
                )
            )
        paper_pairs = [
            (str(s.sample.metadata["label"]), s.response.response if s.response else "") for s in states
        ]
        robust_pairs = [
            (str(s.sample.metadata["label"]), p.value)
            for s, p in zip(states, robust_texts, strict=True)
            if p.value is not None
        ]
        paper_verdicts: list[bool | Failure]
        robust_verdicts: list[bool | Failure]
        if self._entailment_error is not None:
            paper_verdicts = [Failure(self._entailment_error)] * len(paper_pairs)
            robust_verdicts = [Failure(self._entailment_error)] * len(robust_pairs)
        else:
            try:
                judge = self.entailment(ctx)
                paper_verdicts = await judge.bidirectional_many(paper_pairs, paper=True)
                robust_verdicts = await judge.bidirectional_many(robust_pairs, paper=False)
            except (EntailmentModelError, ValueError) as error:
                # A judge that cannot start fails every VQA item (recorded and redone on the next run),
                # not the whole run: yes/no and multiple-choice results still stand.
                self._entailment_error = f"VQA entailment judge unavailable: {error}"
                paper_verdicts = [Failure(self._entailment_error)] * len(paper_pairs)
                robust_verdicts = [Failure(self._entailment_error)] * len(robust_pairs)
        robust_iter = iter(robust_verdicts)
        for state, paper_verdict, parsed in zip(states, paper_verdicts, robust_texts, strict=True):
            paper_answer = ParsedAnswer(state.response.response if state.response else "", "paper")
            paper_ok = None if isinstance(paper_verdict, Failure) else paper_verdict
            self._set_mode_result(state, "paper", paper_answer, paper_ok)
            if isinstance(paper_verdict, Failure):
                state.extras["paper_failure"] = paper_verdict.reason
            if parsed.value is None:
                self._set_mode_result(state, "robust", parsed, None)
                continue
            verdict = next(robust_iter)
            self._set_mode_result(state, "robust", parsed, None if isinstance(verdict, Failure) else verdict)
            if isinstance(verdict, Failure):
                state.extras["robust_failure"] = verdict.reason
        for state in states:
            reason = state.extras.get(f"{self.mode}_failure")
            if reason:
                state.failure = str(reason)
                state.failed_stage = "judge"

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        # The synchronous steps build many small acyclic objects: the collector is paused there (see
        # halluscope.gcpause), never across the VQA judge's await, where other work may run.
        with gc_paused():
            states, vqa = self._score_closed_items(pairs)
        await self._score_vqa(vqa, ctx)
        with gc_paused():
            return self._records(states)

    def _score_closed_items(
        self, pairs: Sequence[tuple[Sample, Response | None]]
    ) -> tuple[list[_ScoreState], list[_ScoreState]]:
        """Every pair's state; yes/no and MCQ scored now, VQA states returned for the entailment judge."""
        states = [_ScoreState(sample, response) for sample, response in pairs]
        vqa: list[_ScoreState] = []
        for state in states:
            meta = state.sample.metadata
            state.extras.update(
                {
                    "task": meta.get("task"),
                    "relation_type": meta.get("relation_type"),
                    "label": meta.get("label"),
                    "mode": self.mode,
                }
            )
            if meta.get("pair") is not None:
                state.extras["pair"] = meta["pair"]
            if state.response is None:
                state.failure = "no response for this sample"
                for mode in MODES:
                    state.extras[f"{mode}_correct"] = None
                continue
            if meta.get("task") == "vqa":
                vqa.append(state)
            else:
                self._score_closed(state)
                probs = answer_probabilities(state.response.metadata, str(meta.get("task")))
                if probs:
                    state.extras["answer_probs"] = probs
                    state.extras["entropy"] = entropy_bits(list(probs.values()))
        return states, vqa

    def _records(self, states: list[_ScoreState]) -> list[SampleRecord]:
        records = []
        for state in states:
            extras = state.extras
            extras["prediction"] = extras.get(f"{self.mode}_prediction")
            extras["correct"] = extras.get(f"{self.mode}_correct")
            extras["parse"] = extras.get(f"{self.mode}_parse")
            records.append(
                SampleRecord(
                    id=state.sample.id,
                    prompt=state.sample.prompt,
                    response=state.response.response if state.response else None,
                    failure=state.failure,
                    failed_stage=state.failed_stage,
                    image_id=state.sample.image_id,
                    model=state.response.model if state.response else None,
                    metadata={
                        k: v
                        for k, v in state.sample.metadata.items()
                        if k in ("line", "options", "subject", "object", "twin", "role", "answer_text")
                    },
                    **extras,
                )
            )
        return records

    def answer_reader(self) -> str:
        return "robust" if self.mode == "robust" else "substring-yes"

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        """Each selected task's Halr, yes/no's rates and pair accuracy, and the entropy detector's precision and
        recall, over images; both modes alike (``correct`` follows the mode). The R score, a mean of per-task
        rates, is not declared: see :mod:`halluscope.metrics.reefknot`."""
        from halluscope.metrics.reefknot import reefknot_declarations

        return reefknot_declarations(self.files)

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        from halluscope.metrics.reefknot import reefknot_tables

        with gc_paused():
            rows = self._rows(records)
            return reefknot_tables(records, entropy_threshold=self.entropy_threshold, rows=rows)

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        from halluscope.metrics.reefknot import reefknot_metrics

        with gc_paused():
            rows = self._rows(records)
            return reefknot_metrics(
                records, benchmark=self.name, entropy_threshold=self.entropy_threshold, rows=rows
            )

    def _rows(self, records: Sequence[SampleRecord]) -> list[dict[str, Any]]:
        """The records flattened for the metrics and the tables, once: a run measures the same list of records
        twice in a row (its metrics, then the tables of its intervals). Kept for that very list object, and
        for one more use only, so a caller that changes its records and measures again gets new rows."""
        from halluscope.metrics.reefknot import reefknot_rows

        held, self._flattened = self._flattened, None
        if held is not None and held[0] is records and held[1] == len(records):
            return held[2]
        rows = reefknot_rows(records)
        self._flattened = (records, len(records), rows)
        return rows
