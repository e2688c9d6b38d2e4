"""The summary table of all runs, with per-group metrics and notes, as server-side HTML.

Server-side so that the summary reads without JavaScript; every text from a run goes through ``esc``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from halluscope.report.claims import CATEGORIES, verdict_counts
from halluscope.report.formatting import column_scale, esc, fmt, metric_keys_of, pretty
from halluscope.report.rundir import ReportRun, as_float


def summary_html(runs: Sequence[ReportRun]) -> str:
    from halluscope.report.groups_view import folded_readings

    every_key = metric_keys_of(runs)
    # The copies of a figure under a reading that is not the run's (paper_f1 beside f1) stay in metrics.json, as
    # in the terminal's report: side by side they read as more figures than the run has.
    folded = set(folded_readings(every_key))
    metric_keys = [k for k in every_key if k not in folded]
    count_keys: list[str] = []
    for run in runs:
        for key in run.metrics.get("counts") or {}:
            if key not in count_keys:
                count_keys.append(str(key))
    # The first column is the run's label: its model, plus the judge or folder where models repeat.
    head = ["model (run folder)", "benchmark", "extractor", "judge", "samples"]
    head_html = "".join(f"<th>{esc(h)}</th>" for h in head)
    head_html += "".join(
        f'<th class="num metric" title="{esc(k)}">{esc(pretty(k)).replace(" ", "<br>")}</th>'
        for k in metric_keys
    )
    head_html += '<th class="claims-col">claims by verdict</th><th class="counts-col">counts</th>'
    scales = {k: column_scale(r.metric_values().get(k) for r in runs) for k in metric_keys}
    spans = {k: span for k in metric_keys if (span := _interval_span(runs, k)) is not None}
    rows = []
    for index, run in enumerate(runs):
        values = run.metric_values()
        counts = run.metrics.get("counts") or {}
        verdicts = verdict_counts(run.records)
        chips = "".join(
            f'<span class="chip v-{c}" data-cat="{c}" title="{esc(_category_title(c))}">'
            f"{c} {verdicts[c]}</span>"
            for c in CATEGORIES
            if verdicts[c] or c in ("supported", "object", "relation", "unjudged")
        )
        cells = [
            f'<td class="run-col"><span class="swatch" style="background:{run.color}"></span>'
            f'<a href="#/samples?run={esc(quote(run.name, safe=""))}">{esc(run.label)}</a>'
            + (
                f'<div class="dir" title="{esc(run.directory)}">{esc(run.directory.name)}</div></td>'
                if run.directory.name != run.label
                else "</td>"
            ),
            f"<td>{esc(run.benchmark)}</td>",
            _component_cell(run.extractor),
            _component_cell(run.judge),
            f'<td class="num" data-key="samples">{len(run.records)}</td>',
        ]
        intervals = run.metrics.get("intervals") or {}
        cells += [
            f'<td class="num" data-key="{esc(k)}">{fmt(values.get(k), scales[k])}'
            f"{interval_html(values.get(k), intervals.get(k), spans.get(k))}</td>"
            for k in metric_keys
        ]
        cells.append(f'<td class="claims-col">{chips}</td>')
        shown = [k for k in count_keys if k in counts]
        count_items = "".join(
            f'<div class="count" data-key="count:{esc(k)}">{esc(k)} <b>{esc(counts[k])}</b></div>' for k in shown
        )
        # Counts are many and secondary: folded, so that each run stays one line tall.
        cells.append(
            f'<td class="counts-col"><details><summary>{len(shown)} counts</summary>{count_items}</details></td>'
            if shown
            else '<td class="counts-col"></td>'
        )
        rows.append(f'<tr data-run="{index}">{"".join(cells)}</tr>')
    table = (
        '<div class="table-wrap"><table id="summary-table" class="summary">'
        f"<thead><tr>{head_html}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    note = (
        f'<p class="muted folded">{len(folded)} figures under other readings ({esc(", ".join(sorted(folded)[:4]))}'
        f"{', …' if len(folded) > 4 else ''}) are in each run's metrics.json and its CSV</p>"
        if folded else ""
    )  # fmt: skip
    return _headline_html(runs) + table + note + _judge_error_html(runs) + _groups_html(runs) + _notes_html(runs)


def _headline_html(runs: Sequence[ReportRun]) -> str:
    """Each run's headline view (:mod:`halluscope.report.headline`) above the summary: the table its benchmark's
    users know (POPE per set as eval_pope prints it, CHAIR as chair.py does), the figures to two decimals as
    their tool prints them, each with its interval."""
    from halluscope.report.choices import run_choices
    from halluscope.report.headline import Figures, cell_text, headline_rows, view_for

    parts = []
    for index, run in enumerate(runs):
        choices = run_choices(run.spec, run.metrics.get("counts") or {})
        said = "".join(f"<li>{esc(line)}</li>" for line in choices)
        if said:  # what the run chose that changes its figures, before them (as the terminal says it)
            parts.append(f'<ul class="notes choices" data-run="{index}"><b>{esc(run.label)}</b>{said}</ul>')
        view = view_for(run.benchmark)
        filled = headline_rows(view, Figures.of(run.metrics)) if view is not None else None
        if filled is None:
            continue
        head = "<th>" + ("set" if view is not None and view.rows == "groups" else "") + "</th>"
        head += "".join(f'<th class="num" data-key="{esc(k)}">{esc(name)}</th>' for k, name in filled.columns)
        body = "".join(
            f'<tr data-row="{esc(label)}"><td>{esc(label)}</td>'
            + "".join(
                f'<td class="num" data-key="{esc(k)}">{esc(cell_text(v, i))}</td>'
                for (k, _), (v, i) in zip(filled.columns, cells, strict=True)
            )
            + "</tr>"
            for label, cells in filled.rows
        )
        parts.append(
            f'<figure class="headline-view" data-run="{index}" data-benchmark="{esc(run.benchmark)}">'
            f"<figcaption><b>{esc(run.label)}</b>: {esc(filled.view.title)}</figcaption>"
            f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></figure>'
        )
    return "".join(parts)


def _judge_error_html(runs: Sequence[ReportRun]) -> str:
    """Under the table, what each run says of its judge's own error: the measured sensitivity and specificity
    with the corrected headlines, or that the judge's error was never measured, so that a judged number from
    an unmeasured judge never reads as certain as a measured one."""
    from halluscope.report.table import judge_error_lines

    blocks = []
    for run in runs:
        lines = judge_error_lines(run.metrics.get("judge_error") or {})
        if not lines:
            continue
        body = "<br>".join(esc(line.strip()) for line in lines)
        blocks.append(f'<li class="judge-error"><b>{esc(run.label)}</b>: {body}</li>')
    return f'<ul class="notes judge-errors">{"".join(blocks)}</ul>' if blocks else ""


def _interval_of(found: object) -> tuple[float, float] | None:
    if not isinstance(found, dict):
        return None
    low, high = as_float(found.get("low")), as_float(found.get("high"))
    return None if low is None or high is None or low > high else (low, high)


def _interval_span(runs: Sequence[ReportRun], key: str) -> tuple[float, float] | None:
    """The range the error bars of one column are drawn in: every run's interval of that metric fits."""
    bounds = [b for r in runs if (b := _interval_of((r.metrics.get("intervals") or {}).get(key))) is not None]
    if not bounds:
        return None
    low, high = min(b[0] for b in bounds), max(b[1] for b in bounds)
    return (low, high) if high > low else (low - 1.0, high + 1.0)


