"""``halluscope data pull`` and ``halluscope data list``: a benchmark's official files, fetched or looked for.

This module only parses and presents: what each benchmark's files are is declared in its module
(:mod:`halluscope.benchmarks.data_sets` finds the declarations), and the fetching is
:func:`halluscope.download.pull`, the code path the loaders and ``eval --download`` use too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from halluscope.cli.common import console, fail

if TYPE_CHECKING:
    from halluscope.download import DataSet, PullReport

data_app = typer.Typer(
    name="data",
    help="Fetch the benchmarks' official files into the data folder, or list what is there.",
    no_args_is_help=True,
)

_ROOT_HELP = "Data root: each data set goes to DIR/<name> (default: the user cache's data/ folder)."


@data_app.command("pull")
def pull_data(
    names: Annotated[
        list[str], typer.Argument(help="Benchmarks or data sets (pope, repope, tri-he, ..., all).")
    ],
    to: Annotated[Path | None, typer.Option("--to", help=_ROOT_HELP)] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds to wait for a connection or for data (default 30, $HALLUSCOPE_DOWNLOAD_TIMEOUT)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Fetch each named benchmark's official files (checked against their sha256; resumed when interrupted).
    Files already there and intact are kept. Offline, it says which URLs to fetch and where to put them."""
    from halluscope.benchmarks.data_sets import UnknownDataError, data_sets_named, pull_named
    from halluscope.runs.transfer_progress import make_transfer_progress

    try:
        chosen = data_sets_named(names)
    except UnknownDataError as error:
        fail(str(error))
    progress = make_transfer_progress(not quiet)
    try:
        reports = pull_named(chosen, to, timeout=timeout, progress=progress)
    finally:
        progress.close()
    ok = [show_report(report) for report in reports]
    if not all(ok) or not reports:
        raise typer.Exit(1)


def show_report(report: PullReport) -> bool:
    """One summary line per data set, one line per failed file (or the offline line), and the by-hand steps;
    True when everything the data set needs from the network is now there."""
    from rich.markup import escape

    out, err = console(), console(stderr=True)
    data_set, folder = report.data_set, escape(str(report.folder))
    if report.offline:
        err.print(f"[bold red]offline:[/bold red] {escape(report.offline_line())}", soft_wrap=True)
    else:
        for outcome in report.failed:
            err.print(f"[bold red]error:[/bold red] {escape(outcome.message)}", soft_wrap=True)
    counts = {s: sum(1 for o in report.outcomes if o.status == s) for s in ("fetched", "present", "failed")}
    if data_set.files:
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing"
        colour = "green" if report.ok else "red"
        out.print(f"[{colour}]{escape(data_set.name)}[/{colour}]: {summary}  {folder}", soft_wrap=True)
    for line in by_hand_lines(data_set, report.folder):
        out.print(escape(line), soft_wrap=True)
    if not data_set.files:
        err.print(
            f"[bold red]error:[/bold red] {escape(data_set.title)}: no file can be fetched for you (see above)"
        )
        return False
    return report.ok


def by_hand_lines(data_set: DataSet, folder: Path) -> list[str]:
    """``by hand: WHAT from SOURCE into FOLDER (then OPTION)``, one line per step the data set declares."""
    lines = []
    for step in data_set.by_hand:
        into = folder / step.into if step.into else folder
        then = f" (then {step.option})" if step.option else ""
        lines.append(f"  by hand: {step.what} from {step.source} into {into}{then}")
    return lines


@data_app.command("list")
def list_data(to: Annotated[Path | None, typer.Option("--to", help=_ROOT_HELP)] = None) -> None:
    """Each data set: its benchmark, its files, how many are there intact, and its folder."""
    from rich.table import Table

    from halluscope.benchmarks._download import data_root
    from halluscope.benchmarks.data_sets import all_data_sets
    from halluscope.download import file_matches

    root = to if to is not None else data_root()
    table = Table(title=f"benchmark data under {root}")
    for column in ("data set", "benchmark", "files", "present", "missing", "by hand"):
        table.add_column(column)
    for name, (benchmark, data_set) in sorted(all_data_sets().items()):
        folder = data_set.folder(root)
        present = sum(1 for f in data_set.files if file_matches(folder / f.path, f))
        missing = len(data_set.files) - present
        table.add_row(
            name, benchmark, str(len(data_set.files)), str(present), str(missing), str(len(data_set.by_hand))
        )
    console().print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
