"""Images stay inside the images folder, and reach the model as the benchmark holds them.

Two faults a real run showed. An item's image name is joined to the folder given with ``images=DIR``: a
name like ``../secret/photo.png``, an absolute path, or a link in the folder leading out of it must not make
halluscope open that file, send it to an endpoint, count it as found or embed it in the HTML report; the
item is an input failure of its own, named in one line, and the rest of the run goes on. And a photo is
sent as the file's own bytes (the MIME type read from its content), unless the user asks for a size with
``max_side``: a scripted loopback server decodes what arrived and compares it byte for byte with the files.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS
from halluscope.cli.main import app
from tests.layouts import reefknot_layout, tri_he_layout
from tests.paths import (
    AMBER_EXCERPT,
    HALLUSIONBENCH_EXCERPT,
    HQH_DIR,
    MMHAL_DIR,
    POPE_DIR,
    POPE_EXCERPT,
    REPO_ROOT,
    TRI_HE_IMAGES,
)
from tests.scripted_server import Reply, ScriptedServer, completion

RED, GREEN, BLUE, GREY = (220, 20, 20), (20, 200, 20), (20, 20, 220), (128, 128, 128)


def _photo(path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (40, 30), fmt: str = "PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path, format=fmt)
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _mean_colour(data: bytes) -> tuple[int, ...]:
    image = Image.open(io.BytesIO(data)).convert("RGB").resize((1, 1), Image.Resampling.BOX)
    return tuple(image.getpixel((0, 0)))  # type: ignore[arg-type]


def _near(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(abs(x - y) <= 12 for x, y in zip(a, b, strict=True))


def _answer(body: Any) -> Reply:
    return completion("No.")


# -- image paths that lead outside the images folder ---------------------------------------------------------


def _escaping_pope(tmp_path: Path) -> tuple[Path, Path, dict[int, str]]:
    """A POPE question file whose items name: a photo inside the folder, ``../secret/photo.png``, an
    absolute path, a link inside the folder to a photo outside it, and ``/etc/passwd`` by ``..``s."""
    images = tmp_path / "images"
    secret = tmp_path / "secret"
    _photo(images / "inside.png", RED)
    _photo(secret / "photo.png", GREEN)
    absolute = _photo(secret / "absolute.png", BLUE)
    (images / "link.png").symlink_to(_photo(secret / "linked.png", GREY))
    passwd = "../" * len(images.resolve().parts) + "etc/passwd"
    names = {1: "inside.png", 2: "../secret/photo.png", 3: str(absolute), 4: "link.png", 5: passwd}
    data = tmp_path / "pope"
    (data / "coco").mkdir(parents=True)
    rows = [{"question_id": q, "image": name, "text": "Is there a dog in the image?", "label": "no"}
            for q, name in names.items()]  # fmt: skip
    (data / "coco" / "coco_pope_random.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data, images, names


def test_pope_items_whose_image_leads_outside_are_input_failures(tmp_path: Path) -> None:
    data, images, names = _escaping_pope(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer(responder=_answer) as endpoint:
        args = ["run", "-b", "pope", "--data", str(data), "--bench-opt", f"images={images}",
                "--bench-opt", "sources=coco", "--bench-opt", "settings=random",
                "-m", f"openai/vlm?base_url={endpoint.base_url}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        # only the photo inside the folder was sent, once; nothing of the four others left the machine
        sent = endpoint.images_sent()
    assert len(sent) == 1 and len(sent[0]) == 1
    assert sent[0][0] == ("image/png", (images / "inside.png").read_bytes())

    records = {r["id"]: r for r in _lines(out / "samples.jsonl")}
    assert records["coco-random-1"]["failure"] is None
    for question, name in names.items():
        if question == 1:
            continue
        record = records[f"coco-random-{question}"]
        failure = str(record["failure"])
        assert record["failed_stage"] == "input" and record["response"] is None
        assert "\n" not in failure and f"coco-random-{question}" in failure
        assert repr(name) in failure and "leads outside the images folder" in failure, failure
    spec = json.loads((out / "spec.json").read_text())["benchmark"]
    assert (spec["images_found"], spec["images_needed"], spec["images_outside"]) == (1, 5, 4)

    # the HTML report embeds the photo inside the folder and none of the others
    html = tmp_path / "report.html"
    assert CliRunner().invoke(app, ["report", str(out), "--html", str(html)]).exit_code == 0
    page = html.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="hs-data">(.*?)</script>', page, re.S)
    assert match is not None
    embedded = json.loads(match.group(1))
    uris = list(embedded["images"].values())
    assert len(uris) == 1
    assert _near(_mean_colour(base64.b64decode(uris[0].split(",", 1)[1])), RED)
    shown = {s["id"]: s["img"] for s in embedded["samples"]}
    assert shown["coco-random-1"] is not None
    assert all(shown.get(f"coco-random-{q}") is None for q in names if q != 1)


def test_a_run_whose_every_image_leads_outside_does_not_start(tmp_path: Path) -> None:
    data, images, _ = _escaping_pope(tmp_path)
    (images / "inside.png").unlink()
    (images / "inside.png").symlink_to(tmp_path / "secret" / "photo.png")  # now every item leads outside
    with ScriptedServer(responder=_answer) as endpoint:
        args = ["respond", "-b", "pope", "--data", str(data), "--bench-opt", f"images={images}",
                "-m", f"openai/vlm?base_url={endpoint.base_url}", "--out", str(tmp_path / "a"),
                "--no-cache", "-q"]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code != 0
        assert endpoint.chat_requests() == []
    message = " ".join(result.output.split())
    assert "every one of the 5 selected pope samples" in message and "leads outside the images folder" in message
    assert "Traceback" not in result.output


def test_the_report_does_not_embed_a_recorded_path_outside_the_run_folders(tmp_path: Path) -> None:
    """A run directory from elsewhere whose records name a file outside every folder the run names."""
    from halluscope.report.html import write_html_report

    secret = _photo(tmp_path / "secret" / "photo.png", GREEN)
    inside = _photo(tmp_path / "pope" / "images" / "x.png", RED)
    run = tmp_path / "run"
    run.mkdir()
    (run / "spec.json").write_text(json.dumps({"benchmark": {"benchmark": "not-here", "data": str(tmp_path / "pope")}}))
    records = [{"id": "a", "prompt": "?", "response": "No.", "claims": [], "failure": None,
                "metadata": {"image_path": str(secret)}},
               {"id": "b", "prompt": "?", "response": "No.", "claims": [], "failure": None,
                "metadata": {"image_path": str(inside)}}]  # fmt: skip
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "metrics.json").write_text(json.dumps({"benchmark": "not-here", "metrics": {}, "groups": {}, "counts": {}}))
    page = write_html_report([run], tmp_path / "r.html").read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="hs-data">(.*?)</script>', page, re.S)
    assert match is not None
    embedded = json.loads(match.group(1))
    shown = {s["id"]: s["img"] for s in embedded["samples"]}
    assert shown["a"] is None and shown["b"] is not None


def _chair(tmp_path: Path) -> dict[str, Any]:
    from tests.test_chair_coco import _mini_truth

    _mini_truth(tmp_path, {"1": ["person"], "2": ["dog"]})
    return {"data": tmp_path, "ids": "all", "tagger": "perceptron"}


#: Every benchmark that takes ``images=``: how to open it on data at hand (the released files for two).
LOADERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "pope": lambda _: {"data": POPE_EXCERPT, "sources": "coco", "settings": "random"},
    "amber": lambda _: {"data": AMBER_EXCERPT, "types": "existence"},
    "hallusionbench": lambda _: {"data": HALLUSIONBENCH_EXCERPT},
    "tri-he": lambda _: {"data": tri_he_layout()},
    "reefknot": lambda _: {"data": reefknot_layout()},
    "prove": lambda _: {"data": REPO_ROOT / "tests" / "data" / "prove" / "prove.json"},
    "chair": _chair,
    "hqh": lambda _: {"data": HQH_DIR / "HQH.json"},
    "mmhal": lambda _: {"data": MMHAL_DIR / "response_template.json"},
}
_RELEASED = {"hqh", "mmhal"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.full_data) if n in _RELEASED else n for n in LOADERS]
)
def test_every_loader_refuses_a_link_out_of_the_images_folder(name: str, tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    options = {**LOADERS[name](tmp_path), "images": images}
    first = next(s for s in BENCHMARKS.create(name, **options).samples() if s.image_path)
    # where the loader expects the photo: a link there to a photo outside the folder
    expected = Path(str(first.image_path))
    assert expected.resolve().is_relative_to(images.resolve()) and not expected.exists()
    expected.parent.mkdir(parents=True, exist_ok=True)
    expected.symlink_to(_photo(tmp_path / "secret" / "photo.png", GREEN))

    bench = BENCHMARKS.create(name, **options)
    sample = next(s for s in bench.samples() if s.id == first.id)
    assert sample.image_path is None
    assert "leads outside the images folder" in sample.metadata["image_outside"]
    spec = bench.spec()
    if "images_found" in spec:  # every benchmark but CHAIR counts its images
        assert spec["images_outside"] >= 1
        assert spec["images_found"] + spec["images_outside"] <= spec["images_needed"]


# -- photos sent as the benchmark holds them ------------------------------------------------------------------


def _gqa_pope(target: Path) -> list[dict[str, Any]]:
    """POPE's GQA questions (random setting) about the 31 GQA photos the Tri-HE folder holds."""
    photos = {p.stem for p in TRI_HE_IMAGES.glob("*.jpg")}
    rows = [r for r in json.loads((POPE_DIR / "gqa" / "gqa_pope_seem_random.json").read_text())
            if Path(r["image"]).stem in photos]  # fmt: skip
    (target / "gqa").mkdir(parents=True)
    (target / "gqa" / "gqa_pope_seem_random.json").write_text(json.dumps(rows))
    return rows


