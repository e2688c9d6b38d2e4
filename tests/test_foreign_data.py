"""Benchmark data from VLMEvalKit's TSV files and the lmms-lab parquet datasets, against the official layout.

The TSV and parquet files are written here the way those tools' files are (pandas for the TSV, pyarrow for
the parquet with the ``datasets`` Image layout ``{"bytes", "path"}``) from the real photos: POPE's GQA
questions about the Tri-HE photos (Visual Genome), MMHal-Bench's template and its photos, HallusionBench's
questions with a figure (Tri-HE photos stand in for its figures, which are not in the shared folder), AMBER's
items about its first eight images (Tri-HE photos stand in for AMBER's, not in the shared folder either). The
same questions through each layout must give the same samples, and a model is sent the same photo bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.foreign_data import ForeignDataError, materialise
from halluscope.cli.main import app
from halluscope.types import Sample
from tests.paths import AMBER_DIR, HALLUSIONBENCH_DIR, MMHAL_DIR, POPE_DIR, TRI_HE_IMAGES
from tests.scripted_server import ScriptedServer, completion

pytestmark = pytest.mark.full_data

SETTINGS = ("random", "popular", "adversarial")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _photos() -> dict[str, Path]:
    return {p.stem: p for p in sorted(TRI_HE_IMAGES.glob("*.jpg"))}


def _image_value(path: Path) -> dict[str, Any]:
    """A photo as the ``datasets`` Image feature stores it in parquet."""
    return {"bytes": path.read_bytes(), "path": None}


_IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _write_parquet(path: Path, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def _samples(name: str, data: Path, **options: Any) -> list[Sample]:
    return list(BENCHMARKS.create(name, data=data, **options).samples())


def _same_samples(official: list[Sample], foreign: list[Sample]) -> None:
    """Ids, prompts, labels and every field but where the photo lies; the photo's bytes identical."""

    def view(s: Sample) -> dict[str, Any]:
        meta = {k: v for k, v in s.metadata.items() if k not in ("image_path", "images_folder")}
        return {"id": s.id, "prompt": s.prompt, "reference": s.reference, "image_id": s.image_id, **meta}

    assert [view(s) for s in foreign] == [view(s) for s in official]
    for a, b in zip(official, foreign, strict=True):
        assert a.image_path and b.image_path
        assert Path(a.image_path).read_bytes() == Path(b.image_path).read_bytes(), a.id


def _respond(tmp: Path, name: str, data: Path, *options: str) -> tuple[list[str], Counter[tuple[str, str]]]:
    """Ask a scripted model every question: the ids answered and each request's (text, photo hash)."""
    with ScriptedServer(responder=lambda body: completion("No.")) as endpoint:
        out = tmp / f"respond-{len(list(tmp.glob('respond-*')))}"
        args = ["respond", "-b", name, "--data", str(data), "-m", f"openai/vlm?base_url={endpoint.base_url}",
                "--no-cache", "--out", str(out), *options]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        sent: Counter[tuple[str, str]] = Counter()
        for request, images in zip(endpoint.chat_requests(), endpoint.images_sent(), strict=True):
            content = request.body["messages"][-1]["content"]
            text = " ".join(p["text"] for p in content if p.get("type") == "text")
            assert len(images) == 1
            sent[(text, _sha(images[0][1]))] += 1
    ids = [
        json.loads(line)["id"] for line in (out / "responses.jsonl").read_text().splitlines() if line.strip()
    ]
    return sorted(ids), sent


# -- POPE --------------------------------------------------------------------------------------------------


def _gqa_rows() -> dict[str, list[dict[str, Any]]]:
    """POPE's GQA questions about the photos we have (31 photos, 186 questions a setting)."""
    photos = _photos()
    return {
        setting: [
            r
            for r in json.loads((POPE_DIR / f"gqa/gqa_pope_seem_{setting}.json").read_text())
            if Path(r["image"]).stem in photos
        ]
        for setting in SETTINGS
    }


def _official_pope(target: Path, sets: Mapping[str, list[dict[str, Any]]]) -> Path:
    for setting, rows in sets.items():
        (target / "gqa").mkdir(parents=True, exist_ok=True)
        (target / f"gqa/gqa_pope_seem_{setting}.json").write_text(json.dumps(rows))
    return target


