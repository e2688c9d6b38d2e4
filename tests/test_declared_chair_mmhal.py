"""CHAIR's and MMHal-Bench's declared headlines: each declared figure is the benchmark's own, and its
interval resamples what the answers really depend on (the caption for CHAIR's mentions, the photo for
MMHal-Bench's answers), not single mentions or answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halluscope.benchmarks.chair import Chair
from halluscope.benchmarks.mmhal import MMHal
from halluscope.judges.mmhal import parse_rating
from halluscope.metrics.declared import declared_intervals, declared_value
from halluscope.metrics.mmhal import TYPES
from halluscope.metrics.stats import proportion_interval
from halluscope.runs.runner import headline_intervals
from halluscope.stages import BenchmarkInterface
from halluscope.types import SampleRecord
from tests.paths import FULL_DATA, MMHAL_DIR
from tests.test_chair_coco import _mini_truth, _score

OPERA_GREEDY = FULL_DATA / "chair-coco" / "opera-released-captions" / "llava-1.5" / "greedy.jsonl"
BLIP2_REVIEW = MMHAL_DIR / "third-party-gpt4o-review" / "blip2_mmhal_eval.json"


def _declared_equal_reported(bench: BenchmarkInterface, records: list[SampleRecord]) -> dict[str, float | None]:
    """Every declared headline's point estimate, checked equal to the figure ``metrics()`` reports."""
    reported = bench.metrics(records).metrics
    tables = bench.metric_tables(records)
    values = {d.name: declared_value(d, tables) for d in bench.metric_declarations()}
    for name, value in values.items():
        if value is None:
            assert reported.get(name) is None, name
        else:
            assert value == pytest.approx(reported[name], rel=1e-12), name
    return values


# -- CHAIR -------------------------------------------------------------------------------------------------


def test_chair_declared_figures_are_the_reported_ones_and_count_captions(tmp_path: Path) -> None:
    """Hand-written captions, one image missing from the ground truth and one unanswered: every declared
    figure is the one metrics.json reports, over the two scored captions."""
    _mini_truth(tmp_path, {"1": ["person", "dining table"], "2": ["bird"], "3": ["chair"]})
    ids = tmp_path / "ids.txt"
    ids.write_text("1\n2\n3\n99\n", encoding="utf-8")
    bench = Chair(tmp_path, ids=ids, tagger="perceptron")
    records = _score(bench, {
        "1": "A woman sits at a table with a duck and a tie.",
        "2": "Two ducks on a stool.",
        "99": "A man.",
    })  # fmt: skip
    assert sum(r.failure is None for r in records) == 2
    values = _declared_equal_reported(bench, records)
    assert set(values) == {"CHAIRs", "CHAIRi", "Recall", "Len"}
    assert values["CHAIRs"] == pytest.approx(100.0)  # both captions name an absent object
    intervals, _ = headline_intervals(bench, records)
    for name in values:
        interval = intervals[name]
        assert interval is not None and interval["unit"] == "caption" and interval["n"] == interval["units"] == 2
    assert intervals["CHAIRs"] is not None and intervals["CHAIRs"]["method"] == "wilson"


@pytest.mark.full_data
def test_chair_interval_resamples_captions_and_is_wider_than_one_over_mentions(tmp_path: Path) -> None:
    """OPERA's 500 LLaVA-1.5 captions: CHAIRi's interval resamples the 500 captions, not the ~3,800
    mentions, and is wider than a Wilson interval that would take every mention as independent: the
    hallucinated mentions bunch in some captions."""
    bench = Chair(FULL_DATA / "chair-coco", ids=OPERA_GREEDY)
    captions = {str(row["image_id"]): str(row["caption"]) for row in map(json.loads, OPERA_GREEDY.open())}
    records = _score(bench, captions)
    _declared_equal_reported(bench, records)
    counts = bench.metrics(records).counts
    intervals = declared_intervals(bench.metric_declarations(), bench.metric_tables(records))
    chair_i = intervals["CHAIRi"]
    assert chair_i is not None and chair_i.unit == "caption"
    assert chair_i.units == chair_i.n == counts["captions"] == 500
    per_mention = proportion_interval(counts["hallucinated_mentions"], counts["mentions"])
    assert per_mention is not None
    per_mention = per_mention.scaled(100.0)
    assert chair_i.high - chair_i.low > 1.2 * (per_mention.high - per_mention.low)


# -- MMHal-Bench -------------------------------------------------------------------------------------------