@pytest.mark.full_data
def test_gqa_pope_photos_arrive_byte_exact(tmp_path: Path) -> None:
    rows = _gqa_pope(tmp_path / "pope")
    photos = {(TRI_HE_IMAGES / f"{Path(r['image']).stem}.jpg").read_bytes() for r in rows}
    assert len(photos) == 31
    out = tmp_path / "answers"
    with ScriptedServer(responder=_answer) as endpoint:
        args = ["respond", "-b", "pope", "--data", str(tmp_path / "pope"), "--bench-opt", f"images={TRI_HE_IMAGES}",
                "-m", f"openai/vlm?base_url={endpoint.base_url}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        sent = endpoint.images_sent()
    assert len(sent) == len(rows) and all(len(images) == 1 for images in sent)
    assert {mime for images in sent for mime, _ in images} == {"image/jpeg"}
    received = {data for images in sent for _, data in images}
    assert received == photos  # all 31 photos, each exactly the file's bytes
    identity = json.loads((out / "respond.json").read_text())["model"]
    assert identity["images"] == "as stored" and "max_side" not in identity


def test_max_side_shrinks_and_is_recorded(tmp_path: Path) -> None:
    import asyncio

    from halluscope.cache import Cache
    from halluscope.models.base import ChatTurn, GenerateRequest
    from halluscope.models.spec import create_model

    big = _photo(tmp_path / "big.jpg", RED, size=(600, 300), fmt="JPEG")

    async def ask(spec: str) -> dict[str, Any]:
        model = create_model(spec, cache=Cache(None))
        try:
            await model.generate(GenerateRequest(messages=[ChatTurn(text="Is there a dog?", images=[str(big)])]))
        finally:
            await model.aclose()
        return model.identity()

    with ScriptedServer(responder=_answer) as endpoint:
        stored = asyncio.run(ask(f"openai/vlm?base_url={endpoint.base_url}"))
        shrunk = asyncio.run(ask(f"openai/vlm?base_url={endpoint.base_url}&max_side=200"))
        roomy = asyncio.run(ask(f"openai/vlm?base_url={endpoint.base_url}&max_side=1000"))
        (_, first), (mime, second), (_, third) = (images[0] for images in endpoint.images_sent())
    assert first == big.read_bytes() and stored["images"] == "as stored"
    assert mime == "image/jpeg" and Image.open(io.BytesIO(second)).size == (200, 100)
    assert (shrunk["images"], shrunk["max_side"]) == ("re-encoded", 200)
    assert third == big.read_bytes()  # already within the size asked for: sent as stored
    assert (roomy["images"], roomy["max_side"]) == ("re-encoded", 1000)  # what was asked, recorded


def test_the_mime_type_is_read_from_the_content(tmp_path: Path) -> None:
    from halluscope.models.images import decode_data_url, image_data_url

    png_named_jpg = _photo(tmp_path / "chart.jpg", BLUE, fmt="PNG")
    assert decode_data_url(image_data_url(png_named_jpg)) == ("image/png", png_named_jpg.read_bytes())
    webp = _photo(tmp_path / "a.webp", GREEN, fmt="WEBP")
    assert decode_data_url(image_data_url(webp)) == ("image/webp", webp.read_bytes())
    gif = _photo(tmp_path / "a.gif", GREEN, fmt="GIF")
    assert decode_data_url(image_data_url(gif)) == ("image/gif", gif.read_bytes())
    # a format endpoints do not take is converted, losslessly, to PNG
    bmp = _photo(tmp_path / "a.bmp", GREY, fmt="BMP")
    mime, data = decode_data_url(image_data_url(bmp))
    assert mime == "image/png" and Image.open(io.BytesIO(data)).tobytes() == Image.open(bmp).tobytes()