def _lmms_lab_pope(hub: Path, sets: Mapping[str, list[dict[str, Any]]]) -> Path:
    """lmms-lab/POPE's default config in the Hugging Face cache layout, in two shards."""
    photos = _photos()
    schema = pa.schema(
        [("id", pa.string()), ("question_id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
         ("image_source", pa.string()), ("image", _IMAGE_TYPE), ("category", pa.string())]
    )  # fmt: skip
    rows = [
        {"id": str(n), "question_id": str(r["question_id"]), "question": r["text"], "answer": r["label"],
         "image_source": Path(r["image"]).stem, "image": _image_value(photos[Path(r["image"]).stem]),
         "category": setting}
        for n, (setting, r) in enumerate((s, r) for s, rows in sets.items() for r in rows)
    ]  # fmt: skip
    repo = hub / "datasets--lmms-lab--POPE"
    snapshot = repo / "snapshots" / "4db1276663dfa5eb8ad16a52d24c31a09e470896"
    half = len(rows) // 2
    _write_parquet(snapshot / "data/test-00000-of-00002.parquet", rows[:half], schema)
    _write_parquet(snapshot / "data/test-00001-of-00002.parquet", rows[half:], schema)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs/main").write_text(snapshot.name)
    return repo


def _vlmevalkit_pope(path: Path, sets: Mapping[str, list[dict[str, Any]]], *, with_ids: bool = False) -> Path:
    """POPE.tsv as VLMEvalKit lays it out: one row per (photo, question, label) with the settings it is in
    merged in ``category``, the question with " Please answer yes or no.", ``Yes``/``No``, the photo as
    base64 on its first row and as that row's index on the others. Our rows are GQA's (``source``)."""
    photos = _photos()
    merged: dict[tuple[str, str, str, str], list[str]] = {}
    ids: dict[tuple[str, str, str, str], int] = {}
    for setting, rows in sets.items():
        for r in rows:
            # with POPE's ids, one row per question: a merged row would have one id per setting
            key = (r["image"], r["text"], r["label"], setting if with_ids else "")
            merged.setdefault(key, []).append(setting)
            ids[key] = r["question_id"]
    first_row: dict[str, int] = {}
    table = []
    for index, ((image, text, label, one), settings) in enumerate(merged.items()):
        stem = Path(image).stem
        if stem in first_row:
            encoded = str(first_row[stem])
        else:
            first_row[stem] = index
            encoded = base64.b64encode(photos[stem].read_bytes()).decode("ascii")
        table.append({"index": index, "image": encoded, "question": f"{text} Please answer yes or no.",
                      "answer": label.capitalize(), "category": ",".join(settings), "source": "gqa",
                      **({"question_id": ids[(image, text, label, one)]} if with_ids else {})})  # fmt: skip
    pd.DataFrame(table).to_csv(path, sep="\t", index=False)
    return path


def test_pope_from_lmms_lab_parquet_and_vlmevalkit_tsv_match_the_official_files(tmp_path: Path) -> None:
    sets = _gqa_rows()
    assert [len(rows) for rows in sets.values()] == [186, 186, 186]
    official = _samples("pope", _official_pope(tmp_path / "pope", sets), images=TRI_HE_IMAGES)
    assert len(official) == 558

    # lmms-lab's parquet (the Hugging Face cache folder): the same samples, ids and photos
    hub = _lmms_lab_pope(tmp_path / "hub", sets)
    _same_samples(official, _samples("pope", hub))

    # VLMEvalKit's TSV: merged rows give back every question of every setting, with the same photo; the
    # file names no POPE question id, so ids are VLMEvalKit's index (as for its answer sheets)
    tsv = _vlmevalkit_pope(tmp_path / "POPE.tsv", sets)
    assert len(pd.read_csv(tsv, sep="\t")) < 558  # VLMEvalKit's layout merges settings
    from_tsv = _samples("pope", tsv)
    assert all("-vlmevalkit" in s.id for s in from_tsv)

    def key(s: Sample) -> tuple[str, str, str | None, str]:
        assert s.image_path
        return (s.metadata["setting"], s.prompt, s.reference, _sha(Path(s.image_path).read_bytes()))

    assert Counter(map(key, from_tsv)) == Counter(map(key, official))
    # what VLMEvalKit asks is POPE's question with its instruction: the yesno prompt on either layout
    yesno = {s.prompt for s in _samples("pope", tsv, prompt="yesno")}
    assert yesno == {f"{r['text']} Please answer yes or no." for rows in sets.values() for r in rows}

    # a TSV that carries POPE's question ids gives POPE's own ids
    with_ids = _vlmevalkit_pope(tmp_path / "POPE_ids.tsv", sets, with_ids=True)
    assert sorted(map(key, _samples("pope", with_ids))) == sorted(map(key, official))
    assert {s.id for s in _samples("pope", with_ids)} == {s.id for s in official}


def test_pope_model_is_sent_the_same_photo_bytes_from_every_layout(tmp_path: Path) -> None:
    sets = {"random": _gqa_rows()["random"]}
    official = _official_pope(tmp_path / "pope", sets)
    ids, sent = _respond(tmp_path, "pope", official, "--bench-opt", f"images={TRI_HE_IMAGES}")
    assert len(ids) == 186 and sum(sent.values()) == 186
    for source in (
        _lmms_lab_pope(tmp_path / "hub", sets),
        _vlmevalkit_pope(tmp_path / "POPE.tsv", sets, with_ids=True),
    ):
        assert _respond(tmp_path, "pope", source) == (ids, sent)  # no images folder given: the file's photos


def test_eval_data_root_finds_vlmevalkit_pope_tsv_and_sends_its_photos(tmp_path: Path) -> None:
    """``--data-root ~/LMUData``: POPE.tsv is POPE's data, and its photos (not a COCO folder beside it) are sent."""
    sets = {"random": _gqa_rows()["random"][:12]}
    root = tmp_path / "LMUData"
    root.mkdir()
    _vlmevalkit_pope(root / "POPE.tsv", sets, with_ids=True)
    (root / "val2014").mkdir()  # a photo folder the official layout would use: the file's photos win
    photos = _photos()
    want = Counter((r["text"], _sha(photos[Path(r["image"]).stem].read_bytes())) for r in sets["random"])
    with ScriptedServer(responder=lambda body: completion("No.")) as endpoint:
        model = f"vlm=openai/vlm?base_url={endpoint.base_url}"
        args = ["eval", "-b", "pope", "--data-root", str(root), "--model", model,
                "--out", str(tmp_path / "suite"), "--no-cache", "-q"]  # fmt: skip
        result = CliRunner().invoke(app, args, terminal_width=240)
        sent: Counter[tuple[str, str]] = Counter()
        for request, images in zip(endpoint.chat_requests(), endpoint.images_sent(), strict=True):
            content = request.body["messages"][-1]["content"]
            text = " ".join(p["text"] for p in content if p.get("type") == "text")
            sent[(text, _sha(images[0][1]))] += 1
    assert result.exit_code == 0, result.output
    assert sent == want
    metrics = json.loads((tmp_path / "suite/vlm/pope/metrics.json").read_text())
    assert metrics["counts"]["samples"] == 12
    # a root without any of POPE's names says where it looked, VLMEvalKit's file among them
    (root / "POPE.tsv").unlink()
    again = [*args[:-4], "--out", str(tmp_path / "again"), "--no-cache", "-q"]
    missing = CliRunner().invoke(app, again, terminal_width=240)
    assert missing.exit_code != 0 and "POPE.tsv" in " ".join(missing.output.split())


def test_materialised_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    sets = {"random": _gqa_rows()["random"][:12]}
    tsv = _vlmevalkit_pope(tmp_path / "POPE.tsv", sets)
    first = materialise("pope", tsv)
    assert first is not None and first.questions == 12
    stamp = (first.data / "source.json").stat().st_mtime_ns
    again = materialise("pope", tsv)
    assert again is not None and again.data == first.data
    assert (again.data / "source.json").stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache" / "foreign-data").iterdir()] == [first.data.name]
    # a changed file is another folder
    _vlmevalkit_pope(tmp_path / "POPE.tsv", {"random": _gqa_rows()["random"][:6]})
    changed = materialise("pope", tsv)
    assert changed is not None and changed.data != first.data and changed.questions == 6


# -- MMHal-Bench --------------------------------------------------------------------------------------------


def test_mmhal_from_lmms_lab_parquet_matches_the_template(tmp_path: Path) -> None:
    template = json.loads((MMHAL_DIR / "response_template.json").read_text())
    have = {p.name for p in (MMHAL_DIR / "images").iterdir()}
    records = [r for r in template if r["image_src"].rsplit("/", 1)[-1] in have]
    assert len(records) == 81
    official = tmp_path / "mmhal"
    (official / "images").mkdir(parents=True)
    (official / "response_template.json").write_text(json.dumps(records))
    for r in records:
        name = r["image_src"].rsplit("/", 1)[-1]
        shutil.copy(MMHAL_DIR / "images" / name, official / "images" / name)

    schema = pa.schema(
        [("question_type", pa.string()), ("question_topic", pa.string()), ("image_id", pa.string()),
         ("image_src", pa.string()), ("image_content", pa.list_(pa.string())), ("question", pa.string()),
         ("gt_answer", pa.string()), ("model_answer", pa.string()), ("image", _IMAGE_TYPE)]
    )  # fmt: skip
    photo = {r["image_src"]: MMHAL_DIR / "images" / r["image_src"].rsplit("/", 1)[-1] for r in records}
    rows = [
        {**{k: r.get(k) for k in schema.names if k != "image"}, "image": _image_value(photo[r["image_src"]])}
        for r in records
    ]
    dataset = tmp_path / "MMHal-Bench"
    _write_parquet(dataset / "test-00000-of-00001.parquet", rows, schema)

    want = _samples("mmhal", official)
    _same_samples(want, _samples("mmhal", dataset))
    assert [s.id for s in want] == [str(i) for i in range(81)]
    ids, sent = _respond(tmp_path, "mmhal", official)
    assert (ids, sent) == _respond(tmp_path, "mmhal", dataset) and len(ids) == 81


# -- HallusionBench -----------------------------------------------------------------------------------------


def test_hallusionbench_from_vlmevalkit_tsv_and_parquet_matches_the_official_file(tmp_path: Path) -> None:
    rows = [r for r in json.loads((HALLUSIONBENCH_DIR / "HallusionBench.json").read_text()) if r["filename"]][
        :60
    ]
    photos = sorted(_photos().values())
    figure_of = {name: photos[i] for i, name in enumerate(dict.fromkeys(r["filename"] for r in rows))}
    official = tmp_path / "hallusionbench"
    official.mkdir()
    (official / "HallusionBench.json").write_text(json.dumps(rows))
    figures = official / "images"
    for name, photo in figure_of.items():
        (figures / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, figures / name)
    want = _samples("hallusionbench", official, images=figures)

    # VLMEvalKit's HallusionBench.tsv: the ids packed in index, the figure's path in image_path
    first: dict[str, str] = {}
    table = []
    for r in rows:
        index = "_".join(
            r[k] for k in ("category", "subcategory", "visual_input", "set_id", "figure_id", "question_id")
        )
        image = first.setdefault(r["filename"], index)
        encoded = (
            image if image != index else base64.b64encode(figure_of[r["filename"]].read_bytes()).decode()
        )
        table.append({"index": index, "image": encoded, "image_path": r["filename"].removeprefix("./"),
                      "question": r["question"], "answer": "Yes" if r["gt_answer"] == "1" else "No",
                      "category": r["category"], "l2-category": f"{r['category']}_{r['subcategory']}",
                      "gt_answer_details": r["gt_answer_details"]})  # fmt: skip
    tsv = tmp_path / "HallusionBench.tsv"
    pd.DataFrame(table).to_csv(tsv, sep="\t", index=False)
    _same_samples(want, _samples("hallusionbench", tsv))

    # lmms-lab/HallusionBench's ``image`` split: the official fields and the figure
    fields = list(rows[0])
    schema = pa.schema([*((k, pa.string()) for k in fields), ("image", _IMAGE_TYPE)])
    parquet = tmp_path / "HallusionBench" / "image-00000-of-00001.parquet"
    _write_parquet(parquet, [{**r, "image": _image_value(figure_of[r["filename"]])} for r in rows], schema)
    _same_samples(want, _samples("hallusionbench", parquet.parent))


# -- AMBER --------------------------------------------------------------------------------------------------


def _official_amber(target: Path, images: int) -> tuple[Path, list[dict[str, Any]], dict[str, Path]]:
    """AMBER's own layout for the items about its first ``images`` images; Tri-HE photos stand in for them."""
    names = {f"AMBER_{n}.jpg" for n in range(1, images + 1)}
    queries = [q for q in json.loads((AMBER_DIR / "query/query_all.json").read_text()) if q["image"] in names]
    wanted = {q["id"] for q in queries}
    notes = [a for a in json.loads((AMBER_DIR / "annotations.json").read_text()) if a["id"] in wanted]
    (target / "query").mkdir(parents=True)
    (target / "annotations.json").write_text(json.dumps(notes))
    (target / "query/query_all.json").write_text(json.dumps(queries))
    for name in ("relation.json", "safe_words.txt"):
        shutil.copy(AMBER_DIR / name, target / name)
    photo = dict(zip(sorted(names), sorted(_photos().values()), strict=False))
    (target / "image").mkdir()
    for name, path in photo.items():
        shutil.copy(path, target / "image" / name)
    by_id = {a["id"]: a for a in notes}
    return target, [{**q, **by_id[q["id"]]} for q in queries], photo


def test_amber_from_vlmevalkit_tsv_and_lmms_eval_parquet_matches_the_official_files(tmp_path: Path) -> None:
    official, items, photo = _official_amber(tmp_path / "amber", 8)
    yes_no = [i for i in items if i["type"] != "generative"]
    assert (len(items), len(yes_no)) == (153, 145)
    want = _samples("amber", official, images=official / "image")

    # VLMEvalKit's AMBER.tsv: its yes/no items, index = AMBER's id, the photo inline on each row
    table = [{"index": i["id"], "image": base64.b64encode(photo[i["image"]].read_bytes()).decode(),
              "question": i["query"], "answer": i["truth"].capitalize(), "category": i["type"],
              "image_path": i["image"]} for i in yes_no]  # fmt: skip
    tsv = tmp_path / "LMUData" / "AMBER.tsv"
    tsv.parent.mkdir()
    pd.DataFrame(table).to_csv(tsv, sep="\t", index=False)
    from_tsv = _samples("amber", tsv)
    _same_samples([s for s in want if s.metadata["type"] != "generative"], from_tsv)
    assert [s.id for s in from_tsv][:3] == ["1005", "1006", "1007"]

    # lmms-eval's amber_g (Kyunnilee/amber_g, split train): the descriptions, with AMBER's word lists in
    # lmms-eval's AMBER_BASE_DIR/metadata
    schema = pa.schema([("question_id", pa.int64()), ("task_type", pa.string()), ("truth", pa.list_(pa.string())),
                        ("hallu", pa.list_(pa.string())), ("image", _IMAGE_TYPE)])  # fmt: skip
    rows = [{"question_id": i["id"], "task_type": "generative", "truth": i["truth"], "hallu": i["hallu"],
             "image": {"bytes": photo[i["image"]].read_bytes(), "path": i["image"]}}
            for i in items if i["type"] == "generative"]  # fmt: skip
    dataset = tmp_path / "amber_g"
    _write_parquet(dataset / "data/train-00000-of-00001.parquet", rows, schema)
    with pytest.raises(ForeignDataError, match=r"relation.json and safe_words.txt .* metadata/ folder"):
        materialise("amber", dataset)
    (dataset / "metadata").mkdir()
    for name in ("relation.json", "safe_words.txt"):
        shutil.copy(AMBER_DIR / name, dataset / "metadata" / name)
    _same_samples([s for s in want if s.metadata["type"] == "generative"], _samples("amber", dataset))

    # a model is sent the same photo for each question, whichever layout it came from
    ids, sent = _respond(tmp_path, "amber", official, "--bench-opt", f"images={official / 'image'}",
                         "--bench-opt", "types=existence,attribute,relation")  # fmt: skip
    assert len(ids) == 145 and (ids, sent) == _respond(tmp_path, "amber", tsv)


# -- hostile input ------------------------------------------------------------------------------------------


def _one_line_failure(tmp_path: Path, name: str, data: Path, *needles: str) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "gqa-random-1", "response": "no"}\n')
    args = [
        "run",
        "-b",
        name,
        "--data",
        str(data),
        "--responses",
        str(answers),
        "--out",
        str(tmp_path / "run"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("error")]) == 1, result.output
    message = " ".join(result.output.split())
    for needle in needles:
        assert needle in message, message


