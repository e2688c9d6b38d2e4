"""The samples a finished run could not score, said in the terminal where the user looks.

Why: a table with ``failed 2`` and nothing else makes the user open ``samples.jsonl`` to learn which items
failed and why. The first few failures are printed, one line each naming the item and the problem (each
failure's text already names its item), and how many more there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape

#: Failures printed one by one; the rest are counted.
SHOWN = 5


def show_failures(err_console: Any, run_dir: Path, failed: Sequence[tuple[str, str]] | None = None) -> None:
    """After the metrics table: each failed sample's reason (the first :data:`SHOWN`), else nothing.

    ``failed`` (sample id, failure), when the run that just finished gave them: the log is then not read again
    (a second pass over every record of a large run, for what the runner already knew)."""
    if failed is None:
        from halluscope.runs.store import read_records

        try:
            failed = [(record.id, str(record.failure)) for record in read_records(run_dir) if record.failure]
        except (OSError, ValueError):
            return  # the run's own messages have said what is wrong with its folder
    if not failed:
        return
    err_console.print(
        f"[yellow]{len(failed)} sample(s) could not be scored (each reason is in samples.jsonl; fix the "
        "cause and run the same command again: only these are redone):[/yellow]"
    )
    for sample_id, reason in failed[:SHOWN]:
        if sample_id not in reason:
            reason = f"sample {sample_id}: {reason}"
        err_console.print(f"  [yellow]•[/yellow] {escape(reason[:300])}")
    if len(failed) > SHOWN:
        err_console.print(f"  … and {len(failed) - SHOWN} more")
