"""Benchmark data in other tools' layouts: VLMEvalKit's TSV files and the lmms-lab parquet datasets.

VLMEvalKit (https://github.com/open-compass/VLMEvalKit) keeps each benchmark as one TSV in ``~/LMUData``
(``POPE.tsv``, ``HallusionBench.tsv``, ...): one row per question, the photo inline as base64 in ``image``
(or, to save space, the ``index`` of an earlier row whose photo it shares), read by its dataset classes
(``vlmeval/dataset/image_base.py``, ``image_yorn.py``). lmms-eval
(https://github.com/EvolvingLMMs-Lab/lmms-eval) reads the lmms-lab datasets from the Hugging Face hub
(``lmms-lab/POPE``, ``lmms-lab/HallusionBench``, ``lmms-lab/MMHal-Bench``): parquet files with the photo in
an ``image`` column (the ``datasets`` Image feature: ``{"bytes", "path"}``), found in the Hugging Face cache
as ``datasets--lmms-lab--POPE/snapshots/<revision>/data/*.parquet``.

Given such a file or folder as ``--data``, :func:`materialise` writes it once into the benchmark's official
layout plus an ``images/`` folder of the decoded photos, under halluscope's cache
(``<cache>/foreign-data/<benchmark>-<hash of the source files>/``, written in a temporary folder and renamed,
so a second run reuses it and an interrupted one leaves nothing half-written). The photos are the bytes the
file holds (a base64 JPEG decodes to the bytes of the JPEG it came from), so a model is sent exactly what it
would be sent from the official layout. The benchmark then loads that folder as usual, with ``images=`` the
decoded photos: the same questions give the same samples (ids, prompts, labels) as the official files.

What each layout gives (the columns the two tools' loaders read):

- POPE, VLMEvalKit ``POPE.tsv``: ``index``, ``image``, ``question`` (POPE's question followed by
  " Please answer yes or no.", which is taken off: ``--bench-opt prompt=yesno`` puts it back), ``answer``
  (``Yes``/``No``), ``category`` (the setting, or several when VLMEvalKit merged the same question about
  the same photo across settings: ``adversarial,popular`` gives one item per setting). The file carries no
  POPE question id: ids are ``coco-<setting>-vlmevalkit<index>`` (as for a VLMEvalKit answer sheet), or
  POPE's own when the file has a ``question_id`` column; a ``source`` column (``coco``, ``aokvqa``, ``gqa``)
  is read when present, else the set is ``coco``.
- POPE, ``lmms-lab/POPE`` parquet: ``question_id``, ``question``, ``answer``, ``image_source`` (the photo's
  name, e.g. ``COCO_val2014_000000310196``), ``image``, ``category`` (the setting; the ``Full`` config's
  files are named by their split instead). Ids are POPE's own, ``<source>-<setting>-<question_id>``; the
  source is a ``source`` column when present, ``gqa`` for a Visual Genome number, else ``coco``.
- MMHal-Bench, ``lmms-lab/MMHal-Bench`` parquet: the template's fields (``question_type``,
  ``question_topic``, ``image_id``, ``image_src``, ``image_content``, ``question``, ``gt_answer``,
  ``model_answer``) and ``image``; ids are positions, as in the template.
- HallusionBench, VLMEvalKit ``HallusionBench.tsv``: ``index`` (the official ids packed as
  ``<category>_<subcategory>_<visual_input>_<set_id>_<figure_id>_<question_id>``), ``image``,
  ``image_path`` (the figure's official path, ``VD/illusion/0_0.png``), ``question``, ``answer``
  (``Yes``/``No``), ``gt_answer_details``; ``lmms-lab/HallusionBench`` parquet (split ``image``): the
  official fields and ``image``.
- AMBER, VLMEvalKit ``AMBER.tsv`` (its yes/no part only, as VLMEvalKit asks it): ``index`` (taken as
  AMBER's ``id``: the file has no other), ``image``, ``image_path`` (``AMBER_<n>.jpg``), ``question`` (the
  query, to which VLMEvalKit's prompt adds "Please answer yes or no."), ``answer`` (``Yes``/``No``,
  compared in lower case), ``category`` (AMBER's type, ``discriminative-attribute-state``, ...); lmms-eval's
  ``amber_g`` task (dataset ``Kyunnilee/amber_g``, split ``train``): ``question_id`` (AMBER's ``id``),
  ``task_type`` (``generative``), ``truth`` and ``hallu`` (the object lists), ``image``, and ``text`` for a
  yes/no item. Descriptions are scored with AMBER's ``relation.json`` and ``safe_words.txt``, which neither
  file carries: they are read from the source's folder, its ``metadata/`` folder (lmms-eval's
  ``AMBER_BASE_DIR/metadata``) or the folder above it. A source without descriptions gets empty ones.

Hostile input: a file that is not one of these layouts, a missing column, a bad row or a photo that does not
decode is one :class:`ForeignDataError` line naming the file and the row; a photo name from the data that
would leave the images folder is refused; sizes are capped (:data:`MAX_SOURCE_BYTES`,
:data:`MAX_IMAGE_BYTES`, :data:`MAX_ROWS`). pandas and pyarrow are imported only here, when such a file is
given (``pip install "halluscope[import]"``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import shutil
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from halluscope.benchmarks.data_files import BenchmarkDataError
from halluscope.cache import default_cache_dir
from halluscope.jsonio import write_json_atomic, write_text_atomic

__all__ = [
    "FOREIGN_BENCHMARKS",
    "ForeignDataError",
    "Materialised",
    "foreign_layout",
    "materialise",
    "resolve_foreign_options",
]

#: The largest source (all its files together) and photo read, and the most rows.
MAX_SOURCE_BYTES = 32 * 1024**3
MAX_IMAGE_BYTES = 64 * 1024**2
MAX_ROWS = 2_000_000
#: The benchmarks whose data can come from another tool's layout, and the layouts each takes.
FOREIGN_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "pope": ("tsv", "parquet"),
    "mmhal": ("parquet",),
    "hallusionbench": ("tsv", "parquet"),
    "amber": ("tsv", "parquet"),
}
_INSTALL = 'pip install "halluscope[import]"'
_LAYOUT_VERSION = 1
_POPE_SUFFIX = " Please answer yes or no."
_SETTINGS = ("random", "popular", "adversarial")
_SOURCES = ("coco", "aokvqa", "gqa")
_SAFE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}$")
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp")


class ForeignDataError(BenchmarkDataError):
    """A TSV or parquet file that cannot be read as the benchmark's data; the message names file and row."""


