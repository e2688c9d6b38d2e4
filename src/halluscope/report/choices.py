"""What a run chose that changes its figures, one line each, read from its ``spec.json``: shown in the terminal
before the table (after ``run`` and in ``report``), where the user reads the figures.

Why before the table and on stdout: a CHAIR run scored with a stand-in tagger, POPE read by the paper's rule,
a run over the first 50 samples or over the answered ones only gives figures that differ from the peer tool's
for a reason the user must see beside them; in ``spec.json`` alone, or on stderr after the table, nobody does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["run_choices"]

#: Why a tagger other than NLTK's perceptron (the one chair.py uses) is named: its figures may differ a little.
_TAGGERS = {
    "perceptron": "textblob-aptagger's averaged perceptron, standing in for NLTK's, whose data is not installed",
    "spacy": "spaCy's tagger, standing in for NLTK's perceptron, whose data is not installed",
}


def _tagger_lines(bench: Mapping[str, Any]) -> list[str]:
    lines = []
    tagger = bench.get("tagger")
    if tagger and tagger != "nltk":
        why = _TAGGERS.get(str(tagger), "not NLTK's perceptron")
        lines.append(
            f"tagger: {tagger} ({why}); chair.py tags with NLTK's perceptron, so a few captions' object words "
            "may differ from its output (the CHAIR docs measure how many)"
        )
    if bench.get("tokenizer") not in (None, "nltk"):
        lines.append(f"tokenizer: {bench['tokenizer']} (NLTK's punkt data is not installed)")
    return lines


def _selection_lines(bench: Mapping[str, Any], run: Mapping[str, Any], counts: Mapping[str, Any]) -> list[str]:
    lines = []
    limit = bench.get("limit", run.get("limit"))
    if limit is not None:
        selected = bench.get("selected_samples", limit)
        lines.append(
            f"limit: the first {int(selected):,} samples only (--limit {limit}); figures over part of the benchmark"
        )
    if bench.get("only_answered") or run.get("only_answered"):
        scored = counts.get("samples")
        which = f"the {int(scored):,} samples" if scored is not None else "the samples"
        lines.append(f"only answered: {which} the responses file answers; the others are left out (--only-answered)")
    imported = bench.get("items_from_responses")
    if isinstance(imported, Mapping):
        count = int(imported.get("count") or 0)
        lines.append(f"labels: {imported.get('labels')} ({count:,} items from the answers file)")
    return lines


def run_choices(spec: Mapping[str, Any], counts: Mapping[str, Any], judge: str = "") -> list[str]:
    """One line per choice of the run that changes a figure: the tagger (when not NLTK's perceptron), the reading
    of yes/no answers, the labels, the extractor, the judge, ``--only-answered`` and ``--limit``. ``judge`` is the
    judge as the report names it (``none (yes/no read by the pope-paper rule)``); empty where the benchmark has none."""
    bench = spec.get("benchmark") if isinstance(spec.get("benchmark"), Mapping) else {}
    run = spec.get("run") if isinstance(spec.get("run"), Mapping) else {}
    assert isinstance(bench, Mapping) and isinstance(run, Mapping)
    lines = _tagger_lines(bench)
    if bench.get("mode"):
        lines.append(f"reading: {bench['mode']} (the figures read the answers by this rule; metrics.json and "
                     "`halluscope report --all` hold the other readings)")  # fmt: skip
    if bench.get("labels"):
        lines.append(f"labels: {bench['labels']}")
    extractor = spec.get("extractor")
    if extractor:  # the claims a judge sees: rules, an LLM, or claims the answers file supplied
        from halluscope.report.table import component_name

        lines.append(f"extractor: {component_name(extractor)}")
    if judge:
        lines.append(f"judge: {judge}")
    return lines + _selection_lines(bench, run, counts)
