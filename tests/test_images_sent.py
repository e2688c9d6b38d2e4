"""The model under test sees each question's own photo, on every benchmark with pictures.

A scripted OpenAI-compatible server on loopback decodes the image of every request and tells which photo it
is by its pixels (a 16×16 thumbnail nearest to one of the candidate photos, read from the original files
independently of halluscope's encoder), so a test sees what a user would: one request per question, each
carrying the photo of its own sample, no answer served for another photo. Without the images folder, a run
asking a model refuses to start and says what is missing; a blind baseline is still allowed.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.api import EvaluationError, evaluate
from halluscope.benchmarks import BENCHMARKS
from halluscope.cli.main import app
from halluscope.models.images import decode_data_url
from halluscope.runs.selection import first_samples
from tests import tiny_vlms
from tests.paths import (
    AMBER_EXCERPT,
    HALLUSIONBENCH_EXCERPT,
    HQH_DIR,
    POPE_DIR,
    POPE_EXCERPT,
    TRI_HE_IMAGES,
)
from tests.scripted_server import Reply, ScriptedServer, completion

Thumb = list[float]


def thumbnail(source: Any) -> Thumb:
    """A 16×16 RGB thumbnail of an image file or bytes, as a flat list of floats."""
    import io

    from PIL import Image

    opened = Image.open(io.BytesIO(source) if isinstance(source, bytes) else source)
    small = opened.convert("RGB").resize((16, 16), Image.Resampling.BILINEAR)
    return [float(v) for v in small.tobytes()]


def distance(a: Thumb, b: Thumb) -> float:
    return sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a)


@dataclass
class PhotoServer:
    """A scripted server that answers with the name of the photo it was sent (or "no image")."""

    candidates: Mapping[str, Path]
    seen: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.thumbs = {name: thumbnail(path) for name, path in self.candidates.items()}

    def identify(self, url: str) -> str:
        _, data = decode_data_url(url)
        got = thumbnail(data)
        ranked = sorted((distance(got, t), name) for name, t in self.thumbs.items())
        best, name = ranked[0]
        assert best < 4.0, f"the image sent matches no candidate photo (nearest {name}, distance {best:.1f})"
        if len(ranked) > 1:
            assert ranked[1][0] > 3 * best + 4, f"the image sent is ambiguous between {name} and {ranked[1][1]}"
        return name

    def __call__(self, body: Any) -> Reply:
        content = body["messages"][-1]["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
        text = " ".join(p["text"] for p in parts if p.get("type") == "text")
        photos = [self.identify(u) for u in urls]
        with self.lock:
            self.seen.append({"question": text, "photos": photos})
        return completion(f"No. [{' '.join(photos) or 'no image'}]")


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _answered_photo(row: Mapping[str, Any]) -> str:
    return str(row["response"]).split("[", 1)[1].rstrip("]")


def _tri_he_photos() -> dict[str, Path]:
    return {p.stem: p for p in sorted(TRI_HE_IMAGES.glob("*.jpg"))}


# -- POPE over the GQA photos --------------------------------------------------------------------------------


def _gqa_pope_folder(target: Path, setting: str = "random") -> list[dict[str, Any]]:
    """POPE's GQA set of ``setting`` cut to the questions about photos we have (the Tri-HE folder holds 31)."""
    photos = _tri_he_photos()
    name = f"gqa/gqa_pope_seem_{setting}.json"
    rows = [r for r in json.loads((POPE_DIR / name).read_text()) if Path(r["image"]).stem in photos]
    (target / "gqa").mkdir(parents=True)
    (target / name).write_text(json.dumps(rows))
    return rows