@dataclass(frozen=True)
class Materialised:
    """A foreign source written in the benchmark's official layout."""

    data: Path
    images: Path
    source: Path
    layout: str
    questions: int


# -- recognising a source ------------------------------------------------------------------------------------


def foreign_layout(path: Path) -> str | None:
    """``"tsv"`` for a VLMEvalKit TSV file, ``"parquet"`` for a parquet file or a folder holding some (an
    lmms-lab dataset folder, or its Hugging Face cache folder), None for anything else."""
    path = Path(path)
    if path.is_file():
        suffix = path.suffix.lower()
        return "tsv" if suffix == ".tsv" else "parquet" if suffix == ".parquet" else None
    if path.is_dir():
        return "parquet" if _parquet_files(path, probe=True) else None
    return None


def _snapshot(path: Path) -> Path:
    """A Hugging Face cache folder (``datasets--lmms-lab--POPE``) → the snapshot ``refs/main`` names (or the
    only one); any other folder as it is."""
    snapshots = path / "snapshots"
    if not snapshots.is_dir():
        return path
    ref = path / "refs" / "main"
    if ref.is_file():
        revision = ref.read_text(encoding="utf-8", errors="replace").strip()
        if _SAFE_PART.match(revision) and (snapshots / revision).is_dir():
            return snapshots / revision
    found = sorted(p for p in snapshots.iterdir() if p.is_dir())
    if len(found) == 1:
        return found[0]
    if not found:
        raise ForeignDataError(f"{path}: a Hugging Face cache folder with no snapshot")
    raise ForeignDataError(
        f"{path}: {len(found)} snapshots and no refs/main; give one snapshot folder as --data "
        f"({', '.join(p.name for p in found[:3])})"
    )


