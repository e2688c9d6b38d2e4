"""A static, self-contained HTML report of one or more runs.

Why one file: a report is something people mail, attach to an issue or open from a CI artefact, often on a
machine without the data or the package. So everything it needs — styles, script, plots, image thumbnails,
scene graphs — is inlined, and a Content-Security-Policy forbids every network request.

What it shows (modelled on Tri-HE's Figure 1): a summary table of all runs; a radar of hallucination rates
per model (Fig. 1b); a helpfulness–truthfulness scatter when runs report both (PROVE); and a page per
sample with the image, its scene graph, the question and the response with each extracted claim coloured
by verdict, next to its evidence (Fig. 1a).

Why the samples are rendered by the browser: a Tri-HE run has 1,226 samples with several judged claims
each, and a page with all of them as HTML would be slow to open. The samples go in as one JSON document
that the inline script filters, sorts and paginates; only the summary and plots are HTML/SVG from Python,
so they also read without JavaScript.

Safety: responses are untrusted model output. Text from runs reaches the page either escaped by
``html.escape`` (summary, plots) or through ``textContent`` (everything the script renders), never as markup.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["ReportError", "claim_category", "locate_claim", "write_html_report"]

#: Tri-HE's rates in the order the paper reports them; they are the radar's axes when present.
TRI_HE_RATES = (
    "hallu_q",
    "hallu_i",
    "object_hallu_q",
    "object_hallu_i",
    "relation_hallu_q",
    "relation_hallu_i",
)
_PRETTY_METRICS = {
    "hallu_q": "Hallu-Q",
    "hallu_i": "Hallu-I",
    "object_hallu_q": "Object Hallu-Q",
    "object_hallu_i": "Object Hallu-I",
    "relation_hallu_q": "Relation Hallu-Q",
    "relation_hallu_i": "Relation Hallu-I",
    "attribute_hallu_q": "Attribute Hallu-Q",
    "attribute_hallu_i": "Attribute Hallu-I",
    "hallu_q_with_empty": "Hallu-Q (empty=0)",
    "hallu_i_with_empty": "Hallu-I (empty=0)",
    "hscore": "hScore (helpfulness)",
    "tscore": "tScore (truthfulness)",
    "average": "average of hScore and tScore",
}
#: Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
_PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7f7f00", "#000000")
#: Verdict categories of a claim, most severe first; the response colours overlapping claims by the first.
CATEGORIES = ("object", "relation", "attribute", "hallucinated", "unjudged", "supported")

_DEFAULT_THUMBNAIL_PX = 384
_DEFAULT_IMAGE_BUDGET = 16_000_000


class ReportError(ValueError):
    """A run directory cannot be reported (missing, or neither samples nor metrics in it)."""


# -- reading runs ---------------------------------------------------------------------------------------


@dataclass
class _Run:
    directory: Path
    spec: dict[str, Any]
    metrics: dict[str, Any]
    records: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    label: str = ""
    color: str = _PALETTE[0]
    #: Unique in the report: the run folder's name (deep links use it).
    name: str = ""

    @property
    def model(self) -> str:
        """The model's name; for runs scored from a responses file, the run directory's name."""
        return _component_name(self.spec.get("model")) or self.directory.name

    @property
    def benchmark(self) -> str:
        name = _component_name(self.spec.get("benchmark")) or self.metrics.get("benchmark")
        return str(name) if name else "?"

    @property
    def judge(self) -> str:
        return _component_name(self.spec.get("judge")) or "—"

    @property
    def extractor(self) -> str:
        return _component_name(self.spec.get("extractor")) or "—"

    def metric_values(self) -> dict[str, float | None]:
        values = self.metrics.get("metrics") or {}
        return {str(k): _as_float(v) for k, v in values.items()} if isinstance(values, dict) else {}


def _component_name(value: Any) -> str | None:
    """A spec names a component by a string or by its identity dict.

    Identity dicts (``{"judge": "similarity", "model": ...}``, ``{"provider": "openai", "model": "gpt-4o"}``)
    read as "name (model)", the way the terminal table shows them.
    """
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        name = next(
            (
                value[k]
                for k in ("benchmark", "judge", "extractor", "name", "provider")
                if isinstance(value.get(k), str)
            ),
            None,
        )
        detail = value.get("model") or value.get("spec")
        detail = detail if isinstance(detail, str) else None
        if name is None:
            return detail or json.dumps(value, sort_keys=True)
        return f"{name} ({detail})" if detail else str(name)
    return str(value)


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return None if math.isnan(value) else float(value)
    return None


def _read_json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc})") from exc


def _read_records_jsonl(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """Reads samples.jsonl leniently: a run still being written may end in a half line."""
    from halluscope.jsonio import iter_jsonl

    records: list[dict[str, Any]] = []
    for line in iter_jsonl(path):
        if not line.ok:
            notes.append(f"{path.name} line {line.number} is not valid JSON; skipped")
        elif not isinstance(line.value, dict) or "id" not in line.value:
            notes.append(f"{path.name} line {line.number} is not a sample record; skipped")
        else:
            records.append(line.value)
    return records


def _load_run(directory: Path) -> _Run:
    """Reads a run with ``halluscope.runs.store`` when available, else from the files (same format)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReportError(f"run directory {directory} does not exist")
    samples_path, metrics_path, spec_path = (
        directory / "samples.jsonl",
        directory / "metrics.json",
        directory / "spec.json",
    )
    if not samples_path.exists() and not metrics_path.exists():
        raise ReportError(
            f"{directory} is not a run directory: it has neither samples.jsonl nor metrics.json"
        )
    notes: list[str] = []
    store: Any = None
    try:
        from halluscope.runs import store as store_module

        store = store_module
    except ImportError:
        store = None

    spec: dict[str, Any] = {}
    if spec_path.exists():
        raw_spec = store.read_spec(directory) if store else _read_json_file(spec_path)
        spec = dict(raw_spec) if isinstance(raw_spec, Mapping) else {}
    else:
        notes.append("spec.json is missing")

    metrics: dict[str, Any] = {}
    if metrics_path.exists():
        raw_metrics = store.read_metrics(directory) if store else _read_json_file(metrics_path)
        metrics = _plain(raw_metrics)
        if not isinstance(metrics, dict):
            raise ReportError(f"{metrics_path}: expected a JSON object")
    else:
        notes.append("metrics.json is missing (run unfinished?): rates not shown")

    records: list[dict[str, Any]] = []
    if samples_path.exists():
        if store:
            records = [_plain(r) for r in store.read_records(directory)]
        else:
            records = _read_records_jsonl(samples_path, notes)
    else:
        notes.append("samples.jsonl is missing: no samples to show")
    # A sample nobody answered says nothing about the model: leave such placeholders out of the count,
    # the pages and the file (a 32-answer Tri-HE run would otherwise carry 1,194 empty cards and images).
    answered = [r for r in records if r.get("response") is not None]
    if len(answered) < len(records):
        notes.append(f"{len(records) - len(answered):,} samples without a response are not shown")
    return _Run(directory=directory, spec=spec, metrics=metrics, records=answered, notes=notes)


