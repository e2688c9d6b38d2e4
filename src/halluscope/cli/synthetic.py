"""``halluscope build synthetic``: rendered scenes with exact scene graphs, for calibrating the instrument."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from halluscope.cli.common import console, fail


def synthetic(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Output folder (new, empty, or an earlier build).")
    ],
    n: Annotated[int, typer.Option("--n", "-n", help="Number of images.")] = 100,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same bytes.")] = 0,
    questions_per_image: Annotated[int, typer.Option(help="Open (Tri-HE-kind) questions per image.")] = 4,
    reefknot_per_image: Annotated[
        int, typer.Option(help="Relations per image asked in Reefknot form (yes/no twin, MCQ, VQA).")
    ] = 3,
    min_objects: Annotated[int, typer.Option(help="Fewest objects in an image (2-5).")] = 2,
    max_objects: Annotated[int, typer.Option(help="Most objects in an image (2-5).")] = 4,
) -> None:
    """Render synthetic scenes whose relations are true by construction, with questions of both kinds."""
    from rich.table import Table

    from halluscope.builders.synthetic import SyntheticDataError, build_synthetic

    try:
        summary = build_synthetic(
            out,
            n,
            seed,
            questions_per_image=questions_per_image,
            reefknot_per_image=reefknot_per_image,
            min_objects=min_objects,
            max_objects=max_objects,
        )
    except (SyntheticDataError, ValueError, OSError) as error:
        fail(str(error))
        return
    table = Table(title=f"synthetic scenes — {out}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("images", str(summary.images))
    table.add_row("objects", str(summary.objects))
    table.add_row("true relations", str(summary.relations))
    for relation, count in summary.relation_counts.items():
        table.add_row(f"  {relation}", str(count))
    table.add_row("open questions (questions.json, tri-he.json)", str(summary.questions))
    for name, count in summary.reefknot.items():
        table.add_row(f"reefknot/{name}", str(count))
    out_console = console()
    out_console.print(table)
    out_console.print(
        f"open questions: halluscope run --benchmark synthetic --data {out} --model sim/oracle --out RUN\n"
        f"Reefknot items: halluscope run --benchmark reefknot --data {out / 'reefknot'} "
        f"--bench-opt images={out / 'images'} --responses FILE --out RUN"
    )


def register(app: typer.Typer) -> None:
    """Adds ``synthetic`` to the ``build`` sub-app (which ``halluscope.cli.build`` mounts on ``app``)."""
    from halluscope.cli.build import build_app

    build_app.command("synthetic")(synthetic)
