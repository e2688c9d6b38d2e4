"""The per-sample data the page's script renders: image thumbnails, scene graphs and one document a sample.

Why the benchmark is reopened: run directories keep answers and verdicts, not the images or scene graphs;
the run's spec says how to recreate its benchmark, which (where its data is on this machine) gives them
back. Every failure on the way only adds a note, so a run copied to another machine still renders.

Why texts are cut: a page carries every sample, so one model that rambles (68 KB answers) would make a page
of hundreds of megabytes that no browser opens. Each text the page shows (a prompt, an answer, a reference,
an explanation, a metadata value) is cut at :data:`TEXT_LIMIT` characters, the cut said where it is made;
the whole text stays in the run's ``samples.jsonl``.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from halluscope.report.claims import claim_category, locate_claim
from halluscope.report.rundir import ReportRun, as_float, component_name
from halluscope.report.views import sample_view


def collect_samples(
    runs: Sequence[ReportRun], thumbnails: Thumbnails
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every answered sample of every run as the script's document, and the scene graphs they point to.

    Scene graphs are keyed ``<benchmark>:<image id>`` and stored once, however many questions share an
    image; what a run's benchmark cannot give here becomes a note on that run.
    """
    scenes: dict[str, dict[str, Any]] = {}
    samples: list[dict[str, Any]] = []
    for index, run in enumerate(runs):
        view = _open_benchmark(run) if run.records else _BenchmarkView()
        if view.note:
            run.notes.append(view.note)
        scene_cache: dict[str, str | None] = {}
        roots = _image_roots(run)
        for record in run.records:
            sample = view.samples.get(str(record.get("id")))
            image_path = _find_image(record, sample, run, roots)
            image_key = thumbnails.key_for(image_path) if image_path else None
            scene_key = None
            if sample is not None and view.scene_of is not None:
                graph_id = f"{run.benchmark}:{sample.image_id or sample.id}"
                if graph_id not in scene_cache:
                    scene_cache[graph_id] = _scene_key(view.scene_of, sample, graph_id, scenes)
                scene_key = scene_cache[graph_id]
            samples.append(_sample_payload(index, record, sample, image_key, scene_key))
    return samples, scenes


class Thumbnails:
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


def _open_benchmark(run: ReportRun) -> _BenchmarkView:
    """Recreates the run's benchmark from its spec, to find scene graphs, images and reference answers.

    A run directory copied to another machine must still render, so every failure here only adds a note.
    """
    spec = run.spec
    name = component_name(spec.get("benchmark"))
    raw_benchmark = spec.get("benchmark")
    nested: dict[str, Any] = raw_benchmark if isinstance(raw_benchmark, dict) else {}
    name = nested.get("benchmark") or nested.get("name") if nested else name
    if not name:
        return _BenchmarkView(note="the spec names no benchmark: no scene graphs")
    # The runner stores ``benchmark.spec()``: the name plus the options that recreate it (data, images, ...).
    skip = ("benchmark", "name", "only_answered", "limit", "selected_samples")  # the selection is in the records
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


def _image_roots(run: ReportRun) -> list[Path]:
    """The only folders the report takes images from (resolved): the run's images folder, the benchmark
    data's folder and its ``images/``, and the run directory. A path a record or a data file names elsewhere
    (``../x``, an absolute path, a link leading out) is never embedded: the report is a file people pass
    around, and an item's image name comes from data made by others."""
    nested = run.spec.get("benchmark") if isinstance(run.spec.get("benchmark"), dict) else {}
    folders = _image_dirs(run.spec)
    for data in (nested.get("data") if isinstance(nested, dict) else None, run.spec.get("data")):
        if data:
            path = Path(str(data))
            folders.append(path.parent if path.suffix else path)
    folders.append(run.directory)
    return [r for r in (_resolved(f) for f in folders) if r is not None]


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a link loop: nothing to take from there
        return None


def _find_image(record: Mapping[str, Any], sample: Any, run: ReportRun, roots: Sequence[Path]) -> Path | None:
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
            resolved = _resolved(option) if option.is_file() else None
            if resolved is not None and any(resolved.is_relative_to(root) for root in roots):
                return resolved
    return None


#: The most characters of one text the page carries; the rest is in samples.jsonl.
TEXT_LIMIT = 4_000


def shown_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` as the page shows it: whole when short, else its first ``limit`` characters and a note."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters in samples.jsonl)"


def _shown_or_none(value: Any) -> str | None:
    return None if value is None else shown_text(str(value))


def _shown_value(value: Any) -> Any:
    """A metadata value: text cut as any text; a long list or mapping as its JSON text, cut."""
    if isinstance(value, str):
        return shown_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    as_json = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(as_json) <= TEXT_LIMIT else shown_text(as_json)


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
        # Looked for in the part shown only: the rest is not on the page, and searching 68 KB answers for
        # every claim took most of the report's time.
        span = locate_claim(response_text[:TEXT_LIMIT], s, r, o) if response_text else None
        past_cut = span is None and len(response_text) > TEXT_LIMIT
        claims.append(
            {
                "s": shown_text(s),
                "r": shown_text(r),
                "o": shown_text(o),
                "v": str(claim.get("verdict") or "unjudged"),
                "e": claim.get("error"),
                "c": claim_category(claim),
                "sc": as_float(claim.get("score")),
                "ev": [shown_text(str(e)) for e in claim.get("evidence") or []],
                "x": _shown_or_none(claim.get("explanation")),
                "sp": span,
                "cut": past_cut,
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
    view = sample_view(record, shown_text)
    if not isinstance(correct, bool) and view is not None and isinstance(view.get("ok"), bool):
        correct = view["ok"]  # HallusionBench's correctness (0/1)
    return {
        "r": run_index,
        "id": str(record.get("id")),
        "q": shown_text(str(record.get("prompt") or getattr(sample, "prompt", "") or "")),
        "a": shown_text(response) if isinstance(response, str) else None,
        "ref": _shown_or_none(reference),
        "pred": _shown_or_none(prediction),
        "ok": correct if isinstance(correct, bool) else None,
        "f": _shown_or_none(record.get("failure")),
        "src": record.get("claims_source"),
        "img": image_key,
        "sg": scene_key,
        "iid": record.get("image_id") or getattr(sample, "image_id", None),
        "c": claims,
        "v": view,
        "meta": {key: _shown_value(value) for key, value in {**metadata, **extra}.items()},
    }


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
