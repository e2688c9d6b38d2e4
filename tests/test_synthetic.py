"""Synthetic scenes: deterministic builds, relations true by construction (checked on geometry and pixels),
questions resting on true facts, Reefknot-kind items in the official layout, and the synthetic benchmark."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter
from typer.testing import CliRunner

from halluscope.builders.render import COLOURS, object_mask
from halluscope.builders.synthetic import (
    HEIGHT,
    KINDS,
    RELATIONS,
    WIDTH,
    SceneObject,
    SyntheticDataError,
    build_synthetic,
    load_scenes,
    make_scene,
)
from halluscope.runs.selection import first_samples

N_SCENES = 120


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synthetic") / "set"
    build_synthetic(out, n=10, seed=3)
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_gives_the_same_bytes_and_a_smaller_n_is_a_prefix(built: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    build_synthetic(again, n=10, seed=3)
    assert _files(again) == _files(built)

    other = tmp_path / "other"
    build_synthetic(other, n=10, seed=4)
    assert _files(other)["images/syn00000.jpg"] != _files(built)["images/syn00000.jpg"]

    small = tmp_path / "small"
    build_synthetic(small, n=4, seed=3)
    for index in range(4):
        name = f"images/syn{index:05d}.jpg"
        assert _files(small)[name] == _files(built)[name]
    assert load_scenes(small)["syn00003"] == load_scenes(built)["syn00003"]


def test_layout_files_and_counts(built: Path) -> None:
    assert sorted(p.name for p in (built / "images").iterdir()) == [f"syn{i:05d}.jpg" for i in range(10)]
    raw = json.loads((built / "scenes.json").read_text())
    assert raw["format"] == "halluscope-synthetic" and raw["seed"] == 3 and raw["n"] == 10
    questions = json.loads((built / "questions.json").read_text())
    assert len(questions) == 40
    assert [q["id"] for q in questions[:4]] == ["syn00000-0", "syn00000-1", "syn00000-2", "syn00000-3"]
    with Image.open(built / "images" / "syn00000.jpg") as image:
        assert image.size == (WIDTH, HEIGHT) and image.format == "JPEG"


def _box_gap_left(a: SceneObject, b: SceneObject) -> int:
    return b.box[0] - a.box[2]


def test_every_true_relation_holds_on_the_geometry() -> None:
    """Independent checks of what each stored relation means, over many generated scenes."""
    seen: Counter[str] = Counter()
    for index in range(N_SCENES):
        scene = make_scene(11, index)
        objects = {o.name: o for o in scene.objects}
        assert len(objects) == len(scene.objects), "object names are unique within an image"
        assert not set(scene.relations) & set(scene.false_relations)
        for s, r, o in scene.relations:
            a, b = objects[s], objects[o]
            seen[r] += 1
            if r == "to the left of":
                assert a.box[2] < b.box[0]
            elif r == "to the right of":
                assert a.box[0] > b.box[2]
            elif r == "above":
                assert a.box[3] <= b.box[1] + 2 and min(a.box[2], b.box[2]) > max(a.box[0], b.box[0])
            elif r == "below":
                assert a.box[1] >= b.box[3] - 2 and min(a.box[2], b.box[2]) > max(a.box[0], b.box[0])
            elif r == "on":
                assert KINDS[b.kind].support, f"{s} rests on a {b.kind}, which has no flat top"
                assert abs(a.box[3] - b.box[1]) <= 2 and b.box[0] <= a.cx <= b.box[2]
                assert a.width < b.width
            elif r == "next to":
                gap = max(_box_gap_left(a, b), _box_gap_left(b, a))
                assert 0 < gap <= 40
            elif r == "in front of":
                assert a.layer > b.layer and a.box[3] > b.box[3]
                assert min(a.box[2], b.box[2]) > max(a.box[0], b.box[0])
                assert min(a.box[3], b.box[3]) > max(a.box[1], b.box[1])
            elif r == "behind":
                assert a.layer < b.layer and a.box[3] < b.box[3]
            else:  # pragma: no cover
                pytest.fail(f"unexpected relation {r!r}")
        for obj in scene.objects:
            assert 0 <= obj.box[0] < obj.box[2] <= WIDTH and 0 <= obj.box[1] < obj.box[3] <= HEIGHT
            assert obj.visible >= 0.3
    assert set(seen) == set(RELATIONS), f"every relation occurs: {seen}"


def test_false_relations_are_clearly_false() -> None:
    for index in range(N_SCENES):
        scene = make_scene(11, index)
        objects = {o.name: o for o in scene.objects}
        for s, r, o in scene.false_relations:
            a, b = objects[s], objects[o]
            if r == "to the left of":
                assert a.box[0] > b.box[2]
            elif r == "to the right of":
                assert a.box[2] < b.box[0]
            elif r == "above":
                assert a.box[3] > b.box[3] or a.box[1] >= b.box[3] - 2
            elif r == "in front of":
                assert (o, "in front of", s) in scene.relations
            elif r == "behind":
                assert (o, "behind", s) in scene.relations
            elif r == "on":
                touching = abs(a.box[3] - b.box[1]) <= 2 and b.box[0] <= a.cx <= b.box[2]
                assert not touching
            elif r == "next to":
                assert max(_box_gap_left(a, b), _box_gap_left(b, a)) >= 120


def _near(pixel: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 40) -> bool:
    return bool(np.abs(pixel.astype(int) - np.array(rgb)).max() <= tolerance)


def test_pixels_show_each_object_in_its_colour_and_the_front_object_over_the_back(built: Path) -> None:
    for image_id, scene in load_scenes(built).items():
        pixels = np.asarray(Image.open(built / scene.image).convert("RGB"))
        masks = {o.name: np.asarray(object_mask(o.shape(), WIDTH, HEIGHT), dtype=bool) for o in scene.objects}
        for obj in scene.objects:
            # Inner pixels (the outline is darker): the mask shrunk by 3 px, minus what covers it.
            inner = object_mask(obj.shape(), WIDTH, HEIGHT).convert("L").filter(ImageFilter.MinFilter(7))
            own = np.asarray(inner) > 0
            for other in scene.objects:
                if other.layer > obj.layer:
                    own &= ~masks[other.name]
            assert own.sum() > 20, f"{image_id}: {obj.name} has no visible inside"
            median = np.median(pixels[own], axis=0)
            assert _near(median, COLOURS[obj.colour]), f"{image_id}: {obj.name} is not {obj.colour}: {median}"
        for s, r, o in scene.relations:
            if r != "in front of":
                continue
            overlap = masks[s] & masks[o]
            assert overlap.sum() > 20, f"{image_id}: {s} does not cover {o}"
            median = np.median(pixels[overlap], axis=0)
            assert _near(median, COLOURS[scene.object(s).colour]), f"{image_id}: {o} shows through {s}"


def test_questions_rest_on_true_facts_and_tri_he_tools_read_the_folder(built: Path) -> None:
    from halluscope.benchmarks.tri_he import TriHE, load_scene_graphs

    scenes = load_scenes(built)
    questions = json.loads((built / "questions.json").read_text())
    templates = Counter(q["template"] for q in questions)
    assert len(templates) >= 4
    for question in questions:
        scene = scenes[question["image_id"]]
        graph = scene.graph()
        for s, r, o in question["triplets"]:
            if r == "is":
                assert o in graph.attributes(s), question
            else:
                assert r in graph.relations_between(s, o), question
            assert s in question["answer"] and o in question["answer"]

    graphs = load_scene_graphs(built / "tri-he.json")
    assert set(graphs) == set(scenes)
    trihe = TriHE(data=built)
    samples = list(trihe.samples())
    assert len(samples) == len(questions)
    assert Path(samples[0].image_path or "").exists()


def test_reefknot_items_in_the_official_layout(built: Path) -> None:
    scenes = load_scenes(built)
    rows = {
        name: [json.loads(line) for line in (built / "reefknot" / name).read_text().splitlines()]
        for name in ("YESNO.jsonl", "Multichoice.jsonl", "VQA.jsonl")
    }
    yesno = rows["YESNO.jsonl"]
    assert yesno and len(yesno) % 2 == 0
    for first, second in zip(yesno[::2], yesno[1::2], strict=True):
        assert (first["label"], second["label"]) == ("yes", "no")
        assert first["type"] == "Yes/No" and first["relation_type"] == "perception"
        scene = scenes[second["image_id"]]
        question = second["query_prompt"]
        assert any(
            question == f"Is the {s} {r} the {o} in this photo? Please answer yes or no."
            for s, r, o in scene.false_relations
        ), question
    letters = Counter(row["label"] for row in rows["Multichoice.jsonl"])
    assert set(letters) <= set("ABCD") and max(letters.values()) - min(letters.values()) <= 1
    for row in rows["Multichoice.jsonl"]:
        scene = scenes[row["image_id"]]
        prompt = row["query_prompt"]
        body = prompt.split(" in this photo? ")[1].removesuffix(", please choose.")
        s, o = prompt.removeprefix("What is the relation with ").split(" in this photo?")[0].split(" and ")
        options = {}
        for letter, nxt in zip("ABCD", "BCD_", strict=True):
            start = body.index(f"{letter}. ") + 3
            end = body.index(f" {nxt}. ") if nxt != "_" else len(body)
            options[letter] = body[start:end]
        true_options = [k for k, rel in options.items() if (s, rel, o) in scene.relations]
        assert true_options == [row["label"]], row
    for row in rows["VQA.jsonl"]:
        s, rest = row["label"].split(" is ", 1)
        assert row["query_prompt"].endswith(f"format:{s} is <relation> {rest.split(' ')[-1]}")


def test_reefknot_benchmark_reads_the_built_folder(built: Path) -> None:
    from halluscope.benchmarks import BENCHMARKS

    bench = BENCHMARKS.create("reefknot", data=built / "reefknot", images=built / "images")
    samples = list(bench.samples())
    lines = sum(
        len((built / "reefknot" / n).read_text().splitlines())
        for n in ("YESNO.jsonl", "Multichoice.jsonl", "VQA.jsonl")
    )
    assert len(samples) == lines
    assert all(s.image_path and Path(s.image_path).exists() for s in samples)


def test_synthetic_benchmark_samples_scenes_and_errors(built: Path, tmp_path: Path) -> None:
    from halluscope.benchmarks import BENCHMARKS

    bench = BENCHMARKS.create("synthetic", data=built)
    samples = list(first_samples(bench, 7).samples())
    assert [s.id for s in samples][:2] == ["syn00000-0", "syn00000-1"] and len(samples) == 7
    scene = bench.scene(samples[0])
    assert scene is not None and scene.graph.graph["false_relations"]
    assert samples[0].metadata["gt_triplets"][0].startswith("(")

    with pytest.raises(SyntheticDataError, match=r"no scenes\.json"):
        BENCHMARKS.create("synthetic", data=tmp_path)
    (tmp_path / "junk.txt").write_text("x")
    with pytest.raises(SyntheticDataError, match="not empty"):
        build_synthetic(tmp_path, n=1)
    broken = tmp_path / "broken"
    build_synthetic(broken, n=1)
    (broken / "scenes.json").write_text('{"format": "something-else"}')
    with pytest.raises(SyntheticDataError, match="rebuild"):
        load_scenes(broken)


def test_build_command(tmp_path: Path) -> None:
    from halluscope.cli.main import app

    result = CliRunner().invoke(
        app, ["build", "synthetic", "--n", "3", "--seed", "1", "--out", str(tmp_path / "s")]
    )
    assert result.exit_code == 0, result.output
    assert "true relations" in result.output
    assert len(list((tmp_path / "s" / "images").glob("*.jpg"))) == 3
    bad = CliRunner().invoke(app, ["build", "synthetic", "--n", "0", "--out", str(tmp_path / "t")])
    assert bad.exit_code != 0 and "at least 1" in bad.output