def _parquet_files(path: Path, *, probe: bool = False) -> list[Path]:
    """The parquet files of a dataset folder: those under its ``data/`` folder (the default config) when it
    has one, else every one under it, in name order."""
    folder = _snapshot(path) if not probe else (path / "snapshots" if (path / "snapshots").is_dir() else path)
    if not probe and (folder / "data").is_dir() and any((folder / "data").rglob("*.parquet")):
        folder = folder / "data"
    files = sorted(p for p in folder.rglob("*.parquet") if p.is_file())
    return files[:1] if probe else files


def _source_files(path: Path, layout: str) -> list[Path]:
    files = [path] if path.is_file() else _parquet_files(path)
    if not files:
        raise ForeignDataError(f"{path}: no parquet file")
    total = sum(f.stat().st_size for f in files)
    if total > MAX_SOURCE_BYTES:
        raise ForeignDataError(f"{path}: {total} bytes, more than the {MAX_SOURCE_BYTES} read")
    return files


def _digest(files: list[Path], benchmark: str) -> str:
    """The content address of a source: its files' bytes and names relative to each other."""
    h = hashlib.sha256(f"{benchmark}\0{_LAYOUT_VERSION}\0".encode())
    for file in files:
        h.update(file.name.encode("utf-8", "replace") + b"\0")
        with file.open("rb") as handle:
            while block := handle.read(1 << 20):
                h.update(block)
    return h.hexdigest()


# -- the photos ----------------------------------------------------------------------------------------------


def _image_kind(data: bytes) -> str | None:
    if data[:3] == b"\xff\xd8\xff":
        return ".jpg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return ".png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return ".gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    if data[:2] == b"BM":
        return ".bmp"
    return None


def _safe_name(name: str, where: str) -> str:
    """A relative path from the data, kept inside the images folder: plain parts, no ``..``, no root."""
    parts = [p for p in name.replace("\\", "/").removeprefix("./").split("/") if p not in ("", ".")]
    if not parts or len(parts) > 6 or any(not _SAFE_PART.match(p) for p in parts) or name.startswith("/"):
        raise ForeignDataError(
            f"{where}: image name {name[:120]!r} is not a plain relative file name; refused"
        )
    return "/".join(parts)