def test_malformed_files_fail_in_one_line_naming_file_and_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    sets = {"random": _gqa_rows()["random"][:8]}
    good = pd.read_csv(
        _vlmevalkit_pope(tmp_path / "good.tsv", sets), sep="\t", dtype=str, keep_default_na=False
    )

    good.drop(columns=["category"]).to_csv(tmp_path / "nocat.tsv", sep="\t", index=False)
    _one_line_failure(tmp_path, "pope", tmp_path / "nocat.tsv", "nocat.tsv", "no column(s) category")

    bad = good.copy()
    bad.loc[0, "image"] = "!" * 100
    bad.to_csv(tmp_path / "b64.tsv", sep="\t", index=False)
    _one_line_failure(tmp_path, "pope", tmp_path / "b64.tsv", "b64.tsv row 1", "not valid base64")

    bad = good.copy()
    bad.loc[2, "image"] = base64.b64encode(b"not a photo at all" * 8).decode()
    bad.to_csv(tmp_path / "notimg.tsv", sep="\t", index=False)
    _one_line_failure(tmp_path, "pope", tmp_path / "notimg.tsv", "notimg.tsv row 3", "not a JPEG")

    bad = good.copy()
    bad.loc[1, "answer"] = "Maybe"
    bad.to_csv(tmp_path / "label.tsv", sep="\t", index=False)
    _one_line_failure(tmp_path, "pope", tmp_path / "label.tsv", "label.tsv row 2", "neither Yes nor No")

    (tmp_path / "ragged.tsv").write_text("index\timage\tquestion\tanswer\tcategory\n1\t2\t3\t4\t5\t6\t7\n")
    _one_line_failure(tmp_path, "pope", tmp_path / "ragged.tsv", "ragged.tsv", "not a readable TSV")

    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    _one_line_failure(
        tmp_path, "pope", tmp_path / "broken.parquet", "broken.parquet", "not a readable parquet"
    )

    # an image name from the data never leaves the images folder
    photo = next(iter(_photos().values()))
    schema = pa.schema([("question_id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
                        ("image_source", pa.string()), ("image", _IMAGE_TYPE), ("category", pa.string())])  # fmt: skip
    escape = tmp_path / "escape" / "test.parquet"
    _write_parquet(escape, [{"question_id": "1", "question": "Is there a cat in the image?", "answer": "no",
                             "image_source": "../../../evil", "image": _image_value(photo),
                             "category": "random"}], schema)  # fmt: skip
    _one_line_failure(tmp_path, "pope", escape.parent, "test.parquet row 1", "not a plain relative file name")
    assert not any(p.name.startswith("evil") for p in tmp_path.rglob("*"))
    with pytest.raises(ForeignDataError, match=r"mmhal data cannot be read from a VLMEvalKit TSV"):
        materialise("mmhal", tmp_path / "good.tsv")


def test_without_pyarrow_or_pandas_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setenv("HALLUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    tsv = _vlmevalkit_pope(tmp_path / "POPE.tsv", {"random": _gqa_rows()["random"][:2]})
    parquet = tmp_path / "x.parquet"
    parquet.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    for data, library in ((tsv, "pandas"), (parquet, "pyarrow")):
        with pytest.raises(ForeignDataError, match=rf"needs {library}: pip install \"halluscope\[import\]\""):
            materialise("pope", data)
