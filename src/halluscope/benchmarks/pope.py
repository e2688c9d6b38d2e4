"""POPE: polling-based object probing — "Is there a <object> in the image?" over three samplings.

Li et al., "Evaluating Object Hallucination in Large Vision-Language Models" (EMNLP 2023). Official data and
code: https://github.com/RUCAIBox/POPE (``output/{coco,aokvqa,gqa}/...``, MIT licence). Images are not needed
for scoring, only for asking a model: ``images=DIR`` finds each item's ``image`` (``COCO_val2014_<12-digit
id>.jpg`` for the COCO and A-OKVQA sets, ``<Visual Genome id>.jpg`` for GQA) in DIR or its subfolders
``val2014``, ``coco``, ``gqa``, ``images``, ``VG_100K``, ``VG_100K_2`` (a COCO 2017 name without the
``COCO_val2014_`` prefix is found too).

Nine sets: sources ``coco`` (COCO ground truth), ``aokvqa`` and ``gqa`` (objects found by SEEM) × settings
``random``, ``popular``, ``adversarial``; 3,000 questions each, half "yes". Sample ids are
``<source>-<setting>-<question_id>`` (``question_id`` as in the official file, 1-based).

Scoring modes (every record carries both):

- ``paper``: the official rule. Keep the text before the first "."; drop commas; split on spaces; the answer
  is "no" if a word is exactly ``No``, ``no`` or ``not``, else "yes" — so "I cannot tell" is a yes, and
  "Nope." or "NO" is a yes too.
- ``robust`` (default): the shared yes/no parser; refusals and unreadable answers are unanswered (counted,
  left out of every rate).

Metrics (0–100, "yes" the positive class): accuracy, precision, recall, F1, and the yes-ratio of the
*predictions*; per ``<source>/<setting>`` in groups; the items the two rules read differently.

- ``vlmevalkit``: VLMEvalKit's reading and rating (:mod:`halluscope.metrics.vlmevalkit`), to reproduce a
  VLMEvalKit ``POPE_score.csv``; the headline and per-set numbers are VLMEvalKit's, both other readings kept.

Benchmark options (``--bench-opt``) are declared once, in :attr:`Pope.options` (``halluscope list``, docs/pope.md);
``labels=repope`` reads RePOPE's corrected COCO labels (:mod:`halluscope.benchmarks.repope`), ``questions`` is
read by :mod:`halluscope.importers.llava`.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache, cached_property
from pathlib import Path
from typing import Any, ClassVar

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.base import Benchmark, MetricsReport, ScoringContext
from halluscope.benchmarks.closed import (
    ClosedDataError,
    check_mode,
    check_prompt,
    read_json_rows,
    yes_no_record,
)
from halluscope.benchmarks.images import (
    IMAGES_OPTION,
    MISSING_IMAGES_OPTION,
    ImageLookup,
    check_missing_policy,
    image_spec,
    locate_image,
)
from halluscope.benchmarks.repope import REPOPE_DATA
from halluscope.benchmarks.yes_no import yes_no_declarations, yes_no_table
from halluscope.download import ByHand, DataSet, github_files
from halluscope.jsonio import MAX_LINE_DEPTH, iter_jsonl, loads_json
from halluscope.options import BenchmarkOption
from halluscope.responses import ResponsesFile
from halluscope.stages import (
    ExternalRow,
    HeadlineView,
    MetricDeclaration,
    MetricTable,
    ProfileFigure,
    TaskOrder,
)
from halluscope.types import Response, Sample, SampleRecord

__all__ = ["POPE_DATA", "PROMPTS", "SETTINGS", "SOURCES", "Pope", "pope_file_name", "pope_paper_rule"]

SOURCES = ("coco", "aokvqa", "gqa")
SETTINGS = ("random", "popular", "adversarial")
#: The nine official sets, at the commit the shared copies come from (sizes and sha256 of those bytes).
POPE_DATA = DataSet(
    name="pope",
    title="POPE",
    files=github_files(
        "RUCAIBox/POPE",
        ("3df3ba1",),
        "output/",
        {
            "coco/coco_pope_random.json": (368166, "ac25245170b975a5bdf9080b23fd431dfe6be458bc038259c1f4f09a6bef7994"),
            "coco/coco_pope_popular.json": (370190, "72c1a8ad45d0c13514f5f22598261df41d3b533854d29682e924db50ed8aa753"),
            "coco/coco_pope_adversarial.json": (
                370401, "420b3407db1fa9f1187a805dca41cb7b97fd91504e6c2179706188c107fb8ef8"
            ),
            "aokvqa/aokvqa_pope_seem_random.json": (
                495827, "f06eecde6d6ef4a00b95a7bbb510490708a09a6a67d952b59b8bdd33ac2c7200"
            ),
            "aokvqa/aokvqa_pope_seem_popular.json": (
                492597, "2ae5bedee3450cda52f9b033942c7b04a3917a86a110e859a66c1e41934c6ffd"
            ),
            "aokvqa/aokvqa_pope_seem_adversarial.json": (
                494039, "2ddd3bdfa0df7a77a2cb1765ed06ac5ed190b5a093aa405b96986e862e8cdac1"
            ),
            "gqa/gqa_pope_seem_random.json": (
                441272, "6ce488eade3770185034939fabfe742fa32ed369011c8d9c3ac77bc0c85abd94"
            ),
            "gqa/gqa_pope_seem_popular.json": (
                438334, "dd03f06a458dd216e83233160fbf6628af9c63c84b11e99599f4fc0304b3361d"
            ),
            "gqa/gqa_pope_seem_adversarial.json": (
                439786, "74e01b41d8308e2392e3b8d961167496ff3901c01100265d931a7a392f138a7a"
            ),
        },
    ),
    by_hand=(
        ByHand(
            "COCO val2014 photos (the COCO and A-OKVQA sets)", "https://cocodataset.org/#download (val2014.zip)",
            "images", "--bench-opt images=FOLDER",
        ),
        ByHand(
            "GQA photos (the GQA sets)", "https://cs.stanford.edu/people/dorarad/gqa/download.html (images.zip)",
            "images", "--bench-opt images=FOLDER",
        ),
    ),
)  # fmt: skip
#: ``type`` is the hallucination type every POPE item probes (read by ``halluscope quality``'s coverage).
_RECORD_FIELDS = ("source", "setting", "question_id", "type")
#: What the model is asked (the ``prompt`` option): the file's question as POPE's files give it (the
#: default), with a yes/no instruction, or with the instruction LLaVA-1.5's POPE script and lmms-eval add.
PROMPTS = {
    "question": "{question}",
    "yesno": "{question} Please answer yes or no.",
    "short": "{question}\nAnswer the question using a single word or phrase.",
}
_IMAGE_PLACES = ("", "val2014", "coco", "gqa", "images", "VG_100K", "VG_100K_2")


def pope_file_name(source: str, setting: str) -> str:
    """The official file of one set, relative to the data folder (``coco/coco_pope_random.json``)."""
    if source == "coco":
        return f"coco/coco_pope_{setting}.json"
    return f"{source}/{source}_pope_seem_{setting}.json"


_FILE_NAME = re.compile(r"^(coco|aokvqa|gqa)_pope_(?:seem_)?(random|popular|adversarial)\.json$")


def _ask(template: str, question: str) -> str:
    """The question in the chosen prompt; the default leaves the file's text exactly as it is."""
    return question if template == "{question}" else template.format(question=question.strip())


