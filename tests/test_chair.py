"""CHAIR over captions against a small hand-made COCO instances file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halluscope.metrics.chair import CocoObjects, chair_scores, find_mentions


def _coco(tmp_path: Path) -> Path:
    data = {
        "images": [{"id": 1}, {"id": 2}],
        "categories": [{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}, {"id": 58, "name": "hot dog"},
                       {"id": 3, "name": "car"}],
        "annotations": [{"image_id": 1, "category_id": 1}, {"image_id": 1, "category_id": 18},
                        {"image_id": 2, "category_id": 58}],
    }
    path = tmp_path / "instances_mini.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_mentions_use_synonyms_plurals_and_longest_phrase() -> None:
    assert find_mentions("Two men walk their puppies past a car.") == ["person", "dog", "car"]
    assert find_mentions("A hot dog on a plate.", {"hot dog": ("hotdog",), "dog": ()}) == ["hot dog"]


def test_chair_on_coco_annotations(tmp_path: Path) -> None:
    coco = CocoObjects.from_annotations(_coco(tmp_path))
    result = coco.score({1: "A woman with her dog next to a car.", 2: "A hot dog with mustard."})
    assert result.mentions == 4 and result.hallucinated == 1
    assert result.chair_i == pytest.approx(25.0)
    assert result.chair_s == pytest.approx(50.0)
    assert result.per_caption == [["car"], []]
    with pytest.raises(ValueError, match="no COCO annotations for image id"):
        coco.score({7: "A dog."})


def test_bad_annotation_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"images": []}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a COCO instances file"):
        CocoObjects.from_annotations(path)


def test_empty_inputs_give_no_rate() -> None:
    result = chair_scores([[]], [{"dog"}])
    assert result.chair_i is None and result.chair_s == 0.0