class _Photos:
    """Decoded photos written under ``images/``, each once; a name from the data never leaves the folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.digests: dict[str, str] = {}  # name → sha256 of the bytes written

    def add(self, data: bytes, where: str, name: str | None = None) -> str:
        if len(data) > MAX_IMAGE_BYTES:
            raise ForeignDataError(
                f"{where}: image of {len(data)} bytes, more than the {MAX_IMAGE_BYTES} read"
            )
        kind = _image_kind(data)
        if kind is None:
            raise ForeignDataError(f"{where}: the image is not a JPEG, PNG, GIF, WebP or BMP file")
        digest = hashlib.sha256(data).hexdigest()
        if name is None:
            name = digest[:24] + kind
        else:
            name = _safe_name(name, where)
            if not name.lower().endswith(_IMAGE_SUFFIXES):
                name += kind
        known = self.digests.get(name)
        if known is not None:
            if known != digest:
                raise ForeignDataError(f"{where}: a second, different image named {name}")
            return name
        target = self.folder.joinpath(*name.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.digests[name] = digest
        return name


def _decode_base64(value: str, where: str) -> bytes:
    text = value.strip()
    if len(text) > MAX_IMAGE_BYTES * 4 // 3 + 8:
        raise ForeignDataError(f"{where}: image of more than {MAX_IMAGE_BYTES} bytes")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ForeignDataError(f"{where}: the image is not valid base64 ({error})") from error


def _parquet_image(value: Any, where: str) -> bytes:
    """The bytes of a ``datasets`` Image value (``{"bytes", "path"}``) or of a plain binary column."""
    if isinstance(value, dict):
        data = value.get("bytes")
        if data is None:
            raise ForeignDataError(
                f"{where}: the image is not inside the file (only a path, {str(value.get('path'))[:80]!r})"
            )
        value = data
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise ForeignDataError(f"{where}: no image in the 'image' column")


# -- reading the two layouts ---------------------------------------------------------------------------------


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as error:
        raise ForeignDataError(f"reading a VLMEvalKit TSV needs pandas: {_INSTALL}") from error
    return pandas


def _tsv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[str, dict[str, str]]]:
    """``(where, row)`` for each row of a VLMEvalKit TSV, every value a string (empty when missing)."""
    pandas = _pandas()
    # a row with more fields than the header is an error, never a silent shift of the columns
    with warnings.catch_warnings():
        warnings.simplefilter("error", pandas.errors.ParserWarning)
        yield from _tsv_chunks(pandas, path, required)


def _tsv_chunks(pandas: Any, path: Path, required: tuple[str, ...]) -> Iterator[tuple[str, dict[str, str]]]:
    try:
        chunks = pandas.read_csv(
            path, sep="\t", dtype=str, keep_default_na=False, chunksize=512, encoding="utf-8", index_col=False
        )
        number = 0
        for chunk_number, chunk in enumerate(chunks):
            if chunk_number == 0:
                missing = [c for c in required if c not in chunk.columns]
                if missing:
                    raise ForeignDataError(
                        f"{path}: no column(s) {', '.join(missing)}; a VLMEvalKit TSV of this benchmark has "
                        f"{', '.join(required)} (found: {', '.join(map(str, chunk.columns))[:200]})"
                    )
            for row in chunk.to_dict("records"):
                number += 1
                if number > MAX_ROWS:
                    raise ForeignDataError(f"{path}: more than {MAX_ROWS} rows")
                yield f"{path.name} row {number}", {str(k): str(v) for k, v in row.items()}
    except ForeignDataError:
        raise
    except (ValueError, OSError, UnicodeDecodeError, pandas.errors.ParserWarning) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ForeignDataError(f"{path}: not a readable TSV: {first}") from error


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ForeignDataError(f"reading an lmms-lab parquet dataset needs pyarrow: {_INSTALL}") from error
    return pq


def _parquet_rows(files: list[Path], required: tuple[str, ...]) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """``(where, file, row)`` for each row of the parquet files, in file and row order."""
    pq = _pyarrow_parquet()
    import pyarrow

    count = 0
    for file in files:
        try:
            handle = pq.ParquetFile(file)
            names = list(handle.schema_arrow.names)
            missing = [c for c in required if c not in names]
            if missing:
                raise ForeignDataError(
                    f"{file}: no column(s) {', '.join(missing)}; the lmms-lab dataset of this benchmark has "
                    f"{', '.join(required)} (found: {', '.join(names)[:200]})"
                )
            number = 0
            for batch in handle.iter_batches(batch_size=64):
                for row in batch.to_pylist():
                    number += 1
                    count += 1
                    if count > MAX_ROWS:
                        raise ForeignDataError(f"{file}: more than {MAX_ROWS} rows")
                    yield f"{file.name} row {number}", file, row
        except ForeignDataError:
            raise
        except (pyarrow.ArrowException, OSError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ForeignDataError(f"{file}: not a readable parquet file: {first}") from error


def _text(row: Mapping[str, Any], column: str, where: str) -> str:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ForeignDataError(f"{where}: empty {column!r}")
    if isinstance(value, float) and value != value:  # NaN
        raise ForeignDataError(f"{where}: empty {column!r}")
    return str(value)


def _yes_no(value: str, where: str) -> str:
    label = value.strip().lower()
    if label not in ("yes", "no"):
        raise ForeignDataError(f"{where}: answer {value[:40]!r} is neither Yes nor No")
    return label


# -- POPE ----------------------------------------------------------------------------------------------------


def _pope_file(source: str, setting: str) -> str:
    from halluscope.benchmarks.pope import pope_file_name

    return pope_file_name(source, setting)


def _pope_source(value: str | None, image: str, where: str) -> str:
    if value:
        source = value.strip().lower()
        if source not in _SOURCES:
            raise ForeignDataError(f"{where}: source {value[:40]!r} is not one of {', '.join(_SOURCES)}")
        return source
    return "gqa" if Path(image).stem.isdigit() else "coco"


def _question_id(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def _pope_tsv(path: Path, out: Path, photos: _Photos) -> int:
    sets: dict[tuple[str, str], list[tuple[int | str, dict[str, Any]]]] = {}
    by_index: dict[str, str] = {}
    pending: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    for where, row in _tsv_rows(path, ("index", "image", "question", "answer", "category")):
        index = _text(row, "index", where).strip()
        if index in seen:
            raise ForeignDataError(f"{where}: a second row with index {index}")
        seen.add(index)
        settings = [s.strip() for s in _text(row, "category", where).split(",") if s.strip()]
        if not settings or any(s not in _SETTINGS for s in settings):
            raise ForeignDataError(f"{where}: category {row['category'][:60]!r} names no POPE setting")
        question = _text(row, "question", where).strip().removesuffix(_POPE_SUFFIX.strip()).strip()
        item: dict[str, Any] = {
            "image": None,
            "text": question,
            "label": _yes_no(_text(row, "answer", where), where),
        }
        image = _text(row, "image", where)
        if len(image.strip()) <= 64:  # VLMEvalKit: the index of the row whose photo this row shares
            pending.append((where, image.strip(), item))
        else:
            by_index[index] = item["image"] = photos.add(_decode_base64(image, where), where)
        qid = row.get("question_id", "").strip()
        # VLMEvalKit's POPE.tsv is POPE's COCO sets; a ``source`` column, when there is one, says otherwise
        source = _pope_source(row.get("source") or "coco", "", where)
        for setting in settings:
            sets.setdefault((source, setting), []).append(
                (_question_id(qid) if qid else f"vlmevalkit{index}", item)
            )
    for where, ref, item in pending:
        if ref not in by_index:
            raise ForeignDataError(
                f"{where}: image {ref!r} is neither base64 nor the index of a row with a photo"
            )
        item["image"] = by_index[ref]
    return _write_pope(out, sets, path)


def _pope_split(file: Path) -> str | None:
    """The setting of an lmms-lab ``Full`` file, from its name or folder (``Full/adversarial-...parquet``)."""
    for part in (file.stem, file.parent.name):
        for setting in _SETTINGS:
            if part == setting or part.startswith(f"{setting}-"):
                return setting
    return None


def _pope_parquet(files: list[Path], out: Path, photos: _Photos) -> int:
    sets: dict[tuple[str, str], list[tuple[int | str, dict[str, Any]]]] = {}
    for where, file, row in _parquet_rows(files, ("question_id", "question", "answer", "image")):
        category = str(row.get("category") or "").strip()
        setting = category if category in _SETTINGS else _pope_split(file)
        if setting is None:
            raise ForeignDataError(f"{where}: category {category[:40]!r} names no POPE setting")
        name = str(row.get("image_source") or "").strip() or None
        image = photos.add(_parquet_image(row.get("image"), where), where, name)
        source = _pope_source(str(row.get("source") or "") or None, image, where)
        item = {
            "image": image,
            "text": _text(row, "question", where),
            "label": _yes_no(_text(row, "answer", where), where),
        }
        sets.setdefault((source, setting), []).append(
            (_question_id(_text(row, "question_id", where).strip()), item)
        )
    return _write_pope(out, sets, files[0])


def _write_pope(
    out: Path, sets: Mapping[tuple[str, str], list[tuple[int | str, dict[str, Any]]]], path: Path
) -> int:
    if not sets:
        raise ForeignDataError(f"{path}: no POPE question")
    total = 0
    for (source, setting), rows in sets.items():
        ids: set[int | str] = set()
        lines = []
        for question_id, item in rows:
            if question_id in ids:
                raise ForeignDataError(f"{path}: question {question_id} twice in POPE's {source}-{setting}")
            ids.add(question_id)
            lines.append(json.dumps({"question_id": question_id, **item}, ensure_ascii=False))
        write_text_atomic(out / _pope_file(source, setting), "".join(line + "\n" for line in lines))
        total += len(rows)
    return total


# -- MMHal-Bench ---------------------------------------------------------------------------------------------

_MMHAL_FIELDS = (
    "question_type", "question_topic", "image_id", "image_src", "image_content", "question", "gt_answer",
    "model_answer",
)  # fmt: skip


def _mmhal_parquet(files: list[Path], out: Path, photos: _Photos) -> int:
    records = []
    for where, _, row in _parquet_rows(files, ("question", "gt_answer", "image")):
        record: dict[str, Any] = {k: row.get(k) for k in _MMHAL_FIELDS if k in row}
        if isinstance(record.get("image_content"), list | tuple):
            record["image_content"] = [str(c) for c in record["image_content"]]
        src = str(record.get("image_src") or "").strip().rstrip("/")
        name = (
            src.rsplit("/", 1)[-1]
            if src
            else (f"{record['image_id']}.jpg" if record.get("image_id") else None)
        )
        stored = photos.add(_parquet_image(row.get("image"), where), where, name)
        if not src and not record.get("image_id"):
            record["image_src"] = stored
        records.append(record)
    if not records:
        raise ForeignDataError(f"{files[0]}: no MMHal-Bench question")
    write_json_atomic(out / "response_template.json", records)
    return len(records)


# -- HallusionBench ------------------------------------------------------------------------------------------


def _hallusion_tsv(path: Path, out: Path, photos: _Photos) -> int:
    from halluscope.benchmarks.hallusionbench import hallusion_fields_from_index

    rows = []
    by_index: dict[str, str] = {}
    pending: list[tuple[str, str, dict[str, Any]]] = []
    for where, row in _tsv_rows(path, ("index", "image", "question", "answer")):
        index = _text(row, "index", where).strip()
        fields = hallusion_fields_from_index(index)
        if fields is None:
            raise ForeignDataError(
                f"{where}: index {index[:60]!r} is not HallusionBench's packed id "
                "(<category>_<subcategory>_<visual_input>_<set>_<figure>_<question>)"
            )
        item: dict[str, Any] = {
            **fields,
            "question": _text(row, "question", where),
            "gt_answer_details": row.get("gt_answer_details", ""),
            "gt_answer": "1" if _yes_no(_text(row, "answer", where), where) == "yes" else "0",
            "filename": None,
        }
        image = _text(row, "image", where)
        if len(image.strip()) <= 64:
            pending.append((where, image.strip(), item))
        else:
            name = (row.get("image_path") or "").strip() or None
            stored = photos.add(_decode_base64(image, where), where, name)
            by_index[index] = stored
            item["filename"] = f"./{stored}"
        rows.append(item)
    for where, ref, item in pending:
        if ref not in by_index:
            raise ForeignDataError(
                f"{where}: image {ref!r} is neither base64 nor the index of a row with a photo"
            )
        item["filename"] = f"./{by_index[ref]}"
    return _write_hallusion(out, rows, path)


_HALLUSION_FIELDS = (
    "category", "subcategory", "visual_input", "set_id", "figure_id", "sample_note", "question_id", "question",
    "gt_answer_details", "gt_answer", "filename",
)  # fmt: skip


def _hallusion_parquet(files: list[Path], out: Path, photos: _Photos) -> int:
    rows = []
    needed = ("category", "subcategory", "set_id", "figure_id", "question_id", "question", "gt_answer")
    for where, _, row in _parquet_rows(files, (*needed, "image")):
        item = {k: (None if row.get(k) is None else str(row[k])) for k in _HALLUSION_FIELDS if k in row}
        if row.get("image") is not None and str(item.get("visual_input", "1")) != "0":
            name = str(row.get("filename") or "").strip() or None
            item["filename"] = "./" + photos.add(_parquet_image(row["image"], where), where, name)
        rows.append(item)
    return _write_hallusion(out, rows, files[0])


def _write_hallusion(out: Path, rows: list[dict[str, Any]], path: Path) -> int:
    if not rows:
        raise ForeignDataError(f"{path}: no HallusionBench question")
    write_json_atomic(out / "HallusionBench.json", rows)
    return len(rows)


# -- materialising -------------------------------------------------------------------------------------------

# -- AMBER --------------------------------------------------------------------------------------------------

_AMBER_TYPES = (
    "generative", "discriminative-hallucination", "discriminative-attribute-state",
    "discriminative-attribute-number", "discriminative-attribute-action", "discriminative-relation", "relation",
)  # fmt: skip
#: AMBER's query for every description item (lmms-eval sends it without the full stop).
_AMBER_DESCRIBE = "Describe this image."
_AMBER_METADATA = ("relation.json", "safe_words.txt")


def _amber_id(value: str, where: str) -> int:
    text = value.strip().removesuffix(".0")
    if not text.isdigit():
        raise ForeignDataError(f"{where}: id {value[:40]!r} is not AMBER's numeric id")
    return int(text)


def _amber_tsv(path: Path, out: Path, photos: _Photos) -> int:
    notes: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    by_index: dict[str, str] = {}
    pending: list[tuple[str, str, dict[str, Any]]] = []
    for where, row in _tsv_rows(path, ("index", "image", "question", "answer", "category")):
        index = _text(row, "index", where).strip()
        kind = _text(row, "category", where).strip()
        if kind not in _AMBER_TYPES[1:]:
            raise ForeignDataError(f"{where}: category {kind[:60]!r} is not one of AMBER's yes/no types")
        item_id = _amber_id(index, where)
        notes.append({"id": item_id, "type": kind, "truth": _yes_no(_text(row, "answer", where), where)})
        query: dict[str, Any] = {"id": item_id, "image": None, "query": _text(row, "question", where)}
        queries.append(query)
        image = _text(row, "image", where)
        if len(image.strip()) <= 64:  # the index of the row whose photo this row shares
            pending.append((where, image.strip(), query))
        else:
            name = (row.get("image_path") or "").strip() or None
            by_index[index] = query["image"] = photos.add(_decode_base64(image, where), where, name)
    for where, ref, query in pending:
        if ref not in by_index:
            raise ForeignDataError(
                f"{where}: image {ref!r} is neither base64 nor the index of a row with a photo"
            )
        query["image"] = by_index[ref]
    return _write_amber(out, notes, queries, path)


def _amber_parquet(files: list[Path], out: Path, photos: _Photos) -> int:
    notes: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for where, _, row in _parquet_rows(files, ("question_id", "truth", "image")):
        item_id = _amber_id(str(row.get("question_id")), where)
        kind = str(row.get("task_type") or "generative").strip()
        if kind not in _AMBER_TYPES:
            raise ForeignDataError(f"{where}: task_type {kind[:60]!r} is not one of AMBER's types")
        value = row.get("image")
        path = value.get("path") if isinstance(value, dict) else None
        name = Path(str(path)).name if path else None
        image = photos.add(_parquet_image(value, where), where, name)
        if kind == "generative":
            truth, hallu = row.get("truth"), row.get("hallu") or []
            if not isinstance(truth, list) or not isinstance(hallu, list):
                raise ForeignDataError(f"{where}: a description item needs 'truth' and 'hallu' lists")
            notes.append({"id": item_id, "type": kind, "truth": [str(t) for t in truth],
                          "hallu": [str(h) for h in hallu]})  # fmt: skip
            query = str(row.get("query") or _AMBER_DESCRIBE)
        else:
            notes.append({"id": item_id, "type": kind, "truth": _yes_no(_text(row, "truth", where), where)})
            query = str(row.get("query") or _text(row, "text", where))
        queries.append({"id": item_id, "image": image, "query": query})
    return _write_amber(out, notes, queries, files[0])


def _amber_metadata(source: Path) -> dict[str, Path]:
    """AMBER's word lists next to a source: in its folder, its ``metadata/`` folder or the folder above."""
    folder = source if source.is_dir() else source.parent
    for place in (folder, folder / "metadata", folder.parent, folder.parent / "metadata"):
        found = {name: place / name for name in _AMBER_METADATA}
        if all(p.is_file() for p in found.values()):
            return found
    return {}