@pytest.mark.full_data
def test_pope_gqa_run_sends_each_question_its_own_photo(tmp_path: Path, cli: CliRunner) -> None:
    data = tmp_path / "pope"
    rows = _gqa_pope_folder(data)
    assert len(rows) == 186 and len({r["image"] for r in rows}) == 31
    server = PhotoServer(_tri_he_photos())
    cache = tmp_path / "cache.sqlite"
    with ScriptedServer(responder=server) as endpoint:
        model = f"openai/vlm?base_url={endpoint.base_url}"
        args = ["run", "-b", "pope", "--data", str(data), "--bench-opt", f"images={TRI_HE_IMAGES}",
                "-m", model, "--cache", str(cache), "-q"]  # fmt: skip
        result = cli.invoke(app, [*args, "--out", str(tmp_path / "run")])
        assert result.exit_code == 0, result.output
        # one request per question, each with exactly one photo: its own (the questions repeat across
        # photos, "Is there a tree in the image?", so a cache keyed on the text alone would ask fewer)
        assert len(server.seen) == 186 == len(endpoint.chat_requests())
        assert all(len(s["photos"]) == 1 for s in server.seen)
        asked = sorted((s["question"], s["photos"][0]) for s in server.seen)
        assert asked == sorted((r["text"], Path(r["image"]).stem) for r in rows)
        assert len({q for q, _ in asked}) < len(asked)  # the same question about several photos

        run = tmp_path / "run"
        answers = {r["id"]: r for r in _lines(run / "responses.jsonl")}
        records = _lines(run / "samples.jsonl")
        assert len(answers) == len(records) == 186
        image_of = {f"gqa-random-{r['question_id']}": Path(r["image"]).stem for r in rows}
        assert all(_answered_photo(answers[i]) == image_of[i] for i in image_of)
        spec = json.loads((run / "spec.json").read_text())["benchmark"]
        assert spec["images"] == str(TRI_HE_IMAGES)
        assert (spec["images_found"], spec["images_needed"]) == (186, 186)
        assert all(r["failure"] is None and r["response"] for r in records)

        # again into another run directory: every answer comes from the cache, each still its photo's own
        again = cli.invoke(app, [*args, "--out", str(tmp_path / "again")])
        assert again.exit_code == 0, again.output
        assert len(endpoint.chat_requests()) == 186
        cached = {r["id"]: r for r in _lines(tmp_path / "again" / "responses.jsonl")}
        assert all(r["metadata"]["cached"] for r in cached.values())
        assert all(_answered_photo(cached[i]) == image_of[i] for i in image_of)


@pytest.mark.full_data
def test_pope_model_run_without_images_refuses_to_start(tmp_path: Path, cli: CliRunner) -> None:
    data = tmp_path / "pope"
    _gqa_pope_folder(data)
    with ScriptedServer(responder=PhotoServer(_tri_he_photos())) as endpoint:
        model = f"openai/vlm?base_url={endpoint.base_url}"
        args = ["run", "-b", "pope", "--data", str(data), "-m", model, "--no-cache", "-q"]
        result = cli.invoke(app, [*args, "--out", str(tmp_path / "run")])
        assert result.exit_code != 0
        message = " ".join(result.output.split())
        assert "186 of the 186 selected pope samples" in message
        assert "no images folder was given" in message and "gqa-random-" in message
        assert "--bench-opt images=DIR" in message

        # a folder holding only some of the photos: the missing files are named
        partial = tmp_path / "some"
        partial.mkdir()
        photos = sorted(_tri_he_photos().items())
        for _, path in photos[:5]:
            shutil.copy(path, partial / path.name)
        result = cli.invoke(
            app, [*args, "--bench-opt", f"images={partial}", "--out", str(tmp_path / "run2")]
        )
        assert result.exit_code != 0
        message = " ".join(result.output.replace("\n", "").split())
        assert "of the 186 selected pope samples" in message
        assert str(partial / photos[5][1].name) in message or str(partial) in message
        assert endpoint.chat_requests() == []  # nobody was asked anything


# -- HQH over its Visual Genome photos -----------------------------------------------------------------------


