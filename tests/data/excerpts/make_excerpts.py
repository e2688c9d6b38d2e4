"""Regenerate the committed excerpts of the public benchmark files from the full shared data.

The everyday tests read these excerpts, so a clone without ``../shared`` can run them; the full-data tests
(marked ``full_data``) read the full files. Only data whose licence allows redistribution is excerpted:
POPE (MIT), AMBER (Apache-2.0), HallusionBench (BSD-3-Clause), a few Visual Genome photos from the Tri-HE
release (CC BY 4.0), and of the peer outputs LLaVA's POPE question file (Apache-2.0), the POPE labels LLaVA
used (MIT) and VLMEvalKit's VILA-1.5-8B prediction sheets (Apache-2.0, written as TSV, which VLMEvalKit also
reads and writes). The LLaVA-7B answers publish no licence and are not copied. Tri-HE's ``tri-he.json``,
Reefknot and HQH publish no licence, so nothing of them is copied here (see NOTICE.md). The selection is
deterministic: the same full data gives the same bytes.

    python tests/data/excerpts/make_excerpts.py [--shared ../shared] [--out tests/data/excerpts]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]

POPE_ITEMS = 60  # per question set: enough for the quality test's 60 coco/random items
POPE_CAPTIONS = 2  # per caption file
AMBER_GENERATIVE = 20
AMBER_PER_TYPE = 10  # per discriminative type
HB_SETS = 2  # whole question sets kept per (category, subcategory): pairs and figures stay complete
TRI_HE_IMAGES = ("2374892", "2397582", "2387230", "2383415")  # the first images of tri-he.json
IMAGE_MAX_SIDE = 512


def _write_json(path: Path, value: Any, indent: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")


def _pope(src: Path, out: Path) -> None:
    for source in ("coco", "aokvqa", "gqa"):
        for setting in ("random", "popular", "adversarial"):
            name = f"coco_pope_{setting}.json" if source == "coco" else f"{source}_pope_seem_{setting}.json"
            text = (src / source / name).read_text(encoding="utf-8")
            target = out / source / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source == "coco":  # JSONL, one question a line, as released
                lines = [line for line in text.splitlines() if line.strip()][:POPE_ITEMS]
                target.write_text("\n".join(lines) + "\n", encoding="utf-8")
            else:  # a pretty-printed JSON list, as released
                _write_json(target, json.loads(text)[:POPE_ITEMS], indent=4)
    shutil.copyfile(src / "answer_example.json", out / "answer_example.json")
    decoder = json.JSONDecoder()
    for path in sorted((src / "caption_data").glob("*.json")):
        text, pos, kept = path.read_text(encoding="utf-8"), 0, []
        while len(kept) < POPE_CAPTIONS:  # JSON objects one after another, not a list
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            obj, pos = decoder.raw_decode(text, pos)
            kept.append(json.dumps(obj, indent=4, ensure_ascii=False))
        target = out / "caption_data" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(kept) + "\n", encoding="utf-8")
    shutil.copyfile(src / "LICENSE", out / "LICENSE")


def _amber(src: Path, out: Path) -> None:
    items = json.loads((src / "annotations.json").read_text(encoding="utf-8"))
    kept: list[dict[str, Any]] = []
    per_type: dict[str, int] = {}
    for item in items:
        quota = AMBER_GENERATIVE if item["type"] == "generative" else AMBER_PER_TYPE
        if per_type.get(item["type"], 0) < quota:
            per_type[item["type"]] = per_type.get(item["type"], 0) + 1
            kept.append(item)
    ids = {item["id"] for item in kept}
    _write_json(out / "annotations.json", kept)
    queries = json.loads((src / "query" / "query_all.json").read_text(encoding="utf-8"))
    _write_json(out / "query" / "query_all.json", [q for q in queries if q["id"] in ids])
    for name in ("relation.json", "safe_words.txt", "metrics.txt", "LICENSE"):
        shutil.copyfile(src / name, out / name)  # small: the vocabulary and counters every item needs


def _hallusionbench(src: Path, out: Path) -> None:
    rows = json.loads((src / "HallusionBench.json").read_text(encoding="utf-8"))
    sets: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        seen = sets.setdefault((row["category"], row["subcategory"]), [])
        if row["set_id"] not in seen and len(seen) < HB_SETS:
            seen.append(row["set_id"])
    keep = {(c, s, i) for (c, s), ids in sets.items() for i in ids}
    _write_json(out / "HallusionBench.json",
                [r for r in rows if (r["category"], r["subcategory"], r["set_id"]) in keep], indent=4)
    sample = json.loads((src / "HallusionBench_result_sample.json").read_text(encoding="utf-8"))
    _write_json(out / "HallusionBench_result_sample.json",
                [r for r in sample if (r["category"], r["subcategory"], r["set_id"]) in keep], indent=4)
    shutil.copyfile(src / "LICENSE.md", out / "LICENSE.md")


def _tri_he_images(src: Path, out: Path) -> None:
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    for image_id in TRI_HE_IMAGES:
        with Image.open(src / f"{image_id}.jpg") as image:
            image = image.convert("RGB")
            image.thumbnail((IMAGE_MAX_SIDE, IMAGE_MAX_SIDE))
            image.save(out / f"{image_id}.jpg", "JPEG", quality=80, optimize=True)


LLAVA_QUESTIONS = 60  # per POPE set, as POPE_ITEMS
VLMEVALKIT_POPE_ROWS = 120
_SHEET_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def _xlsx_rows(path: Path) -> list[list[str]]:
    """The first sheet of a simple .xlsx as text cells (standard library only: no openpyxl needed here)."""
    with zipfile.ZipFile(path) as book:
        shared = [
            "".join(t.text or "" for t in item.iter(f"{{{_SHEET_NS['m']}}}t"))
            for item in ET.fromstring(book.read("xl/sharedStrings.xml")).findall("m:si", _SHEET_NS)
        ]
        sheet = ET.fromstring(book.read("xl/worksheets/sheet1.xml"))
    rows: list[list[str]] = []
    for row in sheet.iter(f"{{{_SHEET_NS['m']}}}row"):
        cells: dict[int, str] = {}
        for cell in row.findall("m:c", _SHEET_NS):
            letters = re.match(r"[A-Z]+", cell.get("r", "A")).group(0)  # type: ignore[union-attr]
            column = 0
            for letter in letters:
                column = column * 26 + ord(letter) - 64
            value = cell.findtext("m:v", default="", namespaces=_SHEET_NS)
            kind = cell.get("t")
            if kind == "s":
                value = shared[int(value)]
            elif kind == "b":
                value = "True" if value == "1" else "False"
            elif kind == "inlineStr":
                value = "".join(t.text or "" for t in cell.iter(f"{{{_SHEET_NS['m']}}}t"))
            cells[column - 1] = value
        rows.append([cells.get(i, "") for i in range(max(cells) + 1)] if cells else [])
    return rows


def _write_tsv(path: Path, rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    csv.writer(buffer, delimiter="\t", lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _peer_outputs(src: Path, out: Path, hallusion_sets: set[tuple[str, str, str]]) -> None:
    llava = src / "pope-llava-1.5-7b-partial"
    target = out / "pope-llava-1.5-7b"
    kept = []
    for line in (llava / "llava_pope_test.jsonl").read_text(encoding="utf-8").splitlines():
        qid = json.loads(line)["question_id"]
        if qid % 10_000_000 <= LLAVA_QUESTIONS:
            kept.append(line)
    target.mkdir(parents=True, exist_ok=True)
    (target / "llava_pope_test.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    for setting in ("random", "popular", "adversarial"):
        name = f"coco/coco_pope_{setting}.json"
        lines = (llava / "pope-labels-e3e3926" / name).read_text(encoding="utf-8").splitlines()[:POPE_ITEMS]
        (target / "pope-labels-e3e3926" / "coco").mkdir(parents=True, exist_ok=True)
        (target / "pope-labels-e3e3926" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copyfile(src.parent / "pope" / "LICENSE", target / "pope-labels-e3e3926" / "LICENSE")
    vlm = src / "vlmevalkit-vila-1.5-8b"
    target = out / "vlmevalkit-vila-1.5-8b"
    pope = _xlsx_rows(vlm / "vila_8b_POPE_auxmatch.xlsx")
    _write_tsv(target / "vila_8b_POPE_auxmatch.tsv", pope[: VLMEVALKIT_POPE_ROWS + 1])
    hallusion = _xlsx_rows(vlm / "vila_8b_HallusionBench_auxmatch.xlsx")
    column = hallusion[0].index("index")
    chosen = [hallusion[0]] + [
        row for row in hallusion[1:]
        if (lambda p: (p[0], p[1], p[3]))(row[column].split("_")) in hallusion_sets
    ]
    _write_tsv(target / "vila_8b_HallusionBench_auxmatch.tsv", chosen)


EXCERPTED = ("pope", "amber", "hallusionbench", "tri-he", "peer-outputs")


def write_excerpts(data: Path, out: Path) -> None:
    """Write every excerpt of the full ``data`` folder under ``out``, replacing what was there."""
    for name in EXCERPTED:
        if (out / name).exists():
            shutil.rmtree(out / name)
    _pope(data / "pope", out / "pope")
    _amber(data / "amber", out / "amber")
    _hallusionbench(data / "hallusionbench", out / "hallusionbench")
    kept = json.loads((out / "hallusionbench" / "HallusionBench.json").read_text(encoding="utf-8"))
    _peer_outputs(data / "peer-outputs", out / "peer-outputs",
                  {(r["category"], r["subcategory"], str(r["set_id"])) for r in kept})
    _tri_he_images(data / "tri-he" / "images", out / "tri-he" / "images")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    default = os.environ.get("HALLUSCOPE_SHARED", str(REPO_ROOT.parent / "shared"))
    parser.add_argument("--shared", type=Path, default=Path(default), help="the shared folder (holds data/)")
    parser.add_argument("--out", type=Path, default=HERE, help="where to write (default: next to this script)")
    args = parser.parse_args()
    data = args.shared / "data"
    if not data.is_dir():
        raise SystemExit(f"no full data at {data}; pass --shared or set HALLUSCOPE_SHARED")
    write_excerpts(data, args.out)
    total = sum(p.stat().st_size for name in EXCERPTED for p in (args.out / name).rglob("*") if p.is_file())
    print(f"excerpts written under {args.out} ({total / 1e6:.2f} MB in all)")


if __name__ == "__main__":
    main()