def _plain(value: Any) -> Any:
    """Pydantic models (from the store) to plain JSON data; plain data unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return value


def _label_runs(runs: Sequence[_Run]) -> None:
    """Model names label runs; add the judge, then the directory name, only where they collide."""
    labels = [r.model for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{r.model} · {r.judge}" if labels.count(r.model) > 1 else r.model for r in runs]
    if len(set(labels)) < len(labels):
        labels = [
            f"{lab} ({r.directory.name})" if labels.count(lab) > 1 else lab
            for lab, r in zip(labels, runs, strict=True)
        ]
    if len(set(labels)) < len(labels):
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    for index, (run, label) in enumerate(zip(runs, labels, strict=True)):
        run.label = label
        run.color = _PALETTE[index % len(_PALETTE)]
    # Deep links (#/sample/<run>/<id>) name a run by its folder name; a repeated name gets "-2", "-3".
    taken: set[str] = set()
    for run in runs:
        name, suffix = run.directory.name or "run", 2
        while name in taken:
            name, suffix = f"{run.directory.name}-{suffix}", suffix + 1
        taken.add(name)
        run.name = name


# -- claims in the response -----------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n+")
#: Words that carry no claim content; a claim is placed by its other words.
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the is are was were be been being of and or to it its this that these those there some any "
        "very has have had do does did can could may might will would",
    )
)


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _same_word(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def locate_claim(response: str, subject: str, relation: str, obj: str) -> tuple[int, int] | None:
    """Where in ``response`` a (subject, relation, object) claim is stated, as character offsets.

    Extractors paraphrase, so this is a heuristic: it picks the sentence sharing most content words with
    the claim (half of them at least) and returns the shortest stretch of it holding those words. None
    when the claim cannot be placed; the report then lists the claim without marking the text.
    """
    wanted = []
    for word in _TOKEN.findall(f"{subject} {relation} {obj}"):
        if word.lower() not in _STOPWORDS:
            stem = _stem(word)
            if stem not in wanted:
                wanted.append(stem)
    if not wanted:
        return None
    best: tuple[int, int, int] | None = None  # (matched count, start, end)
    sentence_start = 0
    bounds = [m.end() for m in _SENTENCE_END.finditer(response)] + [len(response)]
    for sentence_end in bounds:
        if sentence_end <= sentence_start:
            continue
        tokens = [
            (m.start() + sentence_start, m.end() + sentence_start, _stem(m.group()))
            for m in _TOKEN.finditer(response[sentence_start:sentence_end])
        ]
        hits = [
            (start, end, {i for i, w in enumerate(wanted) if _same_word(w, stem)})
            for start, end, stem in tokens
        ]
        hits = [h for h in hits if h[2]]
        found = set().union(*(h[2] for h in hits)) if hits else set()
        if found and (best is None or len(found) > best[0]):
            window = _shortest_window(hits, found)
            if window is not None:
                best = (len(found), window[0], window[1])
        sentence_start = sentence_end
    if best is None or best[0] * 2 < len(wanted):
        return None
    return best[1], best[2]


def _shortest_window(hits: list[tuple[int, int, set[int]]], needed: set[int]) -> tuple[int, int] | None:
    """The shortest run of hits (by characters) that together match every index in ``needed``."""
    best: tuple[int, int] | None = None
    counts: dict[int, int] = {}
    left = 0
    for _, end, matched in hits:
        for index in matched:
            counts[index] = counts.get(index, 0) + 1
        while len(counts) == len(needed):
            start = hits[left][0]
            if best is None or end - start < best[1] - best[0]:
                best = (start, end)
            for index in hits[left][2]:
                counts[index] -= 1
                if counts[index] == 0:
                    del counts[index]
            left += 1
    return best


def claim_category(claim: Mapping[str, Any]) -> str:
    """The report's colour class of a claim: supported, object/relation/attribute, hallucinated, unjudged."""
    verdict = str(claim.get("verdict") or "unjudged")
    if verdict == "supported":
        return "supported"
    if verdict == "hallucinated":
        error = claim.get("error")
        return str(error) if error in ("object", "relation", "attribute") else "hallucinated"
    return "unjudged"