@cache
def _stem(image: str) -> str:
    """``Path(image).stem``, once per name: 9,000 questions share 500 photos, and building a ``Path`` for
    each row was a tenth of a re-run's time (the rows are walked to make the samples and to pair answers)."""
    return Path(image).stem


def image_names(image: str) -> list[str]:
    """The file names an item's ``image`` may have on disk (COCO 2017 drops the ``COCO_val2014_`` prefix)."""
    names = [image]
    if image.startswith("COCO_val2014_"):
        names.append(image[len("COCO_val2014_") :])
    return names


def pope_paper_rule(answer: str) -> str:
    """The official rule, exactly (see the module docstring)."""
    text = answer
    if text.find(".") != -1:
        text = text.split(".")[0]
    words = text.replace(",", "").split(" ")
    return "no" if ("No" in words or "not" in words or "no" in words) else "yes"


def _csv(value: Any, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    items = [v for v in items if v]
    unknown = [v for v in items if v not in allowed]
    if unknown or not items:
        raise ValueError(f"unknown POPE {what} {unknown or value!r}; choose from {', '.join(allowed)}")
    return tuple(dict.fromkeys(items))


def resolve_pope_files(data: Path | None) -> dict[tuple[str, str], Path]:
    """The sets present under ``data`` (a folder, its ``output/`` subfolder, or one set's file)."""
    if data is None:
        data = ensure_data(POPE_DATA)
    path = Path(data)
    if path.is_file():
        match = _FILE_NAME.match(path.name)
        if not match:
            raise ClosedDataError(
                f"{path}: not a POPE set file name (expected e.g. coco_pope_random.json or "
                "gqa_pope_seem_adversarial.json)"
            )
        return {(match.group(1), match.group(2)): path}
    if not path.is_dir():
        raise ClosedDataError(f"POPE data not found at {path}")
    if (path / "output").is_dir() and not any((path / s).is_dir() for s in SOURCES):
        path = path / "output"
    found = {
        (src, st): path / pope_file_name(src, st)
        for src in SOURCES
        for st in SETTINGS
        if (path / pope_file_name(src, st)).exists()
    }
    if not found:
        raise ClosedDataError(f"{path} holds no POPE set (expected coco/coco_pope_random.json and the like)")
    return found


class Pope(Benchmark):
    """The POPE benchmark over the official question files."""

    name: ClassVar[str] = "pope"
    profile: ClassVar[tuple[ProfileFigure, ...]] = (
        ProfileFigure("object", "discriminative", "accuracy", rate=False),
    )
    title: ClassVar[str] = "POPE"
    data_sets: ClassVar[tuple[DataSet, ...]] = (POPE_DATA, REPOPE_DATA)
    headline_view: ClassVar[HeadlineView | None] = HeadlineView(
        "POPE per set, as LLaVA's eval_pope prints it",
        (("accuracy", "Accuracy"), ("precision", "Precision"), ("recall", "Recall"), ("f1", "F1"),
         ("yes_ratio", "Yes-ratio")),
        rows="groups", overall=False,
    )  # fmt: skip
    options: ClassVar[tuple[BenchmarkOption, ...]] = (
        BenchmarkOption(
            "sources", "csv", "which sources' sets", default=SOURCES, choices=SOURCES,
            default_text=f"{','.join(SOURCES)} (coco with labels=repope)",
        ),
        BenchmarkOption("settings", "csv", "which samplings", default=SETTINGS, choices=SETTINGS),
        BenchmarkOption(
            "mode", "choice", "which reading of yes/no gives the headline (every record carries each)",
            default="robust", choices=("robust", "paper", "vlmevalkit"),
        ),
        BenchmarkOption(
            "labels", "choice", "repope: RePOPE's corrected labels of the COCO sets", default="pope",
            choices=("pope", "repope"),
        ),
        BenchmarkOption("repope_data", "path", "the folder of RePOPE's files (else they are downloaded)"),
        BenchmarkOption(
            "questions", "path", "the question file an answers file in LLaVA's layout was made from"
        ),
        IMAGES_OPTION,
        MISSING_IMAGES_OPTION,
        BenchmarkOption(
            "prompt", "choice", "what the model is asked: the file's question, with a yes/no instruction, or "
            "with LLaVA-1.5's short-answer one", default="question", choices=tuple(PROMPTS),
        ),
    )

    def __init__(
        self,
        data: Path | None = None,
        *,
        sources: Sequence[str] = SOURCES,
        settings: Sequence[str] = SETTINGS,
        mode: str = "robust",
        images: Path | None = None,
        prompt: str = "question",
        missing_images: str = "refuse",
        labels: str = "pope",
        repope_data: Path | None = None,
        questions: Path | None = None,
    ) -> None:
        sources = _csv(sources, SOURCES, "source")
        settings = _csv(settings, SETTINGS, "setting")
        if labels not in ("pope", "repope"):
            raise ValueError(f"unknown POPE labels {labels!r}; choose pope or repope")
        if labels == "repope" and any(src != "coco" for src in sources):
            raise ValueError("RePOPE relabels only POPE's COCO sets: add --bench-opt sources=coco")
        self.labels = labels
        self.repope_data = repope_data
        self.questions = Path(questions) if questions is not None else None
        available = resolve_pope_files(data)
        self.data = data
        wanted = [(src, st) for src in sources for st in settings]
        self.files = {key: available[key] for key in wanted if key in available}
        if not self.files:
            raise ClosedDataError(
                f"no POPE set for sources {', '.join(sources)} and settings {', '.join(settings)} in the data "
                f"(found: {', '.join('-'.join(k) for k in available)})"
            )
        if mode not in ("robust", "paper", "vlmevalkit"):
            raise ValueError(f"unknown POPE scoring mode {mode!r}; choose robust, paper or vlmevalkit")
        self.mode = mode if mode == "vlmevalkit" else check_mode(mode)
        self.images = Path(images) if images else None
        self.prompt = check_prompt(prompt, PROMPTS, "the POPE benchmark")
        self.missing_images = check_missing_policy(missing_images)
        self._found: dict[str, ImageLookup] = {}

    @classmethod
    def computed_defaults(cls, chosen: dict[str, Any]) -> dict[str, Any]:
        """RePOPE relabels only the COCO sets, so ``labels=repope`` alone means those."""
        return {"sources": ("coco",)} if str(chosen.get("labels", "pope")) == "repope" else {}

    @cached_property
    def rows(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        loaded = {}
        for key, path in self.files.items():
            rows = read_json_rows(path)
            for index, row in enumerate(rows):
                missing = [f for f in ("question_id", "text", "label") if f not in row]
                if missing:
                    raise ClosedDataError(f"{path} item {index}: missing field(s) {', '.join(missing)}")
                if str(row["label"]).lower() not in ("yes", "no"):
                    raise ClosedDataError(f"{path} item {index}: label must be yes or no, got {row['label']!r}")
            loaded[key] = rows
        if self.labels == "repope":
            from halluscope.benchmarks.repope import relabel

            loaded, self.repope_counts, dropped = relabel(loaded, self.repope_data)
            self.repope_dropped = {
                (src, st, _stem(str(r.get("image", ""))), str(r["text"]).strip().lower()):
                    f"{src}-{st}-{r['question_id']}"
                for (src, st), rows in dropped.items()
                for r in rows
            }  # fmt: skip
        return loaded

    #: Per set, what RePOPE's files changed (``labels=repope``): kept, dropped and relabelled items.
    repope_counts: dict[str, dict[str, int]] | None = None
    #: Items RePOPE dropped, by (source, setting, image stem, question): answers to them are told apart.
    repope_dropped: dict[tuple[str, str, str, str], str] | None = None

    def samples(self) -> Iterator[Sample]:
        template = PROMPTS[self.prompt]
        for (source, setting), rows in self.rows.items():
            for line, row in enumerate(rows):
                image = str(row.get("image", ""))
                photo = self._image(image)
                yield Sample(
                    id=f"{source}-{setting}-{row['question_id']}",
                    benchmark=self.name,
                    prompt=_ask(template, str(row["text"])),
                    image_id=_stem(image) or None,
                    image_path=photo.path,
                    reference=str(row["label"]).lower(),
                    metadata={
                        "source": source,
                        "setting": setting,
                        "question_id": row["question_id"],
                        "type": "existence",
                        "label": str(row["label"]).lower(),
                        "line": line,
                        "image": image,
                        **photo.metadata,
                    },
                )

    def _image(self, image: str) -> ImageLookup:
        """Where the item's photo is (memoised: 3,000 questions of a set share 500 photos)."""
        if self.images is None or not image:
            return ImageLookup(None)
        if image not in self._found:
            self._found[image] = locate_image(self.images, image_names(image), _IMAGE_PLACES)
        return self._found[image]

    def spec(self, samples: Sequence[Sample] | None = None) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "data": str(self.data) if self.data is not None else None,
            "sets": sorted(f"{src}-{st}" for src, st in self.files),
            "files": {f"{src}-{st}": str(p) for (src, st), p in sorted(self.files.items())},
            "mode": self.mode,
            # Written only when not the default, so runs made before the option existed resume unchanged.
            **({"prompt": self.prompt} if self.prompt != "question" else {}),
            **image_spec(self.images, self._counted(samples), self.missing_images),
            **self._label_spec(),
            **({"questions": str(self.questions)} if self.questions is not None else {}),
        }

    def _label_spec(self) -> dict[str, Any]:
        if self.labels != "repope":
            return {}
        _ = self.rows  # the counts are made while reading
        return {"labels": "repope", "repope": self.repope_counts}

    def external_id(self, row: Mapping[str, Any]) -> str | None:
        """The sample id of a row from another harness (lmms-eval doc, VLMEvalKit line), or None.

        lmms-eval's POPE docs carry ``question_id`` and ``category`` (the setting) and are COCO questions;
        a ``source`` field, when present, names the source.
        """
        setting = row.get("category") or row.get("setting")
        if setting not in SETTINGS:
            return None
        source = str(row["source"]) if row.get("source") in SOURCES else "coco"
        question_id = row.get("question_id")
        if question_id is not None and str(question_id).isdigit():
            return f"{source}-{setting}-{int(str(question_id))}"
        image = row.get("image_source") or row.get("image_path") or row.get("image_name") or row.get("image")
        question = row.get("question") or row.get("text")
        if image and question:
            key = (source, str(setting), _stem(str(image)), str(question).strip().lower())
            return self._by_image_question.get(key) or (self.repope_dropped or {}).get(key)
        return None

    @cached_property
    def _by_image_question(self) -> dict[tuple[str, str, str, str], str]:
        """(source, setting, image stem, question) → id: unique in POPE, for rows that carry no question id."""
        index = {}
        for (source, setting), rows in self.rows.items():
            for row in rows:
                stem = _stem(str(row.get("image", "")))
                index[(source, setting, stem, str(row["text"]).strip().lower())] = (
                    f"{source}-{setting}-{row['question_id']}"
                )
        return index

    def external_questions(self) -> Path | None:
        """LLaVA's ``llava_pope_test.jsonl``, when given (``--bench-opt questions=FILE``)."""
        return self.questions

    def external_rows(self, row: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """VLMEvalKit's POPE table merges the three COCO sets, one row per distinct (image, question), so a
        row's ``category`` may list several settings (``adversarial,popular``): VLMEvalKit counts such a row in
        each, and so does halluscope, one item per setting it lists."""
        listed = _settings_of(row.get("category"))
        if listed is None:
            raise ValueError(f"category {row.get('category')!r} names no POPE setting")
        return [(setting if len(listed) > 1 else "", {**row, "category": setting}) for setting in listed]

    def items_from_rows(self, rows: Sequence[ExternalRow], kind: str) -> ResponsesFile | None:
        """A VLMEvalKit POPE sheet whose rows name no POPE item (its ``index`` is VLMEvalKit's own row number,
        its image a local path) is scored on its own rows: each row is an item per setting it lists, labelled
        by the sheet's ``answer`` column (ids ``coco-<setting>-vlmevalkit<index>``); None when no row has a
        yes/no label."""
        if not any(_yes_no(row.fields.get("answer")) for row in rows):
            return None
        return _items_from_sheet(rows, kind, {st for src, st in self.files if src == "coco"}, self.name)

    def task_orders(self, file_name: str) -> list[TaskOrder]:
        """lmms-eval's ``pope`` task (lmms-lab/POPE, split ``test``, 9,000 rows) holds POPE's three COCO sets
        one after another, each in its file's order, in an order its task files do not state, so each order of
        the three is a candidate; ``pope_adv`` / ``pope_pop`` / ``pope_random`` (its ``Full`` config) hold one
        set. The task is read from the file name (``samples_pope_adv.jsonl``)."""
        stem = Path(file_name).stem.lower()
        task = next((t for t in _LMMS_EVAL_TASKS if t in stem), "pope")
        sets = self._coco_set_ids()
        wanted = _LMMS_EVAL_TASKS.get(task)
        if wanted is not None:
            return [TaskOrder(task, f"POPE coco {wanted}, in file order", sets[wanted])] if wanted in sets else []
        if len(sets) < 3:
            return []
        return [
            TaskOrder(task, f"POPE coco {', '.join(order)} one after another, each in file order",
                      [i for setting in order for i in sets[setting]])
            for order in itertools.permutations(("adversarial", "popular", "random"))
        ]  # fmt: skip

    def _coco_set_ids(self) -> dict[str, list[str]]:
        """The sample ids of each COCO set, in file order, from the selected files and the ones beside them."""
        folder = next((Path(p).parent for (src, _), p in self.files.items() if src == "coco"), None)
        if folder is None:
            return {}
        sets: dict[str, list[str]] = {}
        for setting in ("adversarial", "popular", "random"):
            path = self.files.get(("coco", setting)) or folder / f"coco_pope_{setting}.json"
            if Path(path).is_file():
                sets[setting] = [
                    f"coco-{setting}-{line.value['question_id']}"
                    for line in iter_jsonl(Path(path))
                    if line.ok and isinstance(line.value, dict) and "question_id" in line.value
                ]
        return sets

    def read_responses(
        self, path: Path, *, benchmark_ids: set[str] | None = None, key: str | None = None
    ) -> ResponsesFile:
        """halluscope JSONL, POPE's own answer layout, or an lmms-eval / VLMEvalKit output file."""
        path = Path(path)
        if _is_official_answers(path):
            return self._read_official_answers(path)
        _ = self.rows  # RePOPE's dropped items are known once the rows are read
        dropped = set((self.repope_dropped or {}).values())
        if not dropped or benchmark_ids is None:
            return super().read_responses(path, benchmark_ids=benchmark_ids, key=key)
        result = super().read_responses(path, benchmark_ids=benchmark_ids | dropped, key=key)
        answered = [i for i in result.responses if i in dropped]
        for sample_id in answered:
            del result.responses[sample_id]
        if answered:
            result.problems.append(
                f"{len(answered)} answers are to items RePOPE dropped as ambiguous (e.g. {answered[0]}); not scored"
            )
            result.notes["answers_to_repope_dropped_items"] = len(answered)
        return result

    def _read_official_answers(self, path: Path) -> ResponsesFile:
        """POPE's answer layout (``answer_example.json``): one ``{"question", "answer"}`` a line, in the
        order of one set's question file — so it needs exactly one selected set."""
        if len(self.rows) != 1:
            raise ClosedDataError(
                f"{path} is in POPE's own answer layout, which follows the order of ONE question file; "
                "select that set with --bench-opt sources=... --bench-opt settings=..."
            )
        (source, setting), rows = next(iter(self.rows.items()))
        result = ResponsesFile()
        answers = [line for line in _iter_answer_lines(path)]
        for position, (number, row, error) in enumerate(answers):
            where = f"{path.name} line {number}"
            if error:
                result.problems.append(f"{where}: {error}")
                continue
            if position >= len(rows):
                result.problems.append(f"{where}: more answers than the {len(rows)} questions of {source}-{setting}")
                continue
            question = rows[position]
            sample_id = f"{source}-{setting}-{question['question_id']}"
            asked = str(row.get("question", "")).strip().lower()
            if asked and asked != str(question["text"]).strip().lower():
                result.problems.append(
                    f"{where}: question {row.get('question')!r} does not match question {question['question_id']} "
                    f"of {source}-{setting} ({question['text']!r}); answers must follow the question file's order"
                )
                continue
            answer = row.get("answer", row.get("text"))
            if not isinstance(answer, str):
                result.problems.append(f"{where} ({sample_id}): no answer text")
                continue
            result.responses[sample_id] = Response(id=sample_id, response=answer)
        return result

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        if self.mode == "vlmevalkit":
            from halluscope.metrics.vlmevalkit import with_vlmevalkit_reading

            return [
                with_vlmevalkit_reading(
                    yes_no_record(s, r, mode="paper", paper_rule=pope_paper_rule, fields=_RECORD_FIELDS)
                )
                for s, r in pairs
            ]
        return [
            yes_no_record(s, r, mode=self.mode, paper_rule=pope_paper_rule, fields=_RECORD_FIELDS)
            for s, r in pairs
        ]

    def answer_reader(self) -> str:
        return {"robust": "robust", "paper": "pope-paper", "vlmevalkit": "vlmevalkit"}[self.mode]

    def metric_declarations(self) -> Sequence[MetricDeclaration]:
        return yes_no_declarations("image")

    def metric_tables(self, records: Sequence[SampleRecord]) -> dict[str, MetricTable]:
        # POPE asks six questions of each image, in each of its three settings: the image is the unit.
        # Groups are the per-set figures (``coco/adversarial``) eval_pope and VLMEvalKit print.
        def image(record: SampleRecord) -> str:
            return record.image_id or record.id

        def group(record: SampleRecord) -> str:
            return f"{record.field('source')}/{record.field('setting')}"

        if self.mode != "vlmevalkit":
            table = yes_no_table(records, cluster=image, group=group)
        else:
            # VLMEvalKit's reading: an answer it reads as neither word ("Unknown") is answered and wrong; an
            # answer it has no reading for at all is left out, as its scorer leaves it out.
            read = [r for r in records if r.field("vlmevalkit_reading") is not None]
            table = yes_no_table(read, cluster=image, group=group, reading=_vlmevalkit_prediction)
        if not any(r.image_id for r in records):
            # Answers from a file that names no image (a VLMEvalKit sheet scored on its own labels): nothing
            # says which questions share an image, so each is its own unit, and the interval says so.
            table.clusters, table.unit = None, "question"
        return {"items": table}

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        from halluscope.metrics.yesno import yes_no_report

        if self.mode == "vlmevalkit":
            from halluscope.metrics.vlmevalkit import pope_vlmevalkit_report

            report = pope_vlmevalkit_report(records, benchmark=self.name)
        else:
            report = yes_no_report(records, benchmark=self.name, mode=self.mode, group_by=("source", "setting"))
        if self.labels == "repope" and self.repope_counts is not None:
            for what in ("dropped", "relabelled"):
                report.counts[f"repope_{what}"] = sum(c[what] for c in self.repope_counts.values())
            report.details["labels"] = "repope"
        return report


def _vlmevalkit_prediction(record: SampleRecord) -> str:
    """VLMEvalKit's reading as a prediction: "yes", "no", or "unknown" (answered, and never right)."""
    return str(record.field("vlmevalkit_reading")).lower()


def _iter_answer_lines(path: Path) -> Iterator[tuple[int, dict[str, Any], str | None]]:
    for line in iter_jsonl(path):
        if not line.ok:
            yield line.number, {}, line.error
        elif not isinstance(line.value, dict):
            yield line.number, {}, "not a JSON object"
        else:
            yield line.number, line.value, None


def _is_official_answers(path: Path) -> bool:
    """POPE's answer layout: JSONL rows with ``question`` and ``answer`` (or ``text``) and no ``id``."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        row = loads_json(first, max_depth=MAX_LINE_DEPTH)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(row, dict) and "id" not in row and "question" in row and ("answer" in row or "text" in row)


# -- other tools' layouts of POPE ------------------------------------------------------------------------------

#: lmms-eval's one-set POPE tasks and the COCO setting each holds.
_LMMS_EVAL_TASKS = {"pope_adv": "adversarial", "pope_pop": "popular", "pope_random": "random"}
_COCO_IMAGE = re.compile(r"COCO_val2014_\d+", re.IGNORECASE)


def _settings_of(value: object) -> list[str] | None:
    parts = [p.strip() for p in str(value or "").split(",") if p.strip()]
    return parts if parts and all(p in SETTINGS for p in parts) else None


def _yes_no(value: object) -> str | None:
    text = str(value or "").strip().lower()
    return text if text in ("yes", "no") else None


def _sheet_row_problem(row: ExternalRow) -> str | None:
    fields = row.fields
    if _settings_of(fields.get("category")) is None:
        return f"category {fields.get('category')!r} names no POPE setting"
    if _yes_no(fields.get("answer")) is None:
        return f"label {fields.get('answer')!r} is neither Yes nor No"
    if row.answer is None:
        return "no 'prediction' column value"
    if fields.get("index") is None:
        return "no 'index'"
    return None


def _items_from_sheet(rows: Sequence[ExternalRow], kind: str, selected: set[str], benchmark: str) -> ResponsesFile:
    """The sheet's rows as POPE items (COCO), labelled by its ``answer`` column; one item per listed setting."""
    result = ResponsesFile(layout=kind)
    outside = 0
    for row in rows:
        problem = _sheet_row_problem(row)
        if problem is not None:
            result.problems.append(f"{row.where}: {problem}")
            continue
        fields, index = row.fields, row.fields.get("index")
        settings, label = _settings_of(fields.get("category")) or [], _yes_no(fields.get("answer"))
        for setting in settings:
            if setting not in selected:
                outside += 1
                continue
            sample_id = f"coco-{setting}-vlmevalkit{index}"
            if sample_id in result.responses:
                result.problems.append(f"{row.where}: a second row with index {index} in {setting}; the first is used")
                continue
            result.items.append(
                Sample(
                    id=sample_id,
                    benchmark=benchmark,
                    prompt=str(fields.get("question") or ""),
                    reference=label,
                    metadata={
                        "source": "coco",
                        "setting": setting,
                        "question_id": f"vlmevalkit{index}",
                        "type": "existence",
                        "label": label,
                        "line": row.number,
                        "image": str(fields.get("image_path") or ""),
                        "settings_of_row": ",".join(settings),
                    },
                )
            )
            result.responses[sample_id] = Response(
                id=sample_id, response=str(row.answer), metadata={"imported_from": kind, "source_row": row.where}
            )
    if outside:
        result.notes["rows_outside_selected_settings"] = outside
    has_image = any(_COCO_IMAGE.search(str(row.fields.get("image_path") or "")) for row in rows)
    result.notes["labels"] = (
        "the responses file's own 'answer' column: its rows name no POPE item"
        + ("" if has_image else " (no COCO image name in the sheet)")
        + f"; {len(result.items)} items from {len(rows)} rows, a row counted once per setting it lists"
    )
    return result
