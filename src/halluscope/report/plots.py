"""The report's plots as inline SVG: a radar (or bars) of hallucination rates, helpfulness vs truthfulness.

Server-side SVG rather than a plotting library, so the file needs no script or network to show them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from halluscope.report.formatting import esc, fmt, metric_keys_of, nice_max, pretty, tick
from halluscope.report.rundir import ReportRun, as_float


def _rate_keys(runs: Sequence[ReportRun]) -> list[str]:
    """Hallucination rates reported by some run, in the report's order (Tri-HE's six first, as the paper)."""
    return [
        k
        for k in metric_keys_of(runs)
        if ("hallu" in k.lower() or "rate" in k.lower())
        and not k.startswith("injected_")  # simulators' known truth, shown in the table, not a measured rate
        and any(r.metric_values().get(k) is not None for r in runs)
    ]


def _radar_plan(runs: Sequence[ReportRun]) -> tuple[list[str], list[ReportRun]]:
    """Axes and runs of the radar: the rates every rate-reporting run has (a radar needs three).

    A missing rate is never drawn as 0 (0 would read as "no hallucination"): with the ``similarity``
    judge the typed rates are null, so those axes are left out rather than shown empty.
    """
    keys = _rate_keys(runs)
    reporting = [r for r in runs if any(r.metric_values().get(k) is not None for k in keys)]
    common = [k for k in keys if all(r.metric_values().get(k) is not None for r in reporting)]
    if len(common) >= 3:
        return common, reporting
    if len(keys) >= 3:
        complete = [r for r in reporting if all(r.metric_values().get(k) is not None for k in keys)]
        if complete:
            return keys, complete
    return keys, []


def _bars_svg(runs: Sequence[ReportRun], keys: Sequence[str]) -> str:
    """Grouped bars, for rates too few (or too patchy) for a radar."""
    reporting = [r for r in runs if any(r.metric_values().get(k) is not None for k in keys)]
    if not keys or not reporting:
        return ""
    top = nice_max(max((r.metric_values().get(k) or 0.0) for r in reporting for k in keys))
    left, width, bar, gap = 150, 460, 12, 14
    height = 30 + len(keys) * (len(reporting) * bar + gap)
    parts = [
        f'<svg id="rates" class="plot" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        'aria-label="Hallucination rates per model (lower is better)" xmlns="http://www.w3.org/2000/svg">'
    ]
    y = 10.0
    for key in keys:
        parts.append(
            f'<text x="{left - 8}" y="{y + bar:.1f}" text-anchor="end" class="axis-label">'
            f"{esc(pretty(key))}</text>"
        )
        for run in reporting:
            value = run.metric_values().get(key)
            length = (width - left - 50) * (value or 0.0) / top
            parts.append(
                f'<g class="series" data-run="{esc(run.label)}"><title>{esc(run.label)}: {fmt(value)}</title>'
                f'<rect x="{left}" y="{y:.1f}" width="{length:.1f}" height="{bar - 2}" '
                f'style="fill:{run.color}"/><text x="{left + length + 4:.1f}" y="{y + bar - 3:.1f}" '
                f'class="tick">{fmt(value)}</text></g>'
            )
            y += bar
        y += gap
    parts.append("</svg>")
    legend = "".join(
        f'<li><span class="swatch" style="background:{r.color}"></span>{esc(r.label)}</li>' for r in reporting
    )
    return (
        '<figure class="figure"><figcaption>Hallucination rates per model (lower is better)</figcaption>'
        f'{"".join(parts)}<ul class="legend">{legend}</ul></figure>'
    )


def radar_svg(runs: Sequence[ReportRun]) -> str:
    axes, plotted = _radar_plan(runs)
    if not plotted:
        return _bars_svg(runs, axes)
    top = nice_max(max(r.metric_values()[k] or 0.0 for r in plotted for k in axes))
    width, height, cx, cy, radius = 560, 400, 280, 200, 150
    n = len(axes)

    def point(i: int, fraction: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / n
        return cx + radius * fraction * math.cos(angle), cy + radius * fraction * math.sin(angle)

    parts = [
        f'<svg id="radar" class="plot" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        f'aria-label="Hallucination rates per model (lower is better)" xmlns="http://www.w3.org/2000/svg">'
    ]
    for ring in (0.25, 0.5, 0.75, 1.0):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, ring) for i in range(n)))
        parts.append(f'<polygon points="{pts}" class="grid"/>')
        lx, ly = point(0, ring)
        parts.append(f'<text x="{lx + 4:.1f}" y="{ly + 4:.1f}" class="tick">{tick(top * ring)}</text>')
    for i, key in enumerate(axes):
        x, y = point(i, 1.0)
        parts.append(f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" class="axis"/>')
        lx, ly = point(i, 1.13)
        anchor = "middle" if abs(lx - cx) < 10 else ("start" if lx > cx else "end")
        parts.append(
            f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="{anchor}" class="axis-label">'
            f"{esc(pretty(key))}</text>"
        )
    for run in plotted:
        values = run.metric_values()
        vertices = [point(i, (values[k] or 0.0) / top) for i, k in enumerate(axes)]
        text = ", ".join(f"{pretty(k)} {fmt(values[k])}" for k in axes)
        parts.append(
            f'<g class="series" data-run="{esc(run.label)}"><title>{esc(run.label)}: {esc(text)}</title>'
            f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in vertices)}" '
            f'style="fill:{run.color};stroke:{run.color}"/>'
            + "".join(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" style="fill:{run.color}"/>' for x, y in vertices
            )
            + "</g>"
        )
    parts.append("</svg>")
    legend = "".join(
        f'<li><span class="swatch" style="background:{r.color}"></span>{esc(r.label)}</li>' for r in plotted
    )
    missing = [r.label for r in runs if r not in plotted]
    note = f'<p class="muted">No rates to plot for: {esc(", ".join(missing))}</p>' if missing else ""
    return (
        '<figure class="figure"><figcaption>Hallucination rates per model (%, lower is better)</figcaption>'
        f'{"".join(parts)}<ul class="legend">{legend}</ul>{note}</figure>'
    )


def scatter_svg(runs: Sequence[ReportRun]) -> str:
    points = [
        (r, r.metric_values()["hscore"], r.metric_values()["tscore"])
        for r in runs
        if r.metric_values().get("hscore") is not None and r.metric_values().get("tscore") is not None
    ]
    if not points:
        return ""
    top = 1.0 if all((h or 0) <= 1 and (t or 0) <= 1 for _, h, t in points) else 100.0
    width, height, left, bottom, pad = 460, 380, 56, 48, 20
    plot_w, plot_h = width - left - pad, height - bottom - pad

    def xy(h: float, t: float) -> tuple[float, float]:
        return left + plot_w * h / top, pad + plot_h * (1 - t / top)

    parts = [
        f'<svg id="scatter" class="plot" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        'aria-label="Helpfulness against truthfulness per model" xmlns="http://www.w3.org/2000/svg">'
    ]
    for step in range(5):
        value = top * step / 4
        x, _ = xy(value, 0)
        _, y = xy(0, value)
        parts.append(f'<line x1="{x:.1f}" y1="{pad}" x2="{x:.1f}" y2="{pad + plot_h}" class="grid"/>')
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" class="grid"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{pad + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{tick(value)}</text>"
        )
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{tick(value)}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle" class="axis-label">'
        "helpfulness (hScore)</text>"
        f'<text transform="translate(14 {pad + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        'class="axis-label">truthfulness (tScore)</text>'
    )
    for run, h, t in points:
        x, y = xy(h or 0.0, t or 0.0)
        parts.append(
            f'<g class="series" data-run="{esc(run.label)}"><title>{esc(run.label)}: hScore {fmt(h)}, '
            f'tScore {fmt(t)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="6" style="fill:{run.color}"/>'
            f'<text x="{x + 9:.1f}" y="{y + 4:.1f}" class="point-label">{esc(run.label)}</text></g>'
        )
    parts.append("</svg>")
    return (
        '<figure class="figure"><figcaption>Helpfulness vs truthfulness (higher is better)</figcaption>'
        f"{''.join(parts)}</figure>"
    )


#: At most this many headline figures (panels) and groups (rows) a benchmark's bars show.
_MAX_PANELS = 6
_MAX_GROUPS = 12


def _headlines(runs: Sequence[ReportRun]) -> list[str]:
    """The figures a benchmark's runs headline: the keys of ``metrics.json``'s ``intervals`` (its declared
    headlines, in declared order), else every metric; copies under another reading (``paper_f1`` beside
    ``f1``) left out."""
    keys: list[str] = []
    for run in runs:
        intervals = run.metrics.get("intervals")
        source = list(intervals) if isinstance(intervals, dict) and intervals else list(run.metric_values())
        keys += [k for k in source if k not in keys]
    values = [r.metric_values() for r in runs]
    groups: list[dict[str, Any]] = []
    for run in runs:
        found = run.metrics.get("groups")
        groups.append(found if isinstance(found, dict) else {})
    present = [
        k for k in keys
        if any(v.get(k) is not None for v in values)
        or any(isinstance(f, dict) and as_float(f.get(k)) is not None for g in groups for f in g.values())
    ]
    plain = set(present)
    return [k for k in present if not (k.startswith(("paper_", "robust_")) and k.split("_", 1)[1] in plain)]


def _interval(found: object) -> tuple[float, float] | None:
    if isinstance(found, dict):
        low, high = as_float(found.get("low")), as_float(found.get("high"))
        if low is not None and high is not None:
            return low, high
    return None


def _interval_words(found: object) -> str:
    if not isinstance(found, dict) or _interval(found) is None:
        return "no interval"
    level = as_float(found.get("level"))
    units = found.get("units")
    unit = found.get("unit")
    over = f", over {units} {unit}s" if isinstance(units, int) and unit else ""
    return (
        f"{(level or 0.95) * 100:g} % interval {fmt(as_float(found.get('low')))} to "
        f"{fmt(as_float(found.get('high')))}, {found.get('method') or '?'}{over}"
    )


def _bar_rows(runs: Sequence[ReportRun], key: str) -> list[tuple[str, list[tuple[ReportRun, float | None, Any]]]]:
    """Rows of one panel: the whole run ("all"), then each group, each with one (run, value, interval) a run."""
    names: list[str] = []
    for run in runs:
        groups = run.metrics.get("groups")
        if isinstance(groups, dict):
            names += [str(g) for g, f in groups.items() if isinstance(f, dict) and str(g) not in names]
    rows: list[tuple[str, list[tuple[ReportRun, float | None, Any]]]] = []
    overall = [(r, r.metric_values().get(key), (r.metrics.get("intervals") or {}).get(key)) for r in runs]
    rows.append(("all", overall))
    for name in names[:_MAX_GROUPS]:
        cells = []
        for run in runs:
            figures = (run.metrics.get("groups") or {}).get(name)
            value = as_float(figures.get(key)) if isinstance(figures, dict) else None
            found = ((run.metrics.get("group_intervals") or {}).get(name) or {}).get(key)
            cells.append((run, value, found))
        rows.append((name, cells))
    return [row for row in rows if any(value is not None for _, value, _ in row[1])]


def _panel_svg(benchmark: str, key: str, rows: list[tuple[str, list[tuple[ReportRun, float | None, Any]]]]) -> str:
    highs = [hi for _, cells in rows for _, v, f in cells for hi in ((_interval(f) or (v, v))[1], v) if hi is not None]
    lows = [lo for _, cells in rows for _, v, f in cells for lo in ((_interval(f) or (v, v))[0], v) if lo is not None]
    top = nice_max(max(highs, default=0.0))
    bottom = min(0.0, min(lows, default=0.0))
    if bottom < 0:
        bottom = -nice_max(-bottom)
    left, width, bar, gap, head = 118, 330, 12, 10, 26
    plot_w = width - left - 44
    runs_per_row = max(len(cells) for _, cells in rows)
    height = head + len(rows) * (runs_per_row * bar + gap) + 18

    def x(value: float) -> float:
        return left + plot_w * (value - bottom) / (top - bottom)

    parts = [
        f'<svg class="plot group-bars" data-benchmark="{esc(benchmark)}" data-metric="{esc(key)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" role="img" '
        f'aria-label="{esc(pretty(key))} per group, with intervals" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{left}" y="14" class="axis-label">{esc(pretty(key))}</text>',
    ]
    axis_y = height - 16
    for step in range(5):
        value = bottom + (top - bottom) * step / 4
        gx = x(value)
        parts.append(f'<line x1="{gx:.1f}" y1="{head - 6}" x2="{gx:.1f}" y2="{axis_y}" class="grid"/>')
        parts.append(f'<text x="{gx:.1f}" y="{axis_y + 12}" text-anchor="middle" class="tick">{tick(value)}</text>')
    y = float(head)
    for group, cells in rows:
        block = len(cells) * bar
        parts.append(
            f'<text x="{left - 6}" y="{y + block / 2 + 4:.1f}" text-anchor="end" class="tick">{esc(group)}</text>'
        )
        for run, figure, found in cells:
            if figure is not None:
                value = figure
                span = _interval(found)
                start, end = x(min(0.0, value) if bottom < 0 else bottom), x(value)
                if bottom < 0:
                    start, end = sorted((x(0.0), x(value)))
                attrs = (
                    f'class="bar" data-run="{esc(run.label)}" data-group="{esc(group)}" data-metric="{esc(key)}" '
                    f'data-value="{value:.6g}"'
                    + (f' data-low="{span[0]:.6g}" data-high="{span[1]:.6g}"' if span else "")
                )
                label_x = x(span[1]) if span else end
                parts.append(
                    f"<g {attrs}><title>{esc(run.label)} · {esc(group)} · {esc(pretty(key))}: {fmt(value)} "
                    f"({esc(_interval_words(found))})</title>"
                    f'<rect x="{start:.1f}" y="{y:.1f}" width="{max(end - start, 0.5):.1f}" height="{bar - 2}" '
                    f'style="fill:{run.color}"/>'
                )
                if span:
                    mid = y + (bar - 2) / 2
                    lo, hi = x(span[0]), x(span[1])
                    parts.append(
                        f'<path class="ci-whisker" d="M{lo:.1f} {mid:.1f}H{hi:.1f}M{lo:.1f} {mid - 3:.1f}V{mid + 3:.1f}'
                        f'M{hi:.1f} {mid - 3:.1f}V{mid + 3:.1f}"/>'
                    )
                parts.append(
                    f'<text x="{label_x + 4:.1f}" y="{y + bar - 3:.1f}" class="tick">{fmt(value)}</text></g>'
                )
            y += bar
        y += gap
    parts.append("</svg>")
    return "".join(parts)


def group_bars_svg(runs: Sequence[ReportRun]) -> str:
    """Per benchmark, bars of its headline figures for the whole run and each group (POPE's sets,
    HallusionBench's splits, AMBER's dimensions), one bar a run, each with the error bar of its interval
    (``intervals`` / ``group_intervals`` of metrics.json; docs/statistics.md)."""
    by_benchmark: dict[str, list[ReportRun]] = {}
    for run in runs:
        if run.metrics:
            by_benchmark.setdefault(run.benchmark, []).append(run)
    figures = []
    for benchmark, members in by_benchmark.items():
        keys = _headlines(members)
        panels = [
            _panel_svg(benchmark, key, rows) for key in keys[:_MAX_PANELS] if (rows := _bar_rows(members, key))
        ]
        if not panels:
            continue
        more = len(keys) - _MAX_PANELS
        note = (
            f'<p class="muted">{more} more figure(s) in the table above.</p>' if more > 0 else ""
        )
        legend = "".join(
            f'<li><span class="swatch" style="background:{r.color}"></span>{esc(r.label)}</li>' for r in members
        )
        with_intervals = any(r.metrics.get("intervals") or r.metrics.get("group_intervals") for r in members)
        bars_of = "per group, with their intervals (error bars)" if with_intervals else "(no intervals in metrics.json)"
        figures.append(
            f'<figure class="figure group-figure" data-benchmark="{esc(benchmark)}"><figcaption>'
            f"{esc(benchmark)}: headline figures {bars_of}</figcaption>"
            f'<div class="panels">{"".join(panels)}</div><ul class="legend">{legend}</ul>{note}</figure>'
        )
    return "".join(figures)
