"""Each model's hallucination profile across a suite's benchmarks: object, attribute and relation
hallucination, in discriminative (yes/no, choice) and generative (free answer) questions.

Why a profile beside the per-benchmark ranking: a headline says which model is better on one benchmark, not
where a model goes wrong. Each benchmark declares which of its figures measures which kind of hallucination in
which form (:class:`halluscope.stages.ProfileFigure`); a cell is the mean, over the figures of the model's
runs that measure that kind in that form, of the share hallucinated in percent (a hallucination rate as it
is, an accuracy as 100 - accuracy), and names the figures it averages. Lower is better in every cell. The
figures come from each run's ``metrics.json`` only, so a profile is as old or new as the runs it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from halluscope.runs.store import RunDirError, read_metrics
from halluscope.stages import PROFILE_FORMS, PROFILE_KINDS, ProfileFigure

__all__ = ["PROFILE_COLUMNS", "SHORT", "ProfileCell", "build_profile", "cell_text"]

#: The profile's columns, in order: (kind, form).
PROFILE_COLUMNS = tuple((kind, form) for kind in PROFILE_KINDS for form in PROFILE_FORMS)
#: A column's short heading, for the terminal and markdown tables.
SHORT = {"discriminative": "disc.", "generative": "gen."}


class ProfileCell(BaseModel):
    """One model, one kind of hallucination in one form: the mean share hallucinated and what it averages."""

    model_config = ConfigDict(frozen=True)

    model: str
    kind: str
    form: str
    value: float
    #: ``benchmark figure = share hallucinated`` for each figure averaged (``pope 100 - accuracy = 14.97``).
    sources: list[str]


def _declared(benchmark: str) -> tuple[ProfileFigure, ...]:
    """The figures a benchmark declares; none for a name no longer registered."""
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.registry import UnknownComponentError

    try:
        factory = BENCHMARKS.factory(benchmark)
    except (UnknownComponentError, ImportError):
        return ()
    cls = getattr(factory, "__self__", factory)
    return tuple(getattr(cls, "profile", ()))


def _figure(report: Any, metric: str) -> float | None:
    group, _, name = metric.rpartition("/")
    source = (report.groups or {}).get(group, {}) if group else report.metrics
    value = source.get(name) if isinstance(source, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def build_profile(runs: Sequence[tuple[str, Path]]) -> list[ProfileCell]:
    """The profile cells of finished runs ``(model label, run folder)``, in model then column order; a
    model with no figure for a column has no cell there."""
    found: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    for model, run_dir in runs:
        try:
            report = read_metrics(run_dir)
        except RunDirError:
            continue
        for figure in _declared(report.benchmark):
            value = _figure(report, figure.metric)
            if value is None:
                continue
            share, what = (value, figure.metric) if figure.rate else (100.0 - value, f"100 - {figure.metric}")
            found.setdefault((model, figure.kind, figure.form), []).append(
                (f"{report.benchmark} {what}", share)
            )
    models = list(dict.fromkeys(model for model, _ in runs))
    cells = []
    for model in models:
        for kind, form in PROFILE_COLUMNS:
            shares = found.get((model, kind, form))
            if shares:
                cells.append(
                    ProfileCell(
                        model=model, kind=kind, form=form, value=sum(v for _, v in shares) / len(shares),
                        sources=[f"{name} = {v:.2f}" for name, v in shares],
                    )
                )  # fmt: skip
    return cells


def cell_text(cells: Sequence[ProfileCell], model: str, kind: str, form: str) -> str:
    """A cell as shown in the tables: its value, or a dash where the model's runs measure nothing there."""
    cell = next((c for c in cells if (c.model, c.kind, c.form) == (model, kind, form)), None)
    return "–" if cell is None else f"{cell.value:.2f}"