# -- images and scene graphs ----------------------------------------------------------------------------


class _Thumbnails:
    """Downscaled JPEG data URIs, one per distinct image file, within a total size budget."""

    def __init__(self, max_px: int, budget: int) -> None:
        self.max_px = max_px
        self.budget = budget
        self.used = 0
        self.keys: dict[Path, str | None] = {}
        self.data: dict[str, str] = {}
        self.skipped_for_budget = 0

    def key_for(self, path: Path) -> str | None:
        if path in self.keys:
            return self.keys[path]
        key = self._embed(path)
        self.keys[path] = key
        return key

    def _embed(self, path: Path) -> str | None:
        if self.used >= self.budget:
            self.skipped_for_budget += 1
            return None
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(path) as image:
                image.draft("RGB", (self.max_px, self.max_px))
                rgb = image.convert("RGB")
                rgb.thumbnail((self.max_px, self.max_px), Image.Resampling.BILINEAR)
                buffer = io.BytesIO()
                rgb.save(buffer, "JPEG", quality=70)
        except (OSError, UnidentifiedImageError, ValueError):
            return None
        uri = "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        if self.used + len(uri) > self.budget:
            self.skipped_for_budget += 1
            self.used = self.budget
            return None
        self.used += len(uri)
        key = f"i{len(self.data)}"
        self.data[key] = uri
        return key


@dataclass
class _BenchmarkView:
    """What the run's benchmark still knows about its samples on this machine (maybe nothing)."""

    samples: dict[str, Any] = field(default_factory=dict)
    scene_of: Callable[[Any], Any] | None = None
    note: str | None = None


def _open_benchmark(run: _Run) -> _BenchmarkView:
    """Recreates the run's benchmark from its spec, to find scene graphs, images and reference answers.

    A run directory copied to another machine must still render, so every failure here only adds a note.
    """
    spec = run.spec
    name = _component_name(spec.get("benchmark"))
    raw_benchmark = spec.get("benchmark")
    nested: dict[str, Any] = raw_benchmark if isinstance(raw_benchmark, dict) else {}
    name = nested.get("benchmark") or nested.get("name") if nested else name
    if not name:
        return _BenchmarkView(note="the spec names no benchmark: no scene graphs")
    # The runner stores ``benchmark.spec()``: the name plus the options that recreate it (data, images, ...).
    skip = ("benchmark", "name", "only_answered")  # the selection is in the records already
    options = {k: v for k, v in nested.items() if k not in skip and v is not None}
    data = options.get("data") or spec.get("data")
    if not data:
        return _BenchmarkView(note=f"the spec gives no data path for {name!r}: no scene graphs")
    data_path = Path(str(data))
    if not data_path.exists() and (run.directory / data_path).exists():
        data_path = run.directory / data_path
    if not data_path.exists():
        # Never let a benchmark look elsewhere (some download their data): a report works offline.
        return _BenchmarkView(note=f"benchmark data not found at {data_path}: no scene graphs")
    options["data"] = data_path
    try:
        from halluscope.benchmarks import BENCHMARKS

        try:
            benchmark = BENCHMARKS.create(str(name), **options)
        except (TypeError, ValueError):  # options this factory does not take: the data path alone
            benchmark = BENCHMARKS.create(str(name), data=data_path)
        wanted = {str(r["id"]) for r in run.records}
        samples = {s.id: s for s in benchmark.samples() if s.id in wanted}
    except Exception as exc:  # any failure: the report renders without what the benchmark would add
        return _BenchmarkView(
            note=f"benchmark {name!r} could not be opened here ({type(exc).__name__}: {exc})"
        )
    return _BenchmarkView(samples=samples, scene_of=benchmark.scene)