def _write_amber(out: Path, notes: list[dict[str, Any]], queries: list[dict[str, Any]], path: Path) -> int:
    if not notes:
        raise ForeignDataError(f"{path}: no AMBER item")
    ids = [n["id"] for n in notes]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise ForeignDataError(f"{path}: AMBER item {twice} twice")
    order = sorted(range(len(notes)), key=lambda i: ids[i])
    write_json_atomic(out / "annotations.json", [notes[i] for i in order])
    write_json_atomic(out / "query" / "query_all.json", [queries[i] for i in order])
    metadata = _amber_metadata(path)
    if any(n["type"] == "generative" for n in notes) and not metadata:
        raise ForeignDataError(
            f"{path}: AMBER's descriptions are scored with its relation.json and safe_words.txt "
            "(https://github.com/junyangwang0410/AMBER, data/); put them in a metadata/ folder beside the file"
        )
    for name in _AMBER_METADATA:
        text = (
            metadata[name].read_text(encoding="utf-8")
            if metadata
            else ("{}" if name.endswith("json") else "")
        )
        write_text_atomic(out / name, text)
    return len(notes)


_Converter = Callable[[Any, Path, _Photos], int]
_CONVERTERS: dict[tuple[str, str], tuple[_Converter, bool]] = {
    # (benchmark, layout) → (converter, takes the list of files rather than one path)
    ("pope", "tsv"): (_pope_tsv, False),
    ("pope", "parquet"): (_pope_parquet, True),
    ("mmhal", "parquet"): (_mmhal_parquet, True),
    ("hallusionbench", "tsv"): (_hallusion_tsv, False),
    ("hallusionbench", "parquet"): (_hallusion_parquet, True),
    ("amber", "tsv"): (_amber_tsv, False),
    ("amber", "parquet"): (_amber_parquet, True),
}
_LAYOUT_NAMES = {"tsv": "VLMEvalKit TSV", "parquet": "lmms-lab parquet dataset"}


