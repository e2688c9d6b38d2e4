"""The static HTML report: content, escaping, images, scene graphs, and portability of run directories.

Runs are written here as files (spec.json, samples.jsonl, metrics.json) with synthetic responses built on
the real Tri-HE questions, reference triplets and images from ../shared/data/tri-he. The browser test
(test_report_browser.py) imports the builders below.
"""

from __future__ import annotations

import base64
import io
import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from halluscope.benchmarks import BENCHMARKS, Benchmark, MetricsReport, ScoringContext
from halluscope.report.html import ReportError, claim_category, locate_claim, write_html_report
from halluscope.scene.graph import SceneGraph
from halluscope.scene.triplets import parse_triplet_string
from halluscope.types import Claim, Response, Sample, SampleRecord
from tests.paths import SHARED

TRI_HE = SHARED / "data" / "tri-he"
FIXTURE_BENCHMARK = "fixture-tri-he"

ABSENT_OBJECTS = ["giraffe", "surfboard", "fire hydrant", "umbrella", "sailboat", "violin"]
FALSE_RELATIONS = ["jumping over", "hiding behind", "floating above", "eating"]
INJECTION = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>'


def claims_of(strings: Sequence[str]) -> list[Claim]:
    claims: list[Claim] = []
    for text in strings:
        claims.extend(parse_triplet_string(text))
    return claims


def tri_he_items(limit: int | None = None) -> list[dict[str, Any]]:
    """Tri-HE's questions in file order, with ids ``<image_id>-<question index>`` as the benchmark defines."""
    raw = json.loads((TRI_HE / "tri-he.json").read_text())
    items = []
    for image_id, entry in raw.items():
        for index, question in enumerate(entry["instance"]):
            items.append(
                {
                    "id": f"{image_id}-{index}",
                    "image_id": image_id,
                    "question": question["question"],
                    "answer": question["answer"],
                    "triplets": question["triplet"],
                }
            )
            if limit is not None and len(items) >= limit:
                return items
    return items


class FixtureTriHE(Benchmark):
    """Tri-HE read straight from the official file, so the tests control which scene graphs exist."""

    name = FIXTURE_BENCHMARK

    def __init__(self, data: Path | None = None) -> None:
        self.data = data or TRI_HE
        self.raw = json.loads((self.data / "tri-he.json").read_text())

    def samples(self) -> Iterator[Sample]:
        for item in tri_he_items():
            yield Sample(
                id=item["id"],
                benchmark=self.name,
                prompt=item["question"],
                image_id=item["image_id"],
                image_path=str(self.data / "images" / f"{item['image_id']}.jpg"),
                reference=item["answer"],
                metadata={"gt_triplets": item["triplets"]},
            )

    def scene(self, sample: Sample) -> SceneGraph | None:
        entry = self.raw[sample.image_id or ""]
        return SceneGraph.from_triplets(claims_of(entry["triplets"]), entry["all_object"], sample.image_id)

    async def score_many(
        self, pairs: Sequence[tuple[Sample, Response | None]], ctx: ScoringContext
    ) -> list[SampleRecord]:
        raise NotImplementedError("only used to render reports")

    def metrics(self, records: Sequence[SampleRecord]) -> MetricsReport:
        raise NotImplementedError("only used to render reports")