def _scene_dict(scene: Any) -> dict[str, Any] | None:
    """A scene graph as the facts the sample page lists."""
    to_dict = getattr(scene, "to_dict", None)
    if not callable(to_dict):
        return None
    data = to_dict()
    if not isinstance(data, dict):
        return None
    facts = list(getattr(scene, "reference_texts", []) or [])
    return {
        "objects": [str(o) for o in data.get("objects") or []],
        "attributes": {str(k): [str(a) for a in v] for k, v in (data.get("attributes") or {}).items()},
        "relations": [[str(x) for x in rel] for rel in data.get("relations") or []],
        "facts": [str(f) for f in facts],
    }


def _image_dirs(spec: Mapping[str, Any]) -> list[Path]:
    """Folders where the benchmark keeps images named by image id (Tri-HE: ``images/`` beside its JSON)."""
    nested = spec.get("benchmark") if isinstance(spec.get("benchmark"), dict) else {}
    folders: list[Path] = []
    if isinstance(nested, dict) and nested.get("images"):
        folders.append(Path(str(nested["images"])))
    for data in (nested.get("data") if isinstance(nested, dict) else None, spec.get("data")):
        if data:
            path = Path(str(data))
            folders.append((path.parent if path.suffix else path) / "images")
    return folders


def _find_image(record: Mapping[str, Any], sample: Any, run: _Run) -> Path | None:
    raw_metadata = record.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    candidates: list[Any] = [
        record.get("image_path"),
        metadata.get("image_path"),
        getattr(sample, "image_path", None),
    ]
    image_id = record.get("image_id") or getattr(sample, "image_id", None)
    if image_id:
        candidates += [
            d / f"{image_id}{ext}" for d in _image_dirs(run.spec) for ext in (".jpg", ".png", ".jpeg")
        ]
    for candidate in candidates:
        if not candidate:
            continue
        path = Path(str(candidate))
        for option in (path, run.directory / path):
            if option.is_file():
                return option.resolve()
    return None


# -- the sample payload ---------------------------------------------------------------------------------

_RECORD_FIELDS = {"id", "prompt", "response", "claims", "failure", "image_id", "metadata", "claims_source"}


def _sample_payload(
    run_index: int,
    record: Mapping[str, Any],
    sample: Any,
    image_key: str | None,
    scene_key: str | None,
) -> dict[str, Any]:
    response = record.get("response")
    response_text = response if isinstance(response, str) else ""
    claims = []
    for claim in record.get("claims") or []:
        if not isinstance(claim, dict):
            continue
        s, r, o = (str(claim.get(k) or "") for k in ("subject", "relation", "object"))
        claims.append(
            {
                "s": s,
                "r": r,
                "o": o,
                "v": str(claim.get("verdict") or "unjudged"),
                "e": claim.get("error"),
                "c": claim_category(claim),
                "sc": _as_float(claim.get("score")),
                "ev": [str(e) for e in claim.get("evidence") or []],
                "x": claim.get("explanation"),
                "sp": locate_claim(response_text, s, r, o) if response_text else None,
            }
        )
    metadata = dict(record["metadata"]) if isinstance(record.get("metadata"), dict) else {}
    extra = {k: v for k, v in record.items() if k not in _RECORD_FIELDS}
    reference = (
        extra.pop("reference", None)
        or metadata.get("reference")
        or metadata.get("answer")
        or getattr(sample, "reference", None)
    )
    prediction = extra.pop("prediction", metadata.get("prediction"))
    correct = extra.pop("correct", metadata.get("correct"))
    return {
        "r": run_index,
        "id": str(record.get("id")),
        "q": str(record.get("prompt") or getattr(sample, "prompt", "") or ""),
        "a": response if isinstance(response, str) else None,
        "ref": None if reference is None else str(reference),
        "pred": None if prediction is None else str(prediction),
        "ok": correct if isinstance(correct, bool) else None,
        "f": record.get("failure"),
        "src": record.get("claims_source"),
        "img": image_key,
        "sg": scene_key,
        "iid": record.get("image_id") or getattr(sample, "image_id", None),
        "c": claims,
        "meta": {**metadata, **extra},
    }


