import json

import pytest

from halluscope.benchmarks import BENCHMARKS
from halluscope.benchmarks.tri_he import TriHE, TriHEDataError, load_scene_graphs
from halluscope.runs.selection import first_samples
from tests.paths import TRI_HE_JSON


@pytest.mark.full_data
def test_official_file_gives_1226_samples_with_stable_ids():
    bench = TriHE(TRI_HE_JSON)
    samples = list(bench.samples())
    assert len(samples) == 1226
    assert len({s.id for s in samples}) == 1226
    first = samples[0]
    data = json.loads(TRI_HE_JSON.read_text())
    image_id = next(iter(data))
    assert first.id == f"{image_id}-0"
    assert first.prompt == data[image_id]["instance"][0]["question"]
    assert first.metadata["gt_triplets"] == data[image_id]["instance"][0]["triplet"]
    assert first.image_path.endswith(f"images/{image_id}.jpg")


@pytest.mark.full_data
def test_scene_graphs_keep_every_reference_string_and_object():
    graphs = load_scene_graphs(TRI_HE_JSON)
    assert len(graphs) == 300
    assert sum(len(g.reference_texts) for g in graphs.values()) == 5729
    graph = graphs["2374892"]
    assert "black" in graph.attributes("laptop")
    assert "man" in graph.entities(objects_only=True)
    assert graph.relations_between("shirt", "man") == ["wearing"]
    assert "The laptop is black." in graph.describe()


@pytest.mark.full_data
def test_registry_creates_tri_he_with_limit():
    bench = first_samples(BENCHMARKS.create("tri-he", data=TRI_HE_JSON.parent), 5)
    assert len(list(bench.samples())) == 5


def test_malformed_file_names_the_image_and_field(tmp_path):
    bad = tmp_path / "tri-he.json"
    bad.write_text(json.dumps({"123": {"instance": [{"question": "Q?"}]}}))
    with pytest.raises(TriHEDataError, match=r"image 123.*'triplets'"):
        list(TriHE(bad).samples())
    bad.write_text("{not json")
    with pytest.raises(TriHEDataError, match="not valid JSON"):
        list(TriHE(bad).samples())
    with pytest.raises(TriHEDataError, match="not found"):
        TriHE(tmp_path / "missing.json")
