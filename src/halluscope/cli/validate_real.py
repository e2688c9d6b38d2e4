"""``halluscope validate-judge --set real``: the instrument against hand-labelled real answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from halluscope.cli.common import console, fail

_SOURCES = {"hand": "hand claims", "hand+completed": "hand claims, graph completed"}


def _r(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _p(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}"


def validate_real(
    *,
    judges: list[tuple[str, str, dict[str, Any]]],
    extractor: str,
    extractor_options: dict[str, Any],
    set_path: Path | None,
    data: Path | None,
    limit: int | None,
    store: Any,
    out: Path | None,
    quiet: bool,
) -> None:
    """Score the labelled answers with each judge, three ways, and print one table."""
    from halluscope.calibration.real import self_agreement

    answers, bench = _real_set(set_path, data, limit)
    extract = _extractor(extractor, extractor_options, store)
    out_console = console()
    show = not quiet
    reports = []
    for name, label, options in judges:
        judge = claim_judge(name, options, store)
        reports += _readings(judge, label, answers, bench, extract, extractor, store, show=show)
        await_close(judge)
    print_real(out_console, reports, answers)
    if out is not None:
        payload = {
            "set": str(set_path or "real (packaged)"),
            "answers": len(answers),
            "self_agreement": self_agreement(answers),
            "reports": [r.model_dump(mode="json") for r in reports],
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        out_console.print(f"results written to {out}")


def _real_set(set_path: Path | None, data: Path | None, limit: int | None) -> tuple[list[Any], Any]:
    """The labelled answers (the first ``limit``) and the Tri-HE benchmark whose scene graphs judge them."""
    from halluscope.benchmarks.tri_he import TriHE
    from halluscope.calibration.real import load_real_set

    answers: list[Any] = []
    try:
        answers = load_real_set(set_path)
    except ValueError as error:
        fail(str(error))
    if limit is not None:
        answers = answers[:limit]
    try:
        bench = TriHE(data=data)
        scenes = bench.scenes
    except (ValueError, OSError) as error:
        fail(f"the real set is judged against Tri-HE's scene graphs: {error}")
    missing = sorted({a.image_id for a in answers} - set(scenes))
    if missing:
        fail(f"the Tri-HE file {bench.path} has no image {', '.join(missing[:5])} used by the real set")
    return answers, bench


def _extractor(name: str, options: dict[str, Any], store: Any) -> Any:
    from halluscope.claims import EXTRACTORS
    from halluscope.registry import UnknownComponentError

    try:
        return EXTRACTORS.create(name, cache=store, **options)
    except (UnknownComponentError, ValueError, TypeError) as error:
        fail(f"extractor {name!r}: {error}")


def claim_judge(name: str, options: dict[str, Any], store: Any) -> Any:
    """The claim judge ``name``, or a clear stop: unknown, badly configured, or a judge of whole answers."""
    from halluscope.benchmarks import judge_belongs_elsewhere
    from halluscope.judges import JUDGES
    from halluscope.registry import UnknownComponentError

    elsewhere = None if name in JUDGES.names() else judge_belongs_elsewhere(name, "claims")
    if elsewhere:
        fail(f"{elsewhere}; validate-judge checks judges of claims: {', '.join(JUDGES.names())}")
    try:
        return JUDGES.create(name, cache=store, **options)
    except (UnknownComponentError, ValueError, TypeError) as error:
        fail(f"judge {name!r}: {error}")


#: The readings of one judge: whose claims (the extractor's from the answer, or the hand-made ones, or those
#: completed from the graph), the extractor for ``answer``, and the rate counted.
_READINGS: list[tuple[str, bool, str]] = [
    ("answer", True, "paper"),
    ("answer", True, "default"),
    ("hand", False, "paper"),
    ("hand", False, "default"),
    ("hand+completed", False, "default"),
]


def _readings(
    judge: Any, label: str, answers: list[Any], bench: Any, extract: Any, extractor: str, store: Any,
    *, show: bool,
) -> list[Any]:  # fmt: skip
    """One judge's reports on the real set, one per reading it supports (a judge with no three-way reading
    has no 'default' rate apart from the paper's, and nothing to complete)."""
    from halluscope.calibration.real import run_real
    from halluscope.runs.progress import make_progress

    reports = []
    progress = make_progress(show)
    try:
        progress.start(f"{label} on {len(answers)} real answers", total=len(answers) * len(_READINGS))
        for claims_from, extracted, rate in _READINGS:
            tag = f"{_SOURCES.get(claims_from, f'{extractor} claims')} + {label}"
            report, _records = run_real(
                answers,
                bench.scenes.get,
                judge=judge,
                cache=store,
                extractor=extract if extracted else None,
                claims_from=claims_from,  # type: ignore[arg-type]
                rate=rate,  # type: ignore[arg-type]
                label=f"{tag}, {rate} rate",
                on_chunk=progress.advance,
                image_of=lambda image_id: str(bench.images_dir / f"{image_id}.jpg"),
            )
            has_support = report.all.unverifiable_share is not None
            if rate == "default" and not has_support:
                continue  # this judge has no three-way reading: the default rate is the paper rate
            if claims_from == "hand+completed" and not has_support:
                continue
            reports.append(report)
    finally:
        progress.close()
    return reports


def await_close(component: Any) -> None:
    import asyncio
    import contextlib

    with contextlib.suppress(Exception):  # closing is best effort; the figures are already computed
        asyncio.run(component.aclose())


def print_real(out_console: Any, reports: list[Any], answers: list[Any]) -> None:
    from rich.table import Table

    from halluscope.calibration.real import self_agreement

    dev = sum(a.split == "dev" for a in answers)
    table = Table(
        title=(
            f"judges on {len(answers)} hand-labelled real answers ({dev} dev, {len(answers) - dev} held out): "
            "r = Pearson of (100 - rate) with the 1-5 score"
        )
    )
    for column in (
        "configuration",
        "r",
        "r dev",
        "r held out",
        "mean rate",
        "labelled",
        "claim P/R %",
        "unverif. %",
    ):
        table.add_column(column, justify="left" if column == "configuration" else "right", overflow="fold")
    for report in reports:
        f = report.all
        table.add_row(
            report.label,
            _r(f.pearson),
            _r(report.dev.pearson),
            _r(report.heldout.pearson),
            f"{f.mean_rate:.1f}",
            f"{f.labelled_mean_rate:.1f}",
            f"{_p(f.precision)} / {_p(f.recall)}" if f.precision is not None or f.recall is not None else "—",
            "—" if f.unverifiable_share is None else f"{f.unverifiable_share:.0f}",
        )
    out_console.print(table)
    agreement = self_agreement(answers)
    if agreement["answers_relabelled"]:
        out_console.print(
            f"annotator's agreement with a second pass: scores Pearson {_r(agreement['score_pearson'])} "
            f"on {agreement['answers_relabelled']} answers; claim labels "
            f"{100 * float(agreement['claim_agreement'] or 0):.1f} % "
            f"equal on {agreement['claims_relabelled']} claims"
        )
    out_console.print(
        "[dim]rate: 'paper' counts every unsupported claim (Tri-HE); 'default' counts contradicted claims and "
        "absent objects. Claim P/R: 'hallucinated' against the hand labels (false), hand-made claims only.[/dim]"
    )
