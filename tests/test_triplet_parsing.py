import json

import pytest

from halluscope.scene.triplets import TripletParseError, parse_triplet_string, reference_sentence
from tests.paths import TRI_HE_JSON


@pytest.mark.full_data
def test_every_official_triplet_string_parses_into_non_empty_parts():
    data = json.loads(TRI_HE_JSON.read_text())
    strings = [t for entry in data.values() for t in entry["triplets"]]
    assert len(strings) == 5729
    parsed = [parse_triplet_string(s) for s in strings]
    assert all(parsed), "no string may be lost"
    for claims in parsed:
        for claim in claims:
            assert claim.subject and claim.relation and claim.object
            assert "(" not in claim.subject + claim.object and ")" not in claim.subject + claim.object


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "(Traffic light for the camera-facing direction, is ,red)",
            [("Traffic light for the camera-facing direction", "is", "red")],
        ),
        ("(People, riding ,elephant)", [("People", "riding", "elephant")]),
        ("(bus, is,stopped)", [("bus", "is", "stopped")]),
        (
            "(Woman, reason for attention, Curiosity/Distraction, photographer)",
            [("Woman", "reason for attention", "Curiosity/Distraction, photographer")],
        ),
        (
            "(snow-covered trees, indicating, cold weather,; (cloudy sky, indicating, potential snowfall)",
            [
                ("snow-covered trees", "indicating", "cold weather"),
                ("cloudy sky", "indicating", "potential snowfall"),
            ],
        ),
        (
            "(snow on the ground, covers, mountains, (people, wearing, winter clothing)",
            [("snow on the ground", "covers", "mountains"), ("people", "wearing", "winter clothing")],
        ),
    ],
)
def test_the_six_irregular_official_strings(raw, expected):
    assert [c.as_tuple() for c in parse_triplet_string(raw)] == expected


@pytest.mark.full_data
def test_the_six_irregular_strings_are_really_in_the_official_file():
    data = json.loads(TRI_HE_JSON.read_text())
    strings = {t for entry in data.values() for t in entry["triplets"]}
    irregular = {s for s in strings if s.count(",") != 2 or s.count(",") != s.count(", ")}
    assert len(irregular) == 6


@pytest.mark.parametrize("raw", ["(laptop, black)", "(, is, red)", "()", "laptop"])
def test_malformed_strings_raise_naming_the_string(raw):
    with pytest.raises(TripletParseError, match="not a"):
        parse_triplet_string(raw)


def test_reference_sentence_matches_the_official_preprocessing():
    assert reference_sentence("(laptop, is, black)") == "laptop is black."
