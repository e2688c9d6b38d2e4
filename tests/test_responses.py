import json

import pytest

from halluscope.benchmarks.tri_he import TriHE, load_tri_he_answers
from halluscope.responses import ResponsesError, load_responses, write_responses
from halluscope.types import Claim, Response


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_bad_line_is_reported_with_its_line_number_and_the_rest_load(tmp_path):
    path = write_lines(
        tmp_path / "r.jsonl",
        [
            json.dumps({"id": "a-0", "response": "A dog.", "claims": [["dog", "is", "brown"]]}),
            "{broken json",
            json.dumps({"id": "a-1"}),
            json.dumps({"response": "no id"}),
            json.dumps({"id": "a-0", "response": "again"}),
            json.dumps({"id": "zzz", "response": "unknown"}),
            json.dumps({"id": "a-2", "response": "x", "claims": [["only", "two"]]}),
            json.dumps({"id": "a-3", "response": 5}),
            json.dumps({"id": "a-4", "response": "", "extra": 1}),
        ],
    )
    loaded = load_responses(path, benchmark_ids={"a-0", "a-1", "a-2", "a-3", "a-4"})
    assert set(loaded.responses) == {"a-0", "a-4"}
    assert loaded.responses["a-0"].claims == [Claim(subject="dog", relation="is", object="brown")]
    assert loaded.responses["a-4"].metadata == {"extra": 1}
    problems = "\n".join(loaded.problems)
    assert "line 2: not valid JSON" in problems
    assert "line 3 (id a-1): missing field 'response'" in problems
    assert "line 4: missing field 'id'" in problems
    assert "line 5: duplicate id 'a-0' (first seen on line 1)" in problems
    assert "line 6: unknown id 'zzz'" in problems
    assert "line 7 (id a-2): claim 0 is not a list of 3 strings" in problems
    assert "line 8 (id a-3): 'response' must be a string" in problems
    assert len(loaded.problems) == 7


def test_a_file_with_nothing_usable_is_an_error(tmp_path):
    path = write_lines(tmp_path / "r.jsonl", ["nope", "{}"])
    with pytest.raises(ResponsesError, match="no usable response"):
        load_responses(path)
    with pytest.raises(ResponsesError, match="not found"):
        load_responses(tmp_path / "missing.jsonl")


def test_round_trip(tmp_path):
    items = [
        Response(id="x-0", response="A cat.", claims=[Claim.of(("cat", "on", "mat"))], metadata={"p": 0.5})
    ]
    path = write_responses(tmp_path / "out.jsonl", items)
    loaded = load_responses(path)
    assert loaded.responses["x-0"] == items[0]


def test_official_tri_he_layout(tri_he_json, tmp_path):
    data = {
        "1": {
            "instance": [
                {"question": "Q", "answer": "A", "triplet": [], "llava": "It is red."},
                {"question": "Q2", "answer": "A2", "triplet": []},
            ]
        }
    }
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(data))
    loaded = TriHE(tri_he_json).read_responses(path)  # told apart from JSONL by content
    assert loaded.responses["1-0"].response == "It is red."
    assert loaded.problems == ["answers.json: 1-1: no answer under key 'llava'"]
    with pytest.raises(ResponsesError, match="cannot tell which field"):
        data["1"]["instance"][1]["other"] = "x"
        path.write_text(json.dumps(data))
        load_tri_he_answers(path)