def materialise(benchmark: str, path: Path, *, cache_dir: Path | None = None) -> Materialised | None:
    """``path`` written once in ``benchmark``'s official layout (reused when already written); None when
    ``path`` is not a TSV or parquet source."""
    path = Path(path)
    layout = foreign_layout(path)
    if layout is None:
        return None
    if (benchmark, layout) not in _CONVERTERS:
        takes = ", ".join(_LAYOUT_NAMES[k] for k in FOREIGN_BENCHMARKS.get(benchmark, ())) or "neither"
        raise ForeignDataError(
            f"{path}: {benchmark} data cannot be read from a {_LAYOUT_NAMES[layout]} (it takes: {takes})"
        )
    files = _source_files(path, layout)
    extra = list(_amber_metadata(path).values()) if benchmark == "amber" else []
    key = _digest(files + extra, benchmark)
    root = (cache_dir or default_cache_dir()) / "foreign-data"
    final = root / f"{benchmark}-{key[:20]}"
    marker = final / "source.json"
    if marker.is_file():
        try:
            done = json.loads(marker.read_text(encoding="utf-8"))
            return Materialised(final, final / "images", path, layout, int(done["questions"]))
        except (ValueError, KeyError, TypeError, OSError):
            shutil.rmtree(final, ignore_errors=True)  # a damaged folder is written again
    converter, takes_files = _CONVERTERS[(benchmark, layout)]
    root.mkdir(parents=True, exist_ok=True)
    work = root / f".tmp-{benchmark}-{key[:20]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        (work / "images").mkdir(parents=True)
        questions = converter(files if takes_files else files[0], work, _Photos(work / "images"))
        info = {
            "source": str(path),
            "layout": layout,
            "benchmark": benchmark,
            "sha256": key,
            "questions": questions,
        }
        write_json_atomic(work / "source.json", info)
        try:
            work.rename(final)
        except OSError:
            if not (final / "source.json").is_file():  # another process won the race, or a stale folder
                shutil.rmtree(final, ignore_errors=True)
                work.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Materialised(final, final / "images", path, layout, questions)


def resolve_foreign_options(benchmark: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """A benchmark's factory options with a TSV or parquet ``data`` replaced by its official-layout folder
    and, unless given, ``images`` by its decoded photos; other options unchanged."""
    resolved = dict(options)
    data = resolved.get("data")
    if data is None or benchmark not in FOREIGN_BENCHMARKS:
        return resolved
    done = materialise(benchmark, Path(data))
    if done is None:
        return resolved
    resolved["data"] = done.data
    if not resolved.get("images"):
        resolved["images"] = done.images
    if benchmark == "amber" and not resolved.get("types"):
        resolved["types"] = _amber_parts(done.data)  # a yes/no-only TSV: no description part to set up
    return resolved


def _amber_parts(folder: Path) -> list[str]:
    """The AMBER parts (generative, existence, attribute, relation) the written annotations hold."""
    kinds = {
        str(n.get("type")) for n in json.loads((folder / "annotations.json").read_text(encoding="utf-8"))
    }
    parts = {"generative": "generative", "discriminative-hallucination": "existence", "relation": "relation",
             "discriminative-relation": "relation"}  # fmt: skip
    found = {parts.get(kind, "attribute") for kind in kinds}
    return [p for p in ("generative", "existence", "attribute", "relation") if p in found]
