"""Which per-sample view the report gives a record, and what it carries (the browser side is in
``test_report_views_browser.py``)."""

from __future__ import annotations

from halluscope.report.samples import shown_text
from halluscope.report.views import find_words, sample_view


def test_a_chair_run_written_before_records_held_offsets_still_marks_its_words() -> None:
    caption = "A man is seated at a dining table with two Bottles and a men's bike."
    record = {
        "response": caption,
        "coco_words": ["man", "seat", "dining table", "bottle", "bike"],
        "coco_objects": ["person", "chair", "dining table", "bottle", "bicycle"],
        "truth_objects": ["person", "dining table"],
        "hallucinated_objects": [["seat", "chair"], ["bottle", "bottle"], ["bike", "bicycle"]],
    }
    view = sample_view(record, shown_text)
    assert view is not None and view["k"] == "caption"
    shown = [(caption[m["sp"][0]:m["sp"][1]], m["h"]) for m in view["marks"]]
    assert shown == [("man", False), ("seated", True), ("dining table", False), ("Bottles", True), ("bike", True)]


def test_find_words_leaves_a_word_it_cannot_place_unmarked_and_keeps_going() -> None:
    assert find_words("two men and a dog", ["man", "dog"]) == [None, [14, 17]]


def test_yes_no_hallusionbench_and_multiple_choice_records_read_as_their_users_read_them() -> None:
    pope = {"response": "No", "label": "yes", "prediction": "no", "correct": False, "parse": "paper",
            "mode": "paper", "paper_prediction": "no", "robust_prediction": "no"}  # fmt: skip
    view = sample_view(pope, shown_text)
    assert view == {"k": "yesno", "label": "yes", "read": {"v": "no", "how": "the paper's rule"}, "ok": False,
                    "mode": "paper", "others": []}  # fmt: skip
    hallusion = {"response": "I cannot tell.", "label": "no", "prediction": None, "parse": "refusal", "correctness": 0}
    view = sample_view(hallusion, shown_text)
    assert view is not None and view["ok"] is False and view["read"] == {"v": None, "how": "a refusal"}
    mcq = {"response": "D", "label": "B", "prediction": "D", "correct": False, "parse": "letter", "mode": "robust",
           "paper_prediction": "A", "metadata": {"options": {"A": "on", "B": "left of"}}}  # fmt: skip
    view = sample_view(mcq, shown_text)
    assert view is not None and view["options"] == [["A", "on"], ["B", "left of"]]
    assert view["others"] == [{"rule": "paper", "v": "A", "how": None}]  # the other reading, shown folded


def test_judged_answers_carry_the_verdict_rating_and_reasoning() -> None:
    hqh = {"response": "More than Just", "verdict": "incorrect", "hallucinated": True, "judge_method": "ocr",
           "explanation": "the sign reads E. Howe St.", "evidence": ["reference: E. Howe St."]}  # fmt: skip
    view = sample_view(hqh, shown_text)
    assert view is not None and view["k"] == "answer" and view["bad"] is True
    assert ["verdict", "incorrect"] in view["fields"] and view["why"] == "the sign reads E. Howe St."
    assert view["ev"] == ["reference: E. Howe St."]
    mmhal = {"response": "x", "rating": 2, "hallucinated": True, "explanation": "wrong colour" * 1000,
             "judge_method": "llm"}  # fmt: skip
    view = sample_view(mmhal, shown_text)
    assert view is not None and ["rating", "2 of 6"] in view["fields"]
    assert view["why"].endswith("more characters in samples.jsonl)")  # cut like every text
    assert sample_view({"response": "x", "claims": []}, shown_text) is None  # claim cards
