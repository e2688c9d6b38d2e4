"""``halluscope validate-judge``: measure judges on claims whose truth is known, and calibrate thresholds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail, open_cache, parse_options
from halluscope.cli.flags import flags_command


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _label(name: str, options: dict[str, Any]) -> str:
    shown = {k: v for k, v in options.items() if k not in {"cache"}}
    if not shown:
        return name
    return f"{name} ({', '.join(f'{k}={v}' for k, v in sorted(shown.items()))})"


def _parse_rates(text: str) -> list[float]:
    try:
        rates = sorted({float(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated numbers, got {text!r}", param_hint="--rates"
        ) from None
    if not rates or any(not 0.0 <= r <= 1.0 for r in rates):
        raise typer.BadParameter("rates must lie between 0 and 1", param_hint="--rates")
    return rates


@dataclass(frozen=True)
class ValidateFlags:
    """The options of ``halluscope validate-judge``, as typer parses them."""

    judge: Annotated[
        list[str],
        typer.Option("--judge", "-j", help="Judge to validate: similarity | typed | llm (repeatable)."),
    ]
    judge_opt: Annotated[
        list[str] | None, typer.Option(help="Judge option key=value, given to every --judge (repeatable).")
    ] = None
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="synthetic | tri-he.")] = "synthetic"
    set_: Annotated[
        str | None,
        typer.Option(
            "--set",
            help="real: the packaged hand-labelled real answers on Tri-HE images (or a path to a set in its "
            "format); --data is then Tri-HE's tri-he.json.",
        ),
    ] = None
    extractor: Annotated[
        str, typer.Option("--extractor", "-e", help="With --set real: extractor for the answers.")
    ] = "rules"
    extractor_opt: Annotated[
        list[str] | None, typer.Option(help="With --set real: extractor option key=value (repeatable).")
    ] = None
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Synthetic build folder, or tri-he.json (default: built / downloaded)."),
    ] = None
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None
    rates: Annotated[
        str, typer.Option(help="Injected hallucination rates for the curve.")
    ] = "0,0.1,0.2,0.3,0.5"
    seed: Annotated[int, typer.Option(help="Seed of the injected errors.")] = 0
    calibrate: Annotated[
        bool,
        typer.Option("--calibrate", help="Fit the similarity judge's thresholds and save them as --profile."),
    ] = False
    profile: Annotated[
        str | None, typer.Option(help="Name of the threshold profile --calibrate writes.")
    ] = None
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the full results as JSON.")] = None
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False


#: A judge to validate: registry name, the label of its column, its options.
JudgeEntry = tuple[str, str, dict[str, Any]]


@flags_command(ValidateFlags)
def validate_judge(flags: ValidateFlags) -> None:
    """How well do judges find hallucinations whose truth is known? Precision, recall, typing, calibration."""
    if flags.set_ is not None:
        _validate_real(flags, flags.set_)
        return
    chosen_rates = _checked_rates(flags)
    options = parse_options(flags.judge_opt, "--judge-opt")
    vset, store = _validation_set(flags, chosen_rates)
    out_console = console()
    calibration = None
    judges: list[JudgeEntry] = [(name, _label(name, options), options) for name in flags.judge]
    if flags.calibrate and flags.profile:
        calibration, calibrated = _calibrate(flags.profile, vset, options, store, show=_show_progress(flags))
        judges.append(calibrated)
    reports = _judge_reports(judges, vset, store, show=_show_progress(flags))
    print_reports(out_console, reports, benchmark=flags.benchmark, data=vset.data)
    if flags.out is not None:
        payload = {
            "benchmark": flags.benchmark,
            "data": vset.data,
            "rates": chosen_rates,
            "seed": flags.seed,
            "reports": [{"label": label, **report.model_dump(mode="json")} for label, report in reports],
            "calibration": calibration.model_dump(mode="json") if calibration else None,
        }
        flags.out.parent.mkdir(parents=True, exist_ok=True)
        flags.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        out_console.print(f"results written to {flags.out}")


def _show_progress(flags: ValidateFlags) -> bool:
    return not flags.quiet


def _validate_real(flags: ValidateFlags, set_: str) -> None:
    """``--set real``: the judges against the hand-labelled real answers (:mod:`.validate_real`)."""
    from halluscope.cli.validate_real import validate_real

    if flags.calibrate:
        fail("--calibrate works on the perturbation sets, not on --set real")
    options = parse_options(flags.judge_opt, "--judge-opt")
    validate_real(
        judges=[(name, _label(name, options), options) for name in flags.judge],
        extractor=flags.extractor,
        extractor_options=parse_options(flags.extractor_opt, "--extractor-opt"),
        set_path=None if set_ == "real" else Path(set_),
        data=flags.data,
        limit=flags.limit,
        store=open_cache(flags.cache, flags.no_cache),
        out=flags.out,
        quiet=flags.quiet,
    )


def _checked_rates(flags: ValidateFlags) -> list[float]:
    """``--rates``, once the benchmark and the ``--calibrate`` / ``--profile`` pair are checked."""
    if flags.benchmark not in {"synthetic", "tri-he"}:
        fail(f"validate-judge works on synthetic or tri-he, not {flags.benchmark!r}")
    if flags.calibrate and not flags.profile:
        fail("--calibrate needs --profile NAME: the name the fitted thresholds are saved under")
    if flags.profile and not flags.calibrate:
        fail("--profile names what --calibrate writes; to use a saved profile pass --judge-opt profile=NAME")
    if flags.calibrate and "similarity" not in flags.judge:
        fail("--calibrate fits the similarity judge's thresholds; add --judge similarity")
    return _parse_rates(flags.rates)


def _validation_set(flags: ValidateFlags, rates: list[float]) -> tuple[Any, Any]:
    """The known-truth questions (errors injected at ``rates``) and the cache the judges use."""
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.calibration.validate import synthetic_validation_set, tri_he_validation_set
    from halluscope.registry import UnknownComponentError

    try:
        bench = BENCHMARKS.create(flags.benchmark, data=flags.data)
    except (UnknownComponentError, ValueError, OSError) as error:
        fail(str(error))
    store = open_cache(flags.cache, flags.no_cache)
    build = synthetic_validation_set if flags.benchmark == "synthetic" else tri_he_validation_set
    try:
        vset = build(bench, rates=rates, seed=flags.seed, limit=flags.limit)
    except (ValueError, ImportError) as error:
        fail(f"could not build the validation set: {error}")
    if not vset.questions:
        fail(f"no questions with claims in {flags.benchmark} data {vset.data}")
    return vset, store


def _calibrate(
    profile: str, vset: Any, options: dict[str, Any], store: Any, *, show: bool
) -> tuple[Any, JudgeEntry]:
    """Fit the similarity judge's thresholds, save them as ``profile``, and say so; the calibration, and the
    similarity judge with that profile, to validate beside the others."""
    from halluscope.calibration.validate import calibrate_similarity, save_calibration
    from halluscope.runs.progress import make_progress

    progress = make_progress(show)
    try:
        calibration = calibrate_similarity(vset, model=options.get("model"), cache=store, progress=progress)
    except (ValueError, RuntimeError) as error:
        fail(f"calibration failed: {error}")
    finally:
        progress.close()
    path = save_calibration(profile, calibration)
    calibrated = {k: v for k, v in options.items() if k not in {"filter_threshold", "verdict_threshold"}}
    calibrated["profile"] = profile
    c = calibration
    console().print(
        f"calibrated similarity thresholds for {c.model}: filter {c.filter_threshold:g}, "
        f"verdict {c.verdict_threshold:g} — balanced accuracy {c.balanced_accuracy:.3f} "
        f"(two-fold held-out {_num(c.heldout_balanced_accuracy, 3)}; paper thresholds "
        f"{_num(c.paper_balanced_accuracy, 3)}); saved to {path}"
    )
    return calibration, ("similarity", _label("similarity", calibrated), calibrated)


def _judge_reports(judges: list[JudgeEntry], vset: Any, store: Any, *, show: bool) -> list[tuple[str, Any]]:
    """Each judge's report on the validation set, by its label."""
    from halluscope.calibration.validate import validate_judge
    from halluscope.cli.validate_real import claim_judge
    from halluscope.runs.progress import make_progress

    reports = []
    for name, label, opts in judges:
        judge_obj = claim_judge(name, opts, store)
        progress = make_progress(show)
        try:
            report = validate_judge(vset, judge_obj, store, progress=progress)
        finally:
            progress.close()
        reports.append((label, report))
    return reports


