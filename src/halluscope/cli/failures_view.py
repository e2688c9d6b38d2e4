"""The samples a finished run could not score, said in the terminal where the user looks.

Why: a table with ``failed 2`` and nothing else makes the user open ``samples.jsonl`` to learn which items
failed and why. The first few failures are printed, one line each naming the item and the problem (each
failure's text already names its item), and how many more there are. The run hands them over
(:class:`~halluscope.runs.failures.FailedSamples`): nothing is read again to find them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halluscope.runs.failures import FailedSamples


def show_failures(err_console: Any, failures: FailedSamples) -> None:
    """After the metrics table: each failed sample's reason (the first few the run kept), else nothing."""
    if not failures.count:
        return
    from rich.markup import escape

    err_console.print(
        f"[yellow]{failures.count} sample(s) could not be scored (each reason is in samples.jsonl; fix the "
        "cause and run the same command again: only these are redone):[/yellow]"
    )
    for failed in failures.first:
        err_console.print(f"  [yellow]•[/yellow] {escape(failed.reason()[:300])}")
    if failures.more:
        err_console.print(f"  … and {failures.more} more")