@pytest.mark.full_data
def test_hqh_respond_sends_each_question_its_own_photo(tmp_path: Path, cli: CliRunner) -> None:
    photos = _tri_he_photos()
    items = [i for i in json.loads((HQH_DIR / "HQH.json").read_text()) if str(i["image_id"]) in photos]
    assert len({i["image_id"] for i in items}) == 13
    data = tmp_path / "hqh"
    data.mkdir()
    (data / "HQH.json").write_text(json.dumps(items))
    server = PhotoServer(photos)
    with ScriptedServer(responder=server) as endpoint:
        out = tmp_path / "answers"
        args = ["respond", "-b", "hqh", "--data", str(data / "HQH.json"), "--bench-opt",
                f"images={TRI_HE_IMAGES}", "-m", f"openai/vlm?base_url={endpoint.base_url}",
                "--out", str(out), "--no-cache", "--concurrency", "1", "-q"]  # fmt: skip
        result = cli.invoke(app, args)
        assert result.exit_code == 0, result.output
        # HQH asks one question twice about one photo (two items of image 2376529): asked once, the second
        # answer is the first's (one at a time here, so the second finds it in the run's cache)
        assert len(endpoint.chat_requests()) == len({(i["image_id"], i["instruction"]) for i in items}) == 18
    answers = {r["id"]: r for r in _lines(out / "responses.jsonl")}
    assert {k: _answered_photo(v) for k, v in answers.items()} == {str(i["id"]): str(i["image_id"]) for i in items}


# -- HallusionBench and AMBER on pictures made in the official folder layouts -----------------------------


def _hallusion_rows() -> list[dict[str, Any]]:
    """A few questions of each visual_input (0: no figure, 1: original, 2: edited), VD and VS."""
    rows = json.loads((HALLUSIONBENCH_EXCERPT / "HallusionBench.json").read_text())
    chosen: list[dict[str, Any]] = []
    for category in ("VD", "VS"):
        for visual_input in ("0", "1", "2"):
            picked = [r for r in rows if r["category"] == category and r["visual_input"] == visual_input][:2]
            chosen += picked
    assert {r["visual_input"] for r in chosen} == {"0", "1", "2"}
    return chosen


def _draw_figures(folder: Path, relative: list[str]) -> dict[str, Path]:
    made = {}
    for seed, name in enumerate(sorted(set(relative))):
        made[name] = tiny_vlms.draw_image(folder / name, size=64 + 8 * seed, seed=100 + seed)
    return made