def _verdict_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for record in records:
        for claim in record.get("claims") or []:
            if isinstance(claim, dict):
                counts[claim_category(claim)] += 1
    return counts


# -- summary table and plots (server-side, so they read without JavaScript) ----------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: float | None, scale: float | None = None) -> str:
    """Two decimals for scores in 0–1, one for percentages (as the papers print them).

    ``scale`` is the largest value of the column, so a column of percentages reads 9.2 and 10.8 alike.
    """
    if value is None:
        return "—"
    top = abs(value) if scale is None else scale
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}" if top <= 1 else f"{value:.1f}"


def _column_scale(values: Iterable[float | None]) -> float:
    return max((abs(v) for v in values if v is not None), default=0.0)


def _tick(value: float) -> str:
    return f"{value:g}"


def _metric_keys(runs: Sequence[_Run]) -> list[str]:
    seen: list[str] = []
    for run in runs:
        for key in run.metric_values():
            if key not in seen:
                seen.append(key)
    from halluscope.report.order import order_metrics

    return order_metrics(seen)  # fixed and paired: each Hallu-Q before its Hallu-I


def _summary_html(runs: Sequence[_Run]) -> str:
    metric_keys = _metric_keys(runs)
    count_keys: list[str] = []
    for run in runs:
        for key in run.metrics.get("counts") or {}:
            if key not in count_keys:
                count_keys.append(str(key))
    # The first column is the run's label: its model, plus the judge or folder where models repeat.
    head = ["model (run folder)", "benchmark", "extractor", "judge", "samples"]
    head_html = "".join(f"<th>{_e(h)}</th>" for h in head)
    head_html += "".join(
        f'<th class="num metric" title="{_e(k)}">{_e(_pretty(k)).replace(" ", "<br>")}</th>'
        for k in metric_keys
    )
    head_html += '<th class="claims-col">claims by verdict</th><th class="counts-col">counts</th>'
    scales = {k: _column_scale(r.metric_values().get(k) for r in runs) for k in metric_keys}
    rows = []
    for index, run in enumerate(runs):
        values = run.metric_values()
        counts = run.metrics.get("counts") or {}
        verdicts = _verdict_counts(run.records)
        chips = "".join(
            f'<span class="chip v-{c}" data-cat="{c}" title="{_e(_category_title(c))}">'
            f"{c} {verdicts[c]}</span>"
            for c in CATEGORIES
            if verdicts[c] or c in ("supported", "object", "relation", "unjudged")
        )
        cells = [
            f'<td class="run-col"><span class="swatch" style="background:{run.color}"></span>'
            f'<a href="#/samples?run={_e(quote(run.name, safe=""))}">{_e(run.label)}</a>'
            + (
                f'<div class="dir" title="{_e(run.directory)}">{_e(run.directory.name)}</div></td>'
                if run.directory.name != run.label
                else "</td>"
            ),
            f"<td>{_e(run.benchmark)}</td>",
            _component_cell(run.extractor),
            _component_cell(run.judge),
            f'<td class="num" data-key="samples">{len(run.records)}</td>',
        ]
        cells += [
            f'<td class="num" data-key="{_e(k)}">{_fmt(values.get(k), scales[k])}</td>' for k in metric_keys
        ]
        cells.append(f'<td class="claims-col">{chips}</td>')
        shown = [k for k in count_keys if k in counts]
        count_items = "".join(
            f'<div class="count" data-key="count:{_e(k)}">{_e(k)} <b>{_e(counts[k])}</b></div>' for k in shown
        )
        # Counts are many and secondary: folded, so that each run stays one line tall.
        cells.append(
            f'<td class="counts-col"><details><summary>{len(shown)} counts</summary>{count_items}</details></td>'
            if shown
            else '<td class="counts-col"></td>'
        )
        rows.append(f'<tr data-run="{index}">{"".join(cells)}</tr>')
    table = (
        '<div class="table-wrap"><table id="summary-table" class="summary">'
        f"<thead><tr>{head_html}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return table + _groups_html(runs) + _notes_html(runs)


def _groups_html(runs: Sequence[_Run]) -> str:
    parts = []
    for run in runs:
        groups = run.metrics.get("groups") or {}
        if not isinstance(groups, dict) or not groups:
            continue
        keys: list[str] = []
        for values in groups.values():
            for key in values or {}:
                if key not in keys:
                    keys.append(str(key))
        head = "<th>group</th>" + "".join(
            f'<th class="num">{_e(_pretty(k))}</th>' for k in keys
        )
        body = "".join(
            f"<tr><td>{_e(group)}</td>"
            + "".join(f'<td class="num">{_fmt(_as_float((values or {}).get(k)))}</td>' for k in keys)
            + "</tr>"
            for group, values in groups.items()
        )
        parts.append(
            f'<details class="groups"><summary>Per-group metrics — {_e(run.label)}</summary>'
            f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>'
        )
    return "".join(parts)


def _notes_html(runs: Sequence[_Run]) -> str:
    items = [f"<li><b>{_e(run.label)}</b>: {_e(note)}</li>" for run in runs for note in run.notes]
    return f'<ul class="notes">{"".join(items)}</ul>' if items else ""


def _category_title(category: str) -> str:
    return {
        "supported": "supported",
        "object": "object hallucination",
        "relation": "relation hallucination",
        "attribute": "attribute hallucination",
        "hallucinated": "hallucination (type not given)",
        "unjudged": "unjudged",
    }[category]


def _nice_max(value: float) -> float:
    """A round upper bound for an axis (10, 20, 25, 50, 100, ...)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def _pretty(key: str) -> str:
    """A metric key as a column or axis title: the papers' names where they exist, else plain words."""
    if key in _PRETTY_METRICS:
        return _PRETTY_METRICS[key]
    for prefix, word in (("injected_", "Injected"), ("judge_", "Judge")):
        if key.startswith(prefix):
            return f"{word} {_pretty(key.removeprefix(prefix))}"
    return key.replace("_", " ")


def _component_cell(text: str) -> str:
    """A table cell for "name (model identity)": the name, with the long identity small beneath it."""
    name, sep, detail = text.partition(" (")
    if not sep or not detail.endswith(")"):
        return f'<td class="component">{_e(text)}</td>'
    return (
        f'<td class="component" title="{_e(text)}">{_e(name)}'
        f'<div class="detail">{_e(detail[:-1])}</div></td>'
    )


def _rate_keys(runs: Sequence[_Run]) -> list[str]:
    """Hallucination rates reported by some run: Tri-HE's six first, in the paper's order."""
    preferred = [
        *TRI_HE_RATES,
        "attribute_hallu_q",
        "attribute_hallu_i",
        "hallu_q_with_empty",
        "hallu_i_with_empty",
    ]
    reported = [
        k
        for k in _metric_keys(runs)
        if ("hallu" in k.lower() or "rate" in k.lower())
        and not k.startswith("injected_")  # simulators' known truth, shown in the table, not a measured rate
        and any(r.metric_values().get(k) is not None for r in runs)
    ]
    return [k for k in preferred if k in reported] + [k for k in reported if k not in preferred]


def _radar_plan(runs: Sequence[_Run]) -> tuple[list[str], list[_Run]]:
    """Axes and runs of the radar: the rates every rate-reporting run has (a radar needs three).

    A missing rate is never drawn as 0 (0 would read as "no hallucination"): with the ``similarity``
    judge the typed rates are null, so those axes are left out rather than shown empty.
    """
    keys = _rate_keys(runs)
    reporting = [r for r in runs if any(r.metric_values().get(k) is not None for k in keys)]
    common = [k for k in keys if all(r.metric_values().get(k) is not None for r in reporting)]
    if len(common) >= 3:
        return common, reporting
    if len(keys) >= 3:
        complete = [r for r in reporting if all(r.metric_values().get(k) is not None for k in keys)]
        if complete:
            return keys, complete
    return keys, []


def _bars_svg(runs: Sequence[_Run], keys: Sequence[str]) -> str:
    """Grouped bars, for rates too few (or too patchy) for a radar."""
    reporting = [r for r in runs if any(r.metric_values().get(k) is not None for k in keys)]
    if not keys or not reporting:
        return ""
    top = _nice_max(max((r.metric_values().get(k) or 0.0) for r in reporting for k in keys))
    left, width, bar, gap = 150, 460, 12, 14
    height = 30 + len(keys) * (len(reporting) * bar + gap)
    parts = [
        f'<svg id="rates" class="plot" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        'aria-label="Hallucination rates per model (lower is better)" xmlns="http://www.w3.org/2000/svg">'
    ]
    y = 10.0
    for key in keys:
        parts.append(
            f'<text x="{left - 8}" y="{y + bar:.1f}" text-anchor="end" class="axis-label">'
            f"{_e(_pretty(key))}</text>"
        )
        for run in reporting:
            value = run.metric_values().get(key)
            length = (width - left - 50) * (value or 0.0) / top
            parts.append(
                f'<g class="series" data-run="{_e(run.label)}"><title>{_e(run.label)}: {_fmt(value)}</title>'
                f'<rect x="{left}" y="{y:.1f}" width="{length:.1f}" height="{bar - 2}" '
                f'style="fill:{run.color}"/><text x="{left + length + 4:.1f}" y="{y + bar - 3:.1f}" '
                f'class="tick">{_fmt(value)}</text></g>'
            )
            y += bar
        y += gap
    parts.append("</svg>")
    legend = "".join(
        f'<li><span class="swatch" style="background:{r.color}"></span>{_e(r.label)}</li>' for r in reporting
    )
    return (
        '<figure class="figure"><figcaption>Hallucination rates per model (lower is better)</figcaption>'
        f'{"".join(parts)}<ul class="legend">{legend}</ul></figure>'
    )


def _radar_svg(runs: Sequence[_Run]) -> str:
    axes, plotted = _radar_plan(runs)
    if not plotted:
        return _bars_svg(runs, axes)
    top = _nice_max(max(r.metric_values()[k] or 0.0 for r in plotted for k in axes))
    width, height, cx, cy, radius = 560, 400, 280, 200, 150
    n = len(axes)

    def point(i: int, fraction: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / n
        return cx + radius * fraction * math.cos(angle), cy + radius * fraction * math.sin(angle)

    parts = [
        f'<svg id="radar" class="plot" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        f'aria-label="Hallucination rates per model (lower is better)" xmlns="http://www.w3.org/2000/svg">'
    ]
    for ring in (0.25, 0.5, 0.75, 1.0):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, ring) for i in range(n)))
        parts.append(f'<polygon points="{pts}" class="grid"/>')
        lx, ly = point(0, ring)
        parts.append(f'<text x="{lx + 4:.1f}" y="{ly + 4:.1f}" class="tick">{_tick(top * ring)}</text>')
    for i, key in enumerate(axes):
        x, y = point(i, 1.0)
        parts.append(f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" class="axis"/>')
        lx, ly = point(i, 1.13)
        anchor = "middle" if abs(lx - cx) < 10 else ("start" if lx > cx else "end")
        parts.append(
            f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="{anchor}" class="axis-label">'
            f"{_e(_pretty(key))}</text>"
        )
    for run in plotted:
        values = run.metric_values()
        vertices = [point(i, (values[k] or 0.0) / top) for i, k in enumerate(axes)]
        text = ", ".join(f"{_pretty(k)} {_fmt(values[k])}" for k in axes)
        parts.append(
            f'<g class="series" data-run="{_e(run.label)}"><title>{_e(run.label)}: {_e(text)}</title>'
            f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in vertices)}" '
            f'style="fill:{run.color};stroke:{run.color}"/>'
            + "".join(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" style="fill:{run.color}"/>' for x, y in vertices
            )
            + "</g>"
        )
    parts.append("</svg>")
    legend = "".join(
        f'<li><span class="swatch" style="background:{r.color}"></span>{_e(r.label)}</li>' for r in plotted
    )
    missing = [r.label for r in runs if r not in plotted]
    note = f'<p class="muted">No rates to plot for: {_e(", ".join(missing))}</p>' if missing else ""
    return (
        '<figure class="figure"><figcaption>Hallucination rates per model (%, lower is better)</figcaption>'
        f'{"".join(parts)}<ul class="legend">{legend}</ul>{note}</figure>'
    )


