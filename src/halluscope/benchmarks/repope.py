"""RePOPE: POPE's three COCO sets with corrected labels (POPE ``--bench-opt labels=repope``).

Neuhaus and Hein, "RePOPE: Impact of Annotation Errors on the POPE Benchmark" (arXiv 2504.15707); data:
https://github.com/YanNeu/RePOPE (``annotations/coco_repope_{random,popular,adversarial}.json``, JSONL with
POPE's ``question_id``, ``image``, ``text`` and the corrected ``label``). About 12 % of POPE's COCO labels
were found wrong or ambiguous: wrong ones are relabelled, ambiguous ones dropped; RePOPE showed that model
rankings change under the corrected labels.

Why here: the same answers can then be scored under both label sets (run once with ``labels=pope``, once
with ``labels=repope``): the ids are POPE's. An item RePOPE dropped is left out of the selection and counted;
an item whose image or question differs between the two files is an error naming it, never a silent change
of question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from halluscope.benchmarks._download import ensure_data
from halluscope.benchmarks.closed import ClosedDataError, read_json_rows
from halluscope.download import DataSet, github_files

__all__ = ["REPOPE_DATA", "load_repope", "relabel"]

#: The commit of RePOPE's repository whose annotations are fetched when no folder is given.
REPOPE_COMMIT = "bcf22e5690d587cce34e1728af3efdcfaf747d29"
#: RePOPE's three label files; POPE declares them as its optional data (read with ``labels=repope`` only).
REPOPE_DATA = DataSet(
    name="repope",
    title="RePOPE",
    files=github_files(
        "YanNeu/RePOPE",
        (REPOPE_COMMIT,),
        "",
        {
            "annotations/coco_repope_random.json": (
                340368, "f464fcaf60b24ce2f280cf33f122e000dbdd35c8e88f77c4141c9c2cba864611"
            ),
            "annotations/coco_repope_popular.json": (
                333773, "57832b055bae5fd6176278a4f104c98ddd84811f7d26dfcb93d481f6c9da09a5"
            ),
            "annotations/coco_repope_adversarial.json": (
                328764, "8c346dbb060bf422ff92e769fa68e5ab3e8a777cb28a26e973387441e05c9ccf"
            ),
        },
    ),
    required=False,
)  # fmt: skip
_SETTINGS = ("random", "popular", "adversarial")


def _file(setting: str) -> str:
    return f"coco_repope_{setting}.json"


def resolve_repope(data: Path | None) -> Path:
    """The folder holding ``coco_repope_*.json`` (given, its ``annotations/``, or downloaded to the cache)."""
    path = Path(data) if data is not None else ensure_data(REPOPE_DATA)
    if (path / "annotations").is_dir():
        path = path / "annotations"
    if not any((path / _file(s)).exists() for s in _SETTINGS):
        raise ClosedDataError(f"{path} holds no RePOPE file (expected coco_repope_random.json and the like)")
    return path


def load_repope(data: Path | None, settings: list[str]) -> dict[str, dict[int, dict[str, Any]]]:
    """RePOPE's rows of each setting by ``question_id``."""
    folder = resolve_repope(data)
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for setting in settings:
        path = folder / _file(setting)
        if not path.exists():
            raise ClosedDataError(f"RePOPE file missing: {path}")
        out[setting] = {int(row["question_id"]): row for row in read_json_rows(path)}
    return out


Rows = dict[tuple[str, str], list[dict[str, Any]]]


def relabel(loaded: Rows, data: Path | None) -> tuple[Rows, dict[str, dict[str, int]], Rows]:
    """POPE's COCO rows with RePOPE's labels; dropped items left out. Returns the rows; per set
    ``{"pope": items, "kept", "dropped", "relabelled", "yes", "no"}`` (labels after relabelling); and the
    dropped rows (so that answers to them can be told apart from answers to no item at all)."""
    settings = [setting for source, setting in loaded if source == "coco"]
    repope = load_repope(data, settings)
    rows_out: Rows = {}
    dropped_out: Rows = {}
    counts: dict[str, dict[str, int]] = {}
    for (source, setting), rows in loaded.items():
        if source != "coco":
            raise ClosedDataError(f"RePOPE relabels only POPE's COCO sets, not {source}")
        table = repope[setting]
        kept: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        relabelled = 0
        for row in rows:
            new = table.get(int(row["question_id"]))
            if new is None:
                dropped.append(row)
                continue
            same_image = str(new.get("image")) == str(row.get("image"))
            if not same_image or str(new.get("text")).strip() != str(row["text"]).strip():
                raise ClosedDataError(
                    f"RePOPE {setting} question {row['question_id']} is {new.get('image')} {new.get('text')!r}, "
                    f"but POPE's is {row.get('image')} {row['text']!r}: not the same item"
                )
            label = str(new["label"]).lower()
            relabelled += label != str(row["label"]).lower()
            kept.append({**row, "label": label, "pope_label": str(row["label"]).lower()})
        rows_out[(source, setting)] = kept
        dropped_out[(source, setting)] = dropped
        counts[f"{source}-{setting}"] = {
            "pope": len(rows),
            "kept": len(kept),
            "dropped": len(rows) - len(kept),
            "relabelled": relabelled,
            "yes": sum(1 for r in kept if r["label"] == "yes"),
            "no": sum(1 for r in kept if r["label"] == "no"),
        }
    return rows_out, counts, dropped_out