#: Width in pixels of the error bar drawn under each headline.
_BAR_WIDTH = 64


def interval_html(value: float | None, found: object, span: tuple[float, float] | None) -> str:
    """The interval under a figure, as numbers and as an error bar drawn on the column's common scale
    (so bars of runs side by side compare by eye); the tooltip says the level, method and units."""
    bounds = _interval_of(found)
    if value is None or bounds is None or span is None or not isinstance(found, dict):
        return ""
    low, high = bounds

    def x(v: float) -> float:
        return 2 + (_BAR_WIDTH - 4) * (min(max(v, span[0]), span[1]) - span[0]) / (span[1] - span[0])

    level = as_float(found.get("level")) or 0.95
    title = (
        f"{100 * level:g} % interval {low:.2f} to {high:.2f}, {found.get('method', '')}, "
        f"over {found.get('units', '?')} {found.get('unit', 'unit')}s ({found.get('n', '?')} items)"
    )
    bar = (
        f'<svg class="ci-bar" width="{_BAR_WIDTH}" height="8" aria-hidden="true">'
        f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="4" y2="4" stroke="currentColor" stroke-width="1.5"/>'
        f'<line x1="{x(low):.1f}" x2="{x(low):.1f}" y1="1" y2="7" stroke="currentColor"/>'
        f'<line x1="{x(high):.1f}" x2="{x(high):.1f}" y1="1" y2="7" stroke="currentColor"/>'
        f'<circle cx="{x(value):.1f}" cy="4" r="2"/></svg>'
    )
    return f'<div class="ci" title="{esc(title)}">[{fmt(low)}, {fmt(high)}]<br>{bar}</div>'


def _groups_html(runs: Sequence[ReportRun]) -> str:
    parts = []
    for run in runs:
        groups = run.metrics.get("groups") or {}
        if not isinstance(groups, dict) or not groups:
            continue
        keys: list[str] = []
        for values in groups.values():
            for key in values or {}:
                if key not in keys:
                    keys.append(str(key))
        head = "<th>group</th>" + "".join(
            f'<th class="num">{esc(pretty(k))}</th>' for k in keys
        )
        body = "".join(
            f"<tr><td>{esc(group)}</td>"
            + "".join(
                f'<td class="num">{fmt(as_float((values or {}).get(k)))}'
                f"{_group_interval(run, group, k)}</td>"
                for k in keys
            )
            + "</tr>"
            for group, values in groups.items()
        )
        parts.append(
            f'<details class="groups"><summary>Per-group metrics — {esc(run.label)}</summary>'
            f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>'
        )
    return "".join(parts)


def _group_interval(run: ReportRun, group: str, key: str) -> str:
    found = ((run.metrics.get("group_intervals") or {}).get(group) or {}).get(key)
    bounds = _interval_of(found)
    return "" if bounds is None else f'<div class="ci">[{fmt(bounds[0])}, {fmt(bounds[1])}]</div>'


def _notes_html(runs: Sequence[ReportRun]) -> str:
    items = [f"<li><b>{esc(run.label)}</b>: {esc(note)}</li>" for run in runs for note in run.notes]
    return f'<ul class="notes">{"".join(items)}</ul>' if items else ""


def _category_title(category: str) -> str:
    return {
        "supported": "supported",
        "object": "object hallucination",
        "relation": "relation hallucination",
        "attribute": "attribute hallucination",
        "hallucinated": "hallucination (type not given)",
        "unjudged": "unjudged",
    }[category]


def _component_cell(text: str) -> str:
    """A table cell for "name (model identity)": the name, with the long identity small beneath it."""
    name, sep, detail = text.partition(" (")
    if not sep or not detail.endswith(")"):
        return f'<td class="component">{esc(text)}</td>'
    return (
        f'<td class="component" title="{esc(text)}">{esc(name)}'
        f'<div class="detail">{esc(detail[:-1])}</div></td>'
    )
