"""What a suite is: which benchmarks, with which data and options, for which models.

Why a record of its own: a suite comes from three places (``-b`` and ``--model`` flags with ``--data-root``,
a TOML suite file, or a folder of answers other tools wrote), and each becomes the same list of
:class:`SuiteRunSpec` — one benchmark for one model, with the run folder it writes — that
:mod:`halluscope.suite.execute` hands, one by one, to the single-run orchestrator. So the suite adds no run
logic of its own: every run folder is an ordinary ``halluscope run`` folder, resumable on its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DATA_FOLDERS",
    "IMAGE_FOLDERS",
    "BenchmarkEntry",
    "ModelEntry",
    "SuiteError",
    "SuiteRunSpec",
    "find_data",
    "load_suite_file",
    "model_entries",
]


class SuiteError(ValueError):
    """The suite itself cannot be set up (a bad suite file, two models with one label); said in one line."""


#: Where each benchmark's data is under ``--data-root``: the folder names the official releases use (and
#: the docs' data layout), then the files VLMEvalKit keeps in ``~/LMUData`` and the parquet datasets lmms-eval
#: reads, as a folder of that name or as the Hugging Face cache keeps them (so ``--data-root`` can be the
#: official data, ``~/LMUData`` or ``~/.cache/huggingface/hub``); the first that exists wins.
DATA_FOLDERS: dict[str, tuple[str, ...]] = {
    "tri-he": ("tri-he", "Tri-HE"),
    "pope": ("pope", "POPE/output", "POPE.tsv", "lmms-lab/POPE", "datasets--lmms-lab--POPE", "POPE"),
    "hallusionbench": (
        "hallusionbench", "HallusionBench.tsv", "lmms-lab/HallusionBench", "datasets--lmms-lab--HallusionBench",
        "HallusionBench",
    ),
    "mmhal": (
        "mmhal-bench", "mmhal", "MMHal-Bench", "lmms-lab/MMHal-Bench", "datasets--lmms-lab--MMHal-Bench",
    ),
    "hqh": ("hqh", "HQH"),
    "chair": ("chair-coco", "chair"),
    "amber": ("amber", "AMBER/data", "AMBER", "AMBER.tsv", "amber_g", "datasets--Kyunnilee--amber_g"),
    "reefknot": ("reefknot", "Reefknot/Dataset", "Reefknot"),
    "prove": ("prove", "PROVE"),
}  # fmt: skip

#: Photo folders under ``--data-root`` for the benchmarks whose data does not bring its photos (Tri-HE and
#: MMHal-Bench find ``images/`` beside their files themselves). Given as ``images=`` when one exists.
IMAGE_FOLDERS: dict[str, tuple[str, ...]] = {
    "pope": ("pope/images", "coco/val2014", "val2014"),
    "chair": ("chair-coco/images", "coco/val2014", "val2014"),
    "amber": ("amber/images", "AMBER/image"),
    "hallusionbench": ("hallusionbench/images", "hallusion_bench"),
    "hqh": ("hqh/images", "VG_100K"),
    "reefknot": ("reefknot/images", "VG_100K"),
}


class BenchmarkEntry(BaseModel):
    """One benchmark of the suite: its data, photos, options, stages and (optionally) its own limit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    data: Path | None = None
    images: Path | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    extractor: str | None = None
    extractor_options: dict[str, Any] = Field(default_factory=dict)
    judge: str | None = None
    judge_options: dict[str, Any] = Field(default_factory=dict)
    limit: int | None = None
    #: Why this benchmark cannot run (its data is not under the data root): reported as its failure.
    missing: str | None = None


