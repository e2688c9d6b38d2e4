"""``halluscope report``: compare finished runs in a table; write CSV, markdown or an HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from halluscope.cli.common import console, fail


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories to compare.")],
    csv: Annotated[Path | None, typer.Option("--csv", help="Write the table as CSV here.")] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", "--md", help="Write a markdown table.")
    ] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report.")] = None,
    quality: Annotated[
        Path | None, typer.Option(help="With --html: add this quality.json (`halluscope quality`) as a section.")
    ] = None,
) -> None:
    """Print a comparison table of runs (rows) and their metrics (columns)."""
    from halluscope.report.table import rich_table, summarise_run, to_csv, to_markdown, write_text
    from halluscope.runs.store import RunDirError

    try:
        summaries = [summarise_run(d) for d in run_dirs]
    except RunDirError as error:
        fail(str(error))
    out = console()
    out.print(rich_table(summaries, title="halluscope runs", width=out.width))
    if csv:
        out.print(f"CSV: {write_text(csv, to_csv(summaries))}")
    if markdown:
        out.print(f"markdown: {write_text(markdown, to_markdown(summaries))}")
    if html:
        from halluscope.report.html import write_html_report

        section = None
        if quality is not None:
            from halluscope.quality.assess import QualityReport
            from halluscope.quality.render import html_section

            try:
                section = html_section(QualityReport.model_validate_json(quality.read_text(encoding="utf-8")))
            except (OSError, ValueError) as error:
                fail(f"{quality}: not a quality.json written by `halluscope quality` ({error})")
        out.print(f"HTML: {write_html_report(list(run_dirs), html, quality_html=section)}")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