def _scatter_svg(runs: Sequence[_Run]) -> str:
    points = [
        (r, r.metric_values()["hscore"], r.metric_values()["tscore"])
        for r in runs
        if r.metric_values().get("hscore") is not None and r.metric_values().get("tscore") is not None
    ]
    if not points:
        return ""
    top = 1.0 if all((h or 0) <= 1 and (t or 0) <= 1 for _, h, t in points) else 100.0
    width, height, left, bottom, pad = 460, 380, 56, 48, 20
    plot_w, plot_h = width - left - pad, height - bottom - pad

    def xy(h: float, t: float) -> tuple[float, float]:
        return left + plot_w * h / top, pad + plot_h * (1 - t / top)

    parts = [
        f'<svg id="scatter" class="plot" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        'aria-label="Helpfulness against truthfulness per model" xmlns="http://www.w3.org/2000/svg">'
    ]
    for step in range(5):
        value = top * step / 4
        x, _ = xy(value, 0)
        _, y = xy(0, value)
        parts.append(f'<line x1="{x:.1f}" y1="{pad}" x2="{x:.1f}" y2="{pad + plot_h}" class="grid"/>')
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" class="grid"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{pad + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{_tick(value)}</text>"
        )
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_tick(value)}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle" class="axis-label">'
        "helpfulness (hScore)</text>"
        f'<text transform="translate(14 {pad + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        'class="axis-label">truthfulness (tScore)</text>'
    )
    for run, h, t in points:
        x, y = xy(h or 0.0, t or 0.0)
        parts.append(
            f'<g class="series" data-run="{_e(run.label)}"><title>{_e(run.label)}: hScore {_fmt(h)}, '
            f'tScore {_fmt(t)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="6" style="fill:{run.color}"/>'
            f'<text x="{x + 9:.1f}" y="{y + 4:.1f}" class="point-label">{_e(run.label)}</text></g>'
        )
    parts.append("</svg>")
    return (
        '<figure class="figure"><figcaption>Helpfulness vs truthfulness (higher is better)</figcaption>'
        f"{''.join(parts)}</figure>"
    )