class ModelEntry(BaseModel):
    """One model of the suite: the label its run folders are named by, its spec and options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    spec: str
    options: dict[str, Any] = Field(default_factory=dict)


class SuiteRunSpec(BaseModel):
    """One benchmark for one model: what the single run is given, and where it writes."""

    model_config = ConfigDict(frozen=True)

    benchmark: BenchmarkEntry
    model: str
    #: The model spec to ask, or None when the answers come from a file (``responses``).
    model_spec: str | None = None
    model_options: dict[str, Any] = Field(default_factory=dict)
    responses: Path | None = None
    #: The tool that wrote ``responses`` (lmms-eval, vlmevalkit, llava), for the report.
    tool: str | None = None
    out: Path


_LABEL = re.compile(r"^([A-Za-z0-9_.-]+)=(.+)$")


def model_label(spec: str) -> str:
    """A folder name for a model spec: ``blind/openai/gpt-4o?base_url=...`` → ``blind-openai-gpt-4o``."""
    name = spec.split("?", 1)[0].strip("/")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "model"


def model_entries(specs: Sequence[str]) -> list[ModelEntry]:
    """``--model SPEC`` or ``--model LABEL=SPEC`` values as entries; two models with one label refused."""
    entries = []
    for given in specs:
        match = _LABEL.match(given)
        label, spec = (match.group(1), match.group(2)) if match else (model_label(given), given)
        entries.append(ModelEntry(label=label, spec=spec))
    check_labels(entries)
    return entries


def check_labels(entries: Sequence[ModelEntry]) -> None:
    seen: set[str] = set()
    for entry in entries:
        if entry.label in seen:
            raise SuiteError(
                f"two models would write to the same folder {entry.label!r}; name them with --model LABEL=SPEC "
                "(in a suite file: [models.LABEL])"
            )
        seen.add(entry.label)


def find_data(name: str, root: Path) -> BenchmarkEntry:
    """The entry of benchmark ``name`` with its data and photos found under ``root`` (or why not)."""
    folders = DATA_FOLDERS.get(name, (name,))
    data = next((root / f for f in folders if (root / f).exists()), None)
    if data is None:
        looked = ", ".join(str(root / f) for f in folders)
        return BenchmarkEntry(name=name, missing=f"no {name} data under {root} (looked for {looked})")
    if _brings_photos(data):  # the photos are in the file: a photo folder under the root would override them
        return BenchmarkEntry(name=name, data=data)
    images = next((root / f for f in IMAGE_FOLDERS.get(name, ()) if (root / f).is_dir()), None)
    return BenchmarkEntry(name=name, data=data, images=images)


def _brings_photos(data: Path) -> bool:
    """A VLMEvalKit TSV or a parquet dataset (photos inside), not a folder in the official layout."""
    from halluscope.benchmarks.foreign_data import foreign_layout

    return foreign_layout(data) is not None


def load_suite_file(
    path: Path, data_root: Path | None = None
) -> tuple[list[BenchmarkEntry], list[ModelEntry], dict[str, Any]]:
    """A TOML suite file: ``[benchmarks.NAME]`` tables (``data``, ``images``, ``options``, ``judge``, ...) and
    ``[models.LABEL]`` tables (``spec``, ``options``); top-level ``limit``, ``baseline``, ``data_root``.
    Relative paths are read from the file's folder; a benchmark without ``data`` is looked up under the data
    root. Returns the benchmarks, the models and the top-level settings."""
    import tomllib

    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise SuiteError(f"suite file {path}: {error}") from error
    base = path.parent
    settings = {k: v for k, v in document.items() if k not in ("benchmarks", "models")}
    root = data_root or (base / settings["data_root"] if "data_root" in settings else None)
    benchmarks = [
        _benchmark_entry(name, table, base, root)
        for name, table in _tables(document, "benchmarks", path).items()
    ]
    models = [_model_entry(label, table, path) for label, table in _tables(document, "models", path).items()]
    check_labels(models)
    return benchmarks, models, settings


def _tables(document: Mapping[str, Any], key: str, path: Path) -> dict[str, dict[str, Any]]:
    tables = document.get(key, {})
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise SuiteError(f"suite file {path}: [{key}.NAME] must be tables")
    return tables


def _benchmark_entry(name: str, table: dict[str, Any], base: Path, root: Path | None) -> BenchmarkEntry:
    from pydantic import ValidationError

    found = find_data(name, root) if root is not None and "data" not in table else BenchmarkEntry(name=name)
    fields = {**found.model_dump(exclude_none=True), **table, "name": name}
    for key in ("data", "images"):
        if key in table:
            fields[key] = base / str(table[key])
    if "data" in table:
        fields.pop("missing", None)
    try:
        return BenchmarkEntry(**fields)
    except ValidationError as error:
        raise SuiteError(f"suite file, [benchmarks.{name}]: {_first_problem(error)}") from error


def _model_entry(label: str, table: dict[str, Any], path: Path) -> ModelEntry:
    from pydantic import ValidationError

    try:
        return ModelEntry(label=label, **table)
    except ValidationError as error:
        raise SuiteError(f"suite file {path}, [models.{label}]: {_first_problem(error)}") from error


def _first_problem(error: Any) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