def test_hallusionbench_figures_by_the_official_layout(tmp_path: Path, cli: CliRunner) -> None:
    rows = _hallusion_rows()
    data = tmp_path / "data"
    data.mkdir()
    (data / "HallusionBench.json").write_text(json.dumps(rows))
    figures_root = tmp_path / "figures"
    with_figure = [r for r in rows if r["filename"]]
    made = _draw_figures(figures_root / "hallusion_bench", [r["filename"].removeprefix("./") for r in with_figure])
    server = PhotoServer(made)
    with ScriptedServer(responder=server) as endpoint:
        out = tmp_path / "answers"
        args = ["respond", "-b", "hallusionbench", "--data", str(data), "--bench-opt", f"images={figures_root}",
                "-m", f"openai/vlm?base_url={endpoint.base_url}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
        result = cli.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert len(endpoint.chat_requests()) == len(rows)
    answers = {r["id"]: _answered_photo(r) for r in _lines(out / "responses.jsonl")}
    for row in rows:
        sample_id = "-".join(str(row[k]) for k in ("category", "subcategory", "set_id", "figure_id", "question_id"))
        # visual_input 0 is asked without a figure by design; the others with their own
        expected = row["filename"].removeprefix("./") if row["visual_input"] != "0" else "no image"
        assert answers[sample_id] == expected, sample_id
    bench = BENCHMARKS.create("hallusionbench", data=data, images=figures_root)
    text_only = [s for s in bench.samples() if s.metadata.get("text_only")]
    assert len(text_only) == sum(r["visual_input"] == "0" for r in rows)
    spec = bench.spec()
    assert spec["images_found"] == spec["images_needed"] == len(rows) - len(text_only)
    assert spec["text_only_samples"] == len(text_only)


def test_amber_images_from_its_image_folder(tmp_path: Path, cli: CliRunner) -> None:
    # The excerpt's 20 descriptions come first, then 5 of its yes/no existence questions.
    bench = first_samples(BENCHMARKS.create("amber", data=AMBER_EXCERPT, types="generative,existence"), 25)
    samples = list(bench.samples())
    queries = {q["id"]: q["image"] for q in json.loads((AMBER_EXCERPT / "query" / "query_all.json").read_text())}
    names = [queries[int(s.id)] for s in samples]
    made = _draw_figures(tmp_path / "amber-images" / "image", names)
    server = PhotoServer(made)
    with ScriptedServer(responder=server) as endpoint:
        out = tmp_path / "answers"
        args = ["respond", "-b", "amber", "--data", str(AMBER_EXCERPT), "--bench-opt", "types=generative,existence",
                "--limit", "25", "--bench-opt", f"images={tmp_path / 'amber-images'}",
                "-m", f"openai/vlm?base_url={endpoint.base_url}", "--out", str(out), "--no-cache", "-q"]  # fmt: skip
        result = cli.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert len(endpoint.chat_requests()) == len(samples) == 25
    answers = {r["id"]: _answered_photo(r) for r in _lines(out / "responses.jsonl")}
    assert answers == {s.id: queries[int(s.id)] for s in samples}
    assert "Describe this image." in {s["question"] for s in server.seen}


# -- refusing, failing, and the blind baseline ---------------------------------------------------------------


def _pope_excerpt_args(endpoint: ScriptedServer, out: Path, *extra: str, limit: int = 4) -> list[str]:
    return ["respond", "-b", "pope", "--data", str(POPE_EXCERPT), "--bench-opt", "sources=coco",
            "--bench-opt", "settings=random", "--limit", str(limit), *extra, "--out", str(out), "--no-cache", "-q",
            "-m", f"openai/vlm?base_url={endpoint.base_url}"]  # fmt: skip


def test_respond_without_images_refuses_and_names_what_is_missing(tmp_path: Path, cli: CliRunner) -> None:
    with ScriptedServer(responder=PhotoServer({})) as endpoint:
        result = cli.invoke(app, _pope_excerpt_args(endpoint, tmp_path / "a"))
        assert result.exit_code != 0
        message = " ".join(result.output.split())
        assert "4 of the 4 selected pope samples" in message and "coco-random-1" in message
        empty = tmp_path / "empty"
        empty.mkdir()
        result = cli.invoke(app, _pope_excerpt_args(endpoint, tmp_path / "b", "--bench-opt", f"images={empty}"))
        assert result.exit_code != 0
        message = " ".join(result.output.replace("\n", "").split())
        first = json.loads((POPE_EXCERPT / "coco" / "coco_pope_random.json").read_text().splitlines()[0])["image"]
        assert str(empty / first) in message
        assert endpoint.chat_requests() == []


def test_missing_images_fail_records_those_samples_and_asks_the_rest(tmp_path: Path, cli: CliRunner) -> None:
    rows = [json.loads(line) for line in (POPE_EXCERPT / "coco" / "coco_pope_random.json").read_text().splitlines()]
    folder = tmp_path / "coco"
    first_image = rows[0]["image"]
    made = _draw_figures(folder, [first_image])  # only the first photo is there
    with_photo = sum(r["image"] == first_image for r in rows[:10])
    assert 0 < with_photo < 10
    with ScriptedServer(responder=PhotoServer(made)) as endpoint:
        out = tmp_path / "a"
        extra = ("--bench-opt", f"images={folder}", "--bench-opt", "missing_images=fail")
        result = cli.invoke(app, _pope_excerpt_args(endpoint, out, *extra, limit=10))
        assert result.exit_code == 0, result.output
        assert len(endpoint.chat_requests()) == with_photo
        assert "not asked: their image is missing" in " ".join(result.output.split())
    errors = _lines(out / "respond-errors.jsonl")
    assert len(errors) == 10 - with_photo
    assert all(e["error"].startswith("MissingImage: image not found") for e in errors)
    assert {_answered_photo(r) for r in _lines(out / "responses.jsonl")} == {first_image}


def test_a_blind_baseline_is_not_refused(tmp_path: Path, cli: CliRunner) -> None:
    server = PhotoServer({})
    with ScriptedServer(responder=server) as endpoint:
        args = _pope_excerpt_args(endpoint, tmp_path / "a")
        args[-1] = f"blind/openai/llm?base_url={endpoint.base_url}"
        result = cli.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert len(endpoint.chat_requests()) == 4
    assert all(s["photos"] == [] for s in server.seen)


def test_evaluate_with_a_model_refuses_without_images(tmp_path: Path) -> None:
    with ScriptedServer(responder=PhotoServer({})) as endpoint, pytest.raises(EvaluationError) as error:
        evaluate(
            "pope", data=POPE_EXCERPT, model=f"openai/vlm?base_url={endpoint.base_url}", limit=3,
            bench_options={"sources": "aokvqa", "settings": "popular"}, out=tmp_path / "run", cache=False,
            progress=False,
        )
    assert "3 of the 3 selected pope samples" in str(error.value)
    assert "--bench-opt images=DIR" in str(error.value)


# -- the hf backend: pixel values of each sample's photo reach the model -------------------------------------


def _hooked_pixels(model: Any) -> Iterator[list[Any]]:
    """Record every ``pixel_values`` tensor the vision tower receives."""
    captured: list[Any] = []
    tower = model.model.model.vision_tower if hasattr(model.model, "model") else model.model.vision_tower

    def hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pixels = args[0] if args else kwargs["pixel_values"]
        captured.extend(row.detach().clone() for row in pixels)

    handle = tower.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield captured
    finally:
        handle.remove()


@pytest.mark.full_data
def test_hf_backend_sees_each_gqa_photo(tmp_path: Path) -> None:
    import asyncio
    from contextlib import contextmanager

    import torch
    from PIL import Image

    from halluscope.cache import Cache
    from halluscope.models.hf import HFModel
    from halluscope.runs.respond import collect_responses

    data = tmp_path / "pope"
    rows = _gqa_pope_folder(data)
    # one question per photo: 31 samples, each its own photo (the first question asked about it)
    firsts = {r["image"]: r for r in reversed(rows)}
    (data / "gqa" / "gqa_pope_seem_random.json").write_text(json.dumps(list(firsts.values())))
    bench = BENCHMARKS.create("pope", data=data, images=TRI_HE_IMAGES)
    samples = list(bench.samples())
    assert len(samples) == 31
    assert len({s.prompt for s in samples}) < 31  # the same question about several photos: asked for each
    path = tiny_vlms.build_tiny_llava(tmp_path / "llava")
    model = HFModel.from_spec(str(path), batch_size=4, cache=Cache(None))

    def expected(image_path: str) -> Any:
        picture = Image.open(image_path).convert("RGB")
        return model.processor.image_processor(images=[picture], return_tensors="pt")["pixel_values"][0]

    hooked = contextmanager(_hooked_pixels)
    with hooked(model) as captured:
        answers = asyncio.run(collect_responses(bench, model, tmp_path / "out", show_progress=False, max_tokens=3))
    assert len(answers) == 31
    assert len(captured) == 31  # one image per question reached the vision tower, none reused
    wanted = {s.id: expected(str(s.image_path)) for s in samples}
    matched = []
    for pixels in captured:
        hits = [
            i for i, w in wanted.items() if w.shape == pixels.shape and torch.allclose(w, pixels.float(), atol=1e-4)
        ]
        assert len(hits) == 1
        matched.append(hits[0])
    assert sorted(matched) == sorted(wanted)


# -- the cache key holds the image's content ----------------------------------------------------------------


def test_openai_cache_key_holds_the_image_content(tmp_path: Path) -> None:
    import asyncio

    from halluscope.cache import Cache
    from halluscope.models.base import ChatTurn, GenerateRequest
    from halluscope.models.spec import create_model

    first = tiny_vlms.draw_image(tmp_path / "first.png", seed=1)
    second = tiny_vlms.draw_image(tmp_path / "second.png", seed=2)
    server = PhotoServer({"first": first, "second": second})

    def ask(path: Path) -> GenerateRequest:
        return GenerateRequest(messages=[ChatTurn(text="Is there a dog in the image?", images=[str(path)])])

    async def answers(paths: list[Path], cache: Cache, base_url: str) -> list[tuple[str, bool]]:
        model = create_model(f"openai/vlm?base_url={base_url}", cache=cache)
        try:
            results = [await model.generate(ask(p)) for p in paths]
        finally:
            await model.aclose()
        return [(r.text, r.cached) for r in results]

    with ScriptedServer(responder=server) as endpoint:
        cache = Cache(tmp_path / "cache.sqlite")
        got = asyncio.run(answers([first, second, first], cache, endpoint.base_url))
        assert got == [("No. [first]", False), ("No. [second]", False), ("No. [first]", True)]
        assert len(endpoint.chat_requests()) == 2
        # keyed by what the file holds, not by its name: a new photo under the old name is asked again
        shutil.copy(tiny_vlms.draw_image(tmp_path / "third.png", seed=3), first)
        server.thumbs["third"] = thumbnail(tmp_path / "third.png")
        del server.thumbs["first"]
        again = asyncio.run(answers([first], cache, endpoint.base_url))
        assert again == [("No. [third]", False)] and len(endpoint.chat_requests()) == 3


def test_hf_cache_key_holds_the_image_content(tmp_path: Path) -> None:
    import asyncio

    from halluscope.cache import Cache
    from halluscope.models.base import ChatTurn, GenerateRequest, GenerateResult
    from halluscope.models.hf import cached_generate

    first = tiny_vlms.draw_image(tmp_path / "first.png", seed=1)
    same_content = tmp_path / "copy.png"
    shutil.copy(first, same_content)
    second = tiny_vlms.draw_image(tmp_path / "second.png", seed=2)
    computed: list[str] = []

    async def compute(request: GenerateRequest) -> GenerateResult:
        computed.append(request.messages[0].images[0])
        return GenerateResult(text=f"answer {len(computed)}")

    async def run(paths: list[Path]) -> list[GenerateResult]:
        cache = Cache(None)
        out = []
        for path in paths:
            request = GenerateRequest(messages=[ChatTurn(text="Is there a dog?", images=[str(path)])])
            out.append(await cached_generate(cache, {"provider": "hf", "path": "tiny"}, request, compute))
        return out

    results = asyncio.run(run([first, second, same_content]))
    assert computed == [str(first), str(second)]  # two photos, two generations; the copy is the first photo
    assert [r.text for r in results] == ["answer 1", "answer 2", "answer 1"] and results[2].cached


def test_a_run_made_before_images_were_counted_still_resumes(tmp_path: Path, cli: CliRunner) -> None:
    from tests.layouts import tri_he_layout

    bench = first_samples(BENCHMARKS.create("tri-he", data=tri_he_layout()), 3)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": s.id, "response": "A cat on a mat."}) + "\n" for s in bench.samples()))
    out = tmp_path / "run"
    args = ["run", "-b", "tri-he", "--data", str(tri_he_layout()), "--limit", "3", "-r", str(answers),
            "--out", str(out), "--no-cache", "-q"]  # fmt: skip
    assert cli.invoke(app, args).exit_code == 0
    spec_path = out / "spec.json"
    spec = json.loads(spec_path.read_text())
    assert spec["benchmark"]["images_needed"] == 3
    metrics = (out / "metrics.json").read_text()
    for key in ("images_found", "images_needed"):
        del spec["benchmark"][key]
    spec_path.write_text(json.dumps(spec))
    again = cli.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert (out / "metrics.json").read_text() == metrics
    assert json.loads(spec_path.read_text())["benchmark"]["images_needed"] == 3