def print_reports(out_console: Any, reports: list[tuple[str, Any]], *, benchmark: str, data: str) -> None:
    """Two tables, one column per judge: claim-level detection, then the calibration curve."""
    from rich.table import Table

    table = Table(title=f"judge validation on {benchmark} (known truth): {data}")
    table.add_column("claim-level (%)")
    for label, _ in reports:
        table.add_column(label, justify="right", overflow="fold")
    first = reports[0][1]
    table.add_row("claims (planted)", *(f"{r.claims} ({r.hallucinated_claims})" for _, r in reports))
    rows: list[tuple[str, Any]] = [
        ("precision", lambda r: _pct(r.precision)),
        ("recall", lambda r: _pct(r.recall)),
    ]
    kinds = sorted({k for _, r in reports for k in r.recall_by_error})
    rows += [(f"  recall: {kind}", lambda r, kind=kind: _pct(r.recall_by_error.get(kind))) for kind in kinds]
    rows += [
        ("specificity", lambda r: _pct(r.specificity)),
        ("balanced accuracy", lambda r: _pct(r.balanced_accuracy)),
        ("typing (object/relation)", lambda r: _pct(r.typing_accuracy)),
        ("unjudged claims", lambda r: str(r.unjudged_claims)),
        ("curve gap (Hallu-Q pts)", lambda r: _num(r.curve_mae)),
        ("curve slope / intercept", lambda r: f"{_num(r.curve_slope, 2)} / {_num(r.curve_intercept)}"),
    ]
    for name, cell in rows:
        table.add_row(name, *(cell(r) for _, r in reports))
    out_console.print(table)

    curve = Table(title="calibration curve: Hallu-Q injected → measured (x100)")
    curve.add_column("rate", justify="right")
    curve.add_column("questions", justify="right")
    curve.add_column("injected", justify="right")
    for label, _ in reports:
        curve.add_column(label, justify="right", overflow="fold")
    for index, point in enumerate(first.curve):
        curve.add_row(
            f"{point.rate:g}",
            str(point.questions),
            _num(point.injected_hallu_q),
            *(_num(report.curve[index].measured_hallu_q) for _, report in reports),
        )
    out_console.print(curve)


def register(app: typer.Typer) -> None:
    app.command("validate-judge")(validate_judge)