# -- assembling the file --------------------------------------------------------------------------------


def _asset(name: str) -> str:
    return resources.files("halluscope.report").joinpath("assets", name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element whatever strings it holds."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Replaces ``<!--@NAME@-->`` markers in one pass, so inserted content is never scanned again."""
    return re.sub(r"<!--@([A-Z_]+)@-->", lambda m: values[m.group(1)], template)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("halluscope")
    except Exception:  # not installed as a distribution (a source checkout on sys.path)
        return "dev"


def write_html_report(
    run_dirs: list[Path],
    out_path: Path,
    *,
    title: str | None = None,
    thumbnail_px: int = _DEFAULT_THUMBNAIL_PX,
    image_budget_bytes: int = _DEFAULT_IMAGE_BUDGET,
    quality_html: str | None = None,
) -> Path:
    """Writes one self-contained HTML file reporting the given run directories; returns its path.

    ``thumbnail_px`` is the longest side of the embedded image thumbnails; once the embedded images reach
    ``image_budget_bytes`` (base64 characters), further samples show no image, so a huge run cannot
    produce a file too large to open. Raises ``ReportError`` naming a directory that is not a run.
    """
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = [_load_run(Path(d)) for d in run_dirs]
    _label_runs(runs)
    thumbnails = _Thumbnails(thumbnail_px, image_budget_bytes)
    scenes: dict[str, dict[str, Any]] = {}
    samples: list[dict[str, Any]] = []
    for index, run in enumerate(runs):
        view = _open_benchmark(run) if run.records else _BenchmarkView()
        if view.note:
            run.notes.append(view.note)
        scene_cache: dict[str, str | None] = {}
        for record in run.records:
            sample = view.samples.get(str(record.get("id")))
            image_path = _find_image(record, sample, run)
            image_key = thumbnails.key_for(image_path) if image_path else None
            scene_key = None
            if sample is not None and view.scene_of is not None:
                graph_id = f"{run.benchmark}:{sample.image_id or sample.id}"
                if graph_id not in scene_cache:
                    scene_cache[graph_id] = _scene_key(view.scene_of, sample, graph_id, scenes)
                scene_key = scene_cache[graph_id]
            samples.append(_sample_payload(index, record, sample, image_key, scene_key))
    if thumbnails.skipped_for_budget:
        runs[0].notes.append(
            f"{thumbnails.skipped_for_budget} images not embedded: the report's image budget "
            f"({image_budget_bytes:,} bytes) was reached"
        )
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    payload = {
        "runs": [
            {
                "label": r.label,
                "name": r.name,
                "dir": r.directory.name,
                "model": r.model,
                "benchmark": r.benchmark,
                "judge": r.judge,
                "extractor": r.extractor,
                "color": r.color,
            }
            for r in runs
        ],
        "samples": samples,
        "images": thumbnails.data,
        "scenes": scenes,
        "categories": list(CATEGORIES),
    }
    report_title = title or (
        f"halluscope report — {runs[0].label}" if len(runs) == 1 else f"halluscope report — {len(runs)} runs"
    )
    plots = _radar_svg(runs) + _scatter_svg(runs)
    document = _fill(
        _asset("report.html"),
        {
            "TITLE": _e(report_title),
            "SUBTITLE": _e(
                f"{len(runs)} run(s), {len(samples):,} samples · generated {generated} "
                f"· halluscope {_version()}"
            ),
            "CSS": _asset("report.css"),
            # quality_html: the HQM section (halluscope.quality.render.html_section), when given.
            "SUMMARY": _summary_html(runs) + (quality_html or ""),
            "PLOTS": plots or '<p class="muted">No rates to plot.</p>',
            "DATA": _script_json(payload),
            "JS": _asset("report.js"),
        },
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(document, encoding="utf-8")
    return out_path


def _scene_key(
    scene_of: Callable[[Any], Any], sample: Any, graph_id: str, scenes: dict[str, dict[str, Any]]
) -> str | None:
    try:
        graph = _scene_dict(scene_of(sample))
    except Exception:  # a broken graph for one image must not stop the report
        return None
    if graph is None:
        return None
    scenes[graph_id] = graph
    return graph_id