def _answer(i: int, photo: str, rating: int | None, *, failure: str | None = None) -> SampleRecord:
    return SampleRecord(
        id=str(i), prompt="q", response="a", image_id=photo, rating=rating, failure=failure,
        unjudged_reason=None if rating is not None or failure else "no rating",
        metadata={"question_type": TYPES[i % len(TYPES)]},
    )  # fmt: skip


def _template(tmp_path: Path) -> Path:
    path = tmp_path / "response_template.json"
    path.write_text("[]", encoding="utf-8")  # declarations and tables read records, not the template
    return path


def test_mmhal_declared_figures_leave_out_the_unrated_and_the_official_ones_count_them_as_0(
    tmp_path: Path,
) -> None:
    ratings = [5, 2, None, 6, 0, 3, 4, 1, 2, 6, 5, None, 3, 3, 0, 4]
    records = [_answer(i, f"photo{i}", r) for i, r in enumerate(ratings)]
    records.append(_answer(16, "photo16", None, failure="MMHal-Bench item 16: no response for this item"))
    bench = MMHal(_template(tmp_path))
    values = _declared_equal_reported(bench, records)
    assert set(values) == {"average_score", "hallucination_rate", "official_average_score",
                           "official_hallucination_rate", *(f"score_{t}" for t in TYPES)}
    rated = [r for r in ratings if r is not None]
    assert values["average_score"] == pytest.approx(sum(rated) / len(rated))
    assert values["official_average_score"] == pytest.approx(sum(rated) / 17)
    intervals, _ = headline_intervals(bench, records)
    rate, official = intervals["hallucination_rate"], intervals["official_hallucination_rate"]
    assert rate is not None and rate["method"] == "wilson" and rate["units"] == len(rated)
    assert official is not None and official["units"] == 17
    only = MMHal(_template(tmp_path), types=["counting"])
    assert [d.name for d in only.metric_declarations() if d.name.startswith("score_")] == ["score_counting"]


def test_mmhal_answers_about_one_photo_are_one_unit(tmp_path: Path) -> None:
    """Two questions about each of 12 photos, rated alike: the interval counts 12 photos, not 24 answers,
    and is wider than it would be were the 24 answers about 24 photos."""
    bench = MMHal(_template(tmp_path))
    shared = [_answer(i, f"photo{i // 2}", [1, 5][(i // 2) % 2]) for i in range(24)]
    separate = [_answer(i, f"photo{i}", [1, 5][(i // 2) % 2]) for i in range(24)]
    widths = []
    for records in (shared, separate):
        _declared_equal_reported(bench, records)
        intervals, _ = headline_intervals(bench, records)
        for name in ("average_score", "hallucination_rate"):
            interval = intervals[name]
            assert interval is not None and interval["unit"] == "image" and interval["n"] == 24
            assert interval["units"] == len({r.image_id for r in records})
        rate = intervals["hallucination_rate"]
        assert rate is not None
        widths.append(rate["high"] - rate["low"])
    assert widths[0] > widths[1]


@pytest.mark.full_data
def test_mmhal_declared_figures_on_gpt4o_ratings_of_blip2_reproduce_the_published_row() -> None:
    """The 96 real GPT-4o replies on BLIP-2's answers, on the real template's photos and types: the declared
    official average is the published 1.31, every declared figure is the benchmark's own, and the unit is
    the photo (one per question: 95 rated answers, 95 photos)."""
    bench = MMHal(MMHAL_DIR)
    replies = [str(r["choices"][0]["message"]["content"]) for r in json.loads(BLIP2_REVIEW.read_text())]
    records = []
    for sample, reply in zip(bench.samples(), replies, strict=True):
        rated = parse_rating(reply)
        records.append(SampleRecord(
            id=sample.id, prompt=sample.prompt, response="a", image_id=sample.image_id, rating=rated.rating,
            unjudged_reason=rated.unjudged_reason, metadata={"question_type": sample.metadata["question_type"]},
        ))  # fmt: skip
    values = _declared_equal_reported(bench, records)
    official = values["official_average_score"]
    assert official is not None and round(official, 2) == 1.31
    intervals, _ = headline_intervals(bench, records)
    average = intervals["average_score"]
    assert average is not None and average["units"] == average["n"] == 95
    assert len({r.image_id for r in records}) == 96
    assert all((intervals[f"score_{t}"] or {}).get("units") in (11, 12) for t in TYPES)
