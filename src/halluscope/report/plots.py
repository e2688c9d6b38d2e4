"""The report's plots as inline SVG: a radar (or bars) of hallucination rates, helpfulness vs truthfulness.

Server-side SVG rather than a plotting library, so the file needs no script or network to show them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from halluscope.report.formatting import esc, fmt, metric_keys_of, nice_max, pretty, tick
from halluscope.report.rundir import ReportRun


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