@pytest.fixture
def fixture_benchmark(monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers FixtureTriHE for one test (the registry is global, so monkeypatch restores it)."""
    monkeypatch.setattr(
        BENCHMARKS, "_entries", {**BENCHMARKS._entries, FIXTURE_BENCHMARK: f"{__name__}:FixtureTriHE"}
    )
    return FIXTURE_BENCHMARK


def synthetic_record(item: dict[str, Any], rng: random.Random, rates: dict[str, float]) -> dict[str, Any]:
    """A response stating each reference triplet of the question, some falsified, and its judged claims."""
    sentences = ["Looking at the picture, this is what I can tell."]
    claims = []
    for truth in claims_of(item["triplets"]):
        roll = rng.random()
        subject, relation, obj = truth.subject.lower(), truth.relation, truth.object
        verdict, error, evidence = "supported", None, [f"({truth.subject}, {truth.relation}, {truth.object})"]
        if roll < rates["object"]:
            obj, verdict, error = rng.choice(ABSENT_OBJECTS), "hallucinated", "object"
            evidence = [f"no {obj} among the objects of the image"]
        elif roll < rates["object"] + rates["relation"]:
            relation, verdict, error = rng.choice(FALSE_RELATIONS), "hallucinated", "relation"
        elif roll < rates["object"] + rates["relation"] + rates["unjudged"]:
            verdict, evidence = "unjudged", []
        sentences.append(f"The {subject} {relation} {obj}.")
        claims.append(
            {
                "subject": subject,
                "relation": relation,
                "object": obj,
                "verdict": verdict,
                "error": error,
                "score": None if verdict == "unjudged" else round(rng.uniform(0.3, 0.95), 3),
                "evidence": evidence,
                "explanation": "judge reply could not be parsed" if verdict == "unjudged" else None,
            }
        )
    return {
        "id": item["id"],
        "prompt": item["question"],
        "response": " ".join(sentences),
        "claims": claims,
        "claims_source": "supplied",
        "failure": None,
        "image_id": item["image_id"],
        "metadata": {"question_index": int(item["id"].rsplit("-", 1)[1]), "gt_triplets": item["triplets"]},
    }


def tri_he_metrics(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Hallu-Q/Hallu-I-style rates (0–100) of the synthetic records, so the plots have numbers to show."""

    def rate(selected: Sequence[dict[str, Any]], error: str | None) -> float:
        def share(record: dict[str, Any]) -> float | None:
            judged = [c for c in record["claims"] if c["verdict"] != "unjudged"]
            if not judged:
                return None
            bad = [
                c for c in judged if c["verdict"] == "hallucinated" and (error is None or c["error"] == error)
            ]
            return len(bad) / len(judged)

        values = [v for v in (share(r) for r in selected) if v is not None]
        return 100 * sum(values) / len(values) if values else 0.0

    by_image: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_image.setdefault(record["image_id"], []).append(record)
    metrics = {}
    for prefix, error in (("", None), ("object_", "object"), ("relation_", "relation")):
        metrics[f"{prefix}hallu_q"] = rate(records, error)
        image_rates = [rate(group, error) for group in by_image.values()]
        metrics[f"{prefix}hallu_i"] = sum(image_rates) / len(image_rates)
    return metrics


def write_run(
    directory: Path,
    *,
    model: str,
    items: Sequence[dict[str, Any]],
    seed: int,
    rates: dict[str, float],
    benchmark: str = FIXTURE_BENCHMARK,
    extra_metrics: dict[str, float] | None = None,
    mutate: dict[str, dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Writes a run directory the way the runner does; returns its records."""
    rng = random.Random(seed)
    records = [synthetic_record(item, rng, rates) for item in items]
    for record in records:
        record.update((mutate or {}).get(record["id"], {}))
    directory.mkdir(parents=True, exist_ok=True)
    spec = spec or {
        "benchmark": benchmark,
        "data": str(TRI_HE),
        "model": model,
        "extractor": "supplied",
        "judge": "similarity",
        "halluscope_version": "0.1.0",
    }
    (directory / "spec.json").write_text(json.dumps(spec, indent=2))
    with (directory / "samples.jsonl").open("w") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    categories = Counter(claim_category(c) for r in records for c in r["claims"])
    metrics = {
        "benchmark": benchmark,
        "metrics": {**tri_he_metrics(records), **(extra_metrics or {})},
        "groups": {},
        "counts": {
            "samples": len(records),
            "claims": sum(len(r["claims"]) for r in records),
            "unjudged": categories["unjudged"],
        },
        "details": {},
    }
    (directory / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return records


def embedded_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="hs-data">(.*?)</script>', page, re.S)
    assert match, "the report embeds its sample data"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


RATES_A = {"object": 0.15, "relation": 0.25, "unjudged": 0.05}
RATES_B = {"object": 0.05, "relation": 0.1, "unjudged": 0.1}


# -- claims in the response ------------------------------------------------------------------------------


def test_locate_claim_marks_the_stretch_that_states_it() -> None:
    text = "The station is calm. Several people are sitting on benches near the clock."
    start, end = locate_claim(text, "people", "sitting on", "benches") or (0, 0)
    assert text[start:end] == "people are sitting on benches"


def test_locate_claim_prefers_the_sentence_with_most_claim_words() -> None:
    text = "A man holds a pen. The man is using a black laptop at the desk."
    span = locate_claim(text, "man", "using", "laptop")
    assert span is not None
    assert text[span[0] : span[1]] == "man is using a black laptop"


def test_locate_claim_gives_none_for_a_claim_the_text_does_not_state() -> None:
    assert (
        locate_claim("A dog runs on the beach.", "location", "suggests", "popular spot for relaxing") is None
    )


# -- the report ------------------------------------------------------------------------------------------


@pytest.mark.full_data
def test_report_has_summary_radar_and_every_sample_with_its_claims(
    tmp_path: Path, fixture_benchmark: str
) -> None:
    items = tri_he_items(limit=12)
    run_a = write_run(tmp_path / "run-a", model="llava-sim", items=items, seed=1, rates=RATES_A)
    run_b = write_run(tmp_path / "run-b", model="gpt-sim", items=items, seed=2, rates=RATES_B)
    out = write_html_report([tmp_path / "run-a", tmp_path / "run-b"], tmp_path / "out" / "report.html")
    page = out.read_text()

    rows = re.findall(r'<tr data-run="(\d)">(.*?)</tr>', page, re.S)
    assert [r[0] for r in rows] == ["0", "1"]
    assert "llava-sim" in rows[0][1] and "gpt-sim" in rows[1][1]
    hallu_q = tri_he_metrics(run_a)["hallu_q"]
    assert (
        f'data-key="hallu_q">{hallu_q:.1f}<' in rows[0][1]
        or f'data-key="hallu_q">{hallu_q:.2f}<' in rows[0][1]
    )
    assert '<svg id="radar"' in page
    assert page.count('<g class="series"') == 2  # one polygon per model
    assert '<svg id="scatter"' not in page  # no hscore/tscore in these runs

    data = embedded_data(page)
    assert [r["label"] for r in data["runs"]] == ["llava-sim", "gpt-sim"]
    assert len(data["samples"]) == 24
    for run_index, records in enumerate((run_a, run_b)):
        shown = [s for s in data["samples"] if s["r"] == run_index]
        assert [s["id"] for s in shown] == [r["id"] for r in records]
        for sample, record in zip(shown, records, strict=True):
            assert [c["v"] for c in sample["c"]] == [c["verdict"] for c in record["claims"]]
            assert [c["c"] for c in sample["c"]] == [claim_category(c) for c in record["claims"]]
            # every synthetic claim is stated verbatim, so every one is placed on its own words
            for claim in sample["c"]:
                start, end = claim["sp"]
                assert sample["a"][start:end].lower() == f"{claim['s']} {claim['r']} {claim['o']}".lower()
            assert sample["ref"]  # the benchmark's ground-truth answer came along


@pytest.mark.full_data
def test_images_are_embedded_once_as_small_jpeg_thumbnails(tmp_path: Path, fixture_benchmark: str) -> None:
    items = tri_he_items(limit=8)  # 8 questions over 2 images
    write_run(tmp_path / "run", model="m", items=items, seed=3, rates=RATES_A)
    data = embedded_data(write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text())
    assert len(data["images"]) == len({i["image_id"] for i in items})
    for uri in data["images"].values():
        assert uri.startswith("data:image/jpeg;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
        assert max(image.size) <= 384
    assert all(s["img"] in data["images"] for s in data["samples"])


@pytest.mark.full_data
def test_scene_graph_of_each_sample_comes_from_its_benchmark(tmp_path: Path, fixture_benchmark: str) -> None:
    items = tri_he_items(limit=5)
    write_run(tmp_path / "run", model="m", items=items, seed=4, rates=RATES_A)
    data = embedded_data(write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text())
    raw = json.loads((TRI_HE / "tri-he.json").read_text())
    for sample in data["samples"]:
        scene = data["scenes"][sample["sg"]]
        entry = raw[sample["iid"]]
        expected = [f"({c.subject}, {c.relation}, {c.object})" for c in claims_of(entry["triplets"])]
        assert scene["facts"] == list(dict.fromkeys(expected))
        assert set(scene["objects"]) >= {o for o in entry["all_object"] if o.strip()}


@pytest.mark.full_data
def test_a_run_copied_elsewhere_renders_without_benchmark_data(tmp_path: Path) -> None:
    items = tri_he_items(limit=4)
    image = TRI_HE / "images" / f"{items[0]['image_id']}.jpg"
    write_run(
        tmp_path / "run",
        model="m",
        items=items,
        seed=5,
        rates=RATES_A,
        benchmark="benchmark-not-installed-here",
        mutate={items[0]["id"]: {"metadata": {"image_path": str(image)}}},
    )
    page = write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text()
    data = embedded_data(page)
    assert len(data["samples"]) == 4
    assert data["scenes"] == {}
    assert all(s["sg"] is None for s in data["samples"])
    assert "benchmark-not-installed-here" in page and "could not be opened here" in page
    # the image path recorded in the sample is still used; the others fall back to the spec's data folder
    assert data["samples"][0]["img"] is not None


@pytest.mark.full_data
def test_a_run_as_the_runner_writes_it_gets_tri_he_scenes_and_images(tmp_path: Path) -> None:
    """The spec in the runner's own format (``build_spec``), read back by the real Tri-HE benchmark."""
    from halluscope.benchmarks.tri_he import TriHE
    from halluscope.cache import Cache
    from halluscope.runs.runner import build_spec
    from halluscope.runs.selection import every_sample

    benchmark = TriHE(data=TRI_HE / "tri-he.json")
    spec = build_spec(
        benchmark,
        every_sample(benchmark),
        ScoringContext(cache=Cache(None)),
        {"model": {"provider": "replay", "path": "answers.jsonl"}},
    )
    spec["judge"] = {"judge": "similarity", "model": "all-MiniLM-L6-v2"}
    items = tri_he_items(limit=6)
    extra = {"hallu_q_with_empty": 20.0, "attribute_hallu_i": 3.0, "injected_hallu_q": 25.0}
    write_run(
        tmp_path / "run", model="unused", items=items, seed=13, rates=RATES_A, spec=spec, extra_metrics=extra
    )
    page = write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text()
    data = embedded_data(page)
    assert data["runs"][0]["label"] == "replay"
    assert data["runs"][0]["judge"] == "similarity (all-MiniLM-L6-v2)"
    assert data["runs"][0]["benchmark"] == "tri-he"
    # The table names the judge and keeps its model identity small beneath it, and titles every metric
    # column by the paper's name (no raw keys).
    assert '>similarity<div class="detail">all-MiniLM-L6-v2</div></td>' in page
    headers = re.findall(r'<th class="num metric" title="([^"]+)">([^<]+(?:<br>[^<]+)*)</th>', page)
    assert ("relation_hallu_i", "Relation<br>Hallu-I") in headers
    assert ("hallu_q_with_empty", "Hallu-Q<br>(empty=0)") in headers
    assert ("attribute_hallu_i", "Attribute<br>Hallu-I") in headers
    assert ("injected_hallu_q", "Injected<br>Hallu-Q") in headers
    assert all("_" not in shown for _, shown in headers), headers
    raw = json.loads((TRI_HE / "tri-he.json").read_text())
    for sample in data["samples"]:
        assert sample["img"] in data["images"]
        assert sample["ref"] == raw[sample["iid"]]["instance"][int(sample["id"].rsplit("-", 1)[1])]["answer"]
        assert data["scenes"][sample["sg"]]["objects"]


@pytest.mark.full_data
def test_a_spec_whose_data_is_gone_is_not_fetched_again(tmp_path: Path) -> None:
    spec = {
        "benchmark": {"benchmark": "tri-he", "data": str(tmp_path / "elsewhere" / "tri-he.json")},
        "model": "m",
    }
    write_run(tmp_path / "run", model="m", items=tri_he_items(limit=2), seed=14, rates=RATES_A, spec=spec)
    page = write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text()
    assert "benchmark data not found at" in page
    assert embedded_data(page)["scenes"] == {}


@pytest.mark.full_data
def test_untrusted_text_cannot_inject_markup(tmp_path: Path, fixture_benchmark: str) -> None:
    items = tri_he_items(limit=3)
    hostile = {
        "response": f"Nice picture. {INJECTION} The end.",
        "prompt": "<iframe src=x></iframe>What is shown?",
        "claims": [
            {
                "subject": "<b>x</b>",
                "relation": "is",
                "object": INJECTION,
                "verdict": "hallucinated",
                "error": "object",
                "score": 0.1,
                "evidence": ["</script>"],
                "explanation": "<i>why</i>",
            }
        ],
    }
    write_run(
        tmp_path / "run",
        model="<script>alert(1)</script>",
        items=items,
        seed=6,
        rates=RATES_A,
        mutate={items[1]["id"]: hostile},
    )
    page = write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text()
    for raw in (
        "<img src=x",
        "<iframe",
        "<script>alert",
        "<b>x</b>",
        "<i>why</i>",
        "window.__pwned=2</script>",
    ):
        assert raw not in page
    assert page.count("</script>") == 2  # the data block and the inline script, nothing from the run
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the model name, escaped in the summary
    data = embedded_data(page)
    assert data["samples"][1]["a"] == hostile["response"]  # the text itself is kept, as text


@pytest.mark.full_data
def test_scatter_when_runs_report_helpfulness_and_truthfulness(
    tmp_path: Path, fixture_benchmark: str
) -> None:
    items = tri_he_items(limit=4)
    write_run(
        tmp_path / "a",
        model="a",
        items=items,
        seed=7,
        rates=RATES_A,
        extra_metrics={"hscore": 0.61, "tscore": 0.72},
    )
    write_run(
        tmp_path / "b",
        model="b",
        items=items,
        seed=8,
        rates=RATES_B,
        extra_metrics={"hscore": 0.45, "tscore": 0.83},
    )
    page = write_html_report([tmp_path / "a", tmp_path / "b"], tmp_path / "r.html").read_text()
    scatter = re.search(r'<svg id="scatter".*?</svg>', page, re.S)
    assert scatter
    assert scatter.group(0).count("<circle") == 2
    assert "hScore 0.61, tScore 0.72" in scatter.group(0)


@pytest.mark.full_data
def test_runs_of_the_same_model_are_told_apart(tmp_path: Path, fixture_benchmark: str) -> None:
    items = tri_he_items(limit=2)
    write_run(tmp_path / "x1", model="same", items=items, seed=9, rates=RATES_A)
    write_run(tmp_path / "x2", model="same", items=items, seed=10, rates=RATES_B)
    data = embedded_data(
        write_html_report([tmp_path / "x1", tmp_path / "x2"], tmp_path / "r.html").read_text()
    )
    labels = [r["label"] for r in data["runs"]]
    assert len(set(labels)) == 2 and all(label.startswith("same") for label in labels)


@pytest.mark.full_data
def test_image_budget_caps_the_file_size(tmp_path: Path, fixture_benchmark: str) -> None:
    items = tri_he_items(limit=30)  # 8 images
    write_run(tmp_path / "run", model="m", items=items, seed=11, rates=RATES_A)
    small = write_html_report([tmp_path / "run"], tmp_path / "small.html", image_budget_bytes=40_000)
    full = write_html_report([tmp_path / "run"], tmp_path / "full.html")
    small_data, full_data = embedded_data(small.read_text()), embedded_data(full.read_text())
    assert 0 < len(small_data["images"]) < len(full_data["images"])
    assert sum(len(u) for u in small_data["images"].values()) <= 40_000
    assert "images not embedded" in small.read_text()


def test_a_directory_that_is_not_a_run_is_named_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="empty"):
        write_html_report([tmp_path / "empty"], tmp_path / "r.html")
    with pytest.raises(ReportError, match="missing-dir"):
        write_html_report([tmp_path / "missing-dir"], tmp_path / "r.html")


@pytest.mark.full_data
def test_the_file_makes_no_external_requests(tmp_path: Path, fixture_benchmark: str) -> None:
    write_run(tmp_path / "run", model="m", items=tri_he_items(limit=4), seed=12, rates=RATES_A)
    page = write_html_report([tmp_path / "run"], tmp_path / "r.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page  # and the browser is told to refuse any request anyway


def test_answer_benchmarks_show_prediction_and_correctness_and_rate_bars(tmp_path: Path) -> None:
    """Reefknot-style runs: no claims, a parsed prediction and whether it was right; two rates, so bars."""
    run = tmp_path / "reefknot"
    run.mkdir()
    (run / "spec.json").write_text(json.dumps({"benchmark": {"benchmark": "reefknot"}, "model": "m"}))
    records = [
        {
            "id": "yesno-0",
            "prompt": "Is the man riding the horse?",
            "response": "Yes.",
            "claims": [],
            "prediction": "yes",
            "correct": True,
            "metadata": {"task": "yesno"},
        },
        {
            "id": "mcq-0",
            "prompt": "What is the man doing? A) ...",
            "response": "C",
            "claims": [],
            "metadata": {"task": "mcq", "prediction": "C", "correct": False},
        },
    ]
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    metrics = {
        "benchmark": "reefknot",
        "metrics": {"yesno_hallu_rate": 12.5, "mcq_hallu_rate": 30.0},
        "counts": {},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    page = write_html_report([run], tmp_path / "r.html").read_text()
    samples = embedded_data(page)["samples"]
    assert [(s["pred"], s["ok"]) for s in samples] == [("yes", True), ("C", False)]
    assert '<svg id="radar"' not in page
    bars = re.search(r'<svg id="rates".*?</svg>', page, re.S)
    assert bars and bars.group(0).count("<rect") == 2 and "30.0" in bars.group(0)
