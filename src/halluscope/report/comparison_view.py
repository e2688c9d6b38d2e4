"""Terminal tables of paired comparisons and detectable differences (``halluscope report``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from halluscope.report.compare import RunComparison, detectable_difference, run_intervals

__all__ = ["comparison_table", "format_p", "power_table", "verdict"]

#: The level below which a Holm-adjusted p-value is called a difference.
ALPHA = 0.05


def format_p(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def verdict(difference: float, p_adjusted: float | None, higher_is_better: bool | None) -> str:
    """"better" / "worse" where the Holm-adjusted p is below 5 %, "no clear difference" otherwise; for a metric
    without a better direction (the yes-ratio), "higher" / "lower"."""
    if p_adjusted is None or p_adjusted >= ALPHA or difference == 0:
        return "no clear difference"
    if higher_is_better is None:
        return "higher" if difference > 0 else "lower"
    return "better" if (difference > 0) == higher_is_better else "worse"


def comparison_table(comparison: RunComparison, level: float) -> Any:
    """One candidate against the baseline: a row per headline metric."""
    from rich.table import Table

    title = (
        f"{comparison.candidate} vs {comparison.baseline} ({comparison.benchmark}): "
        f"{comparison.shared_items} items in common of {comparison.baseline_items} and {comparison.candidate_items}"
    )
    table = Table(title=title)
    for name in ("metric", "baseline", "candidate", "difference", f"{100 * level:g} % interval", "p", "p (Holm)", ""):
        table.add_column(name, justify="left" if name in ("metric", "") else "right")
    for metric in comparison.metrics:
        c = metric.comparison
        if c is None:
            table.add_row(metric.metric, "—", "—", "—", "", "", "", "undefined in a run")
            continue
        interval = "" if c.interval is None else f"[{c.interval.low:+.2f}, {c.interval.high:+.2f}]"
        direction = metric.higher_is_better
        table.add_row(
            metric.metric, f"{c.baseline:.2f}", f"{c.candidate:.2f}", f"{c.difference:+.2f}", interval,
            format_p(c.p_value), format_p(c.p_adjusted), f"{verdict(c.difference, c.p_adjusted, direction)} ({c.test})",
        )  # fmt: skip
    return table


def power_table(run_dirs: Sequence[Path], level: float) -> Any:
    """Per run and headline: the smallest difference from a second run of the same size and clustering that a
    two-sided test at 5 % detects with 80 % power (from the run's own standard error; a paired comparison on
    the same items usually detects less)."""
    from rich.table import Table

    table = Table(title="smallest difference detectable (80 % power, 5 % level, unpaired)")
    table.add_column("run")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("detectable difference", justify="right")
    table.add_column("items / units", justify="right")
    for run_dir in run_dirs:
        declarations, intervals = run_intervals(Path(run_dir), level=level)
        for declaration in declarations:
            interval = intervals.get(declaration.name)
            mdd = detectable_difference(interval, paired=False)
            table.add_row(
                Path(run_dir).name, declaration.name,
                "—" if interval is None else f"[{interval.low:.1f}, {interval.high:.1f}]",
                "—" if mdd is None else f"{mdd:.2f}",
                "" if interval is None else f"{interval.n} / {interval.units} {interval.unit}s",
            )  # fmt: skip
    return table
