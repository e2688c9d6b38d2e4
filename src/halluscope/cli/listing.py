"""``halluscope list``: what can be plugged in — benchmarks, extractors, judges, model providers."""

from __future__ import annotations

import typer

from halluscope.cli.common import console


def list_components() -> None:
    """List the registered benchmarks, claim extractors, judges and model providers."""
    from rich.table import Table

    from halluscope.benchmarks import BENCHMARKS
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import ANSWER_JUDGES, ENTAILMENT_JUDGES, JUDGES, VISUAL_ENTAILMENT_JUDGES
    from halluscope.models import MODELS

    table = Table(title="halluscope components")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("what it is")
    for kind, registry in (
        ("benchmark", BENCHMARKS),
        ("extractor", EXTRACTORS),
        ("judge", JUDGES),
        ("judge (reefknot vqa)", ENTAILMENT_JUDGES),
        ("judge (hallusionbench)", ANSWER_JUDGES),
        ("judge (prove)", VISUAL_ENTAILMENT_JUDGES),
        ("model", MODELS),
    ):
        for name in registry.names():
            table.add_row(kind, name, registry.descriptions.get(name, ""))
    console().print(table)


def register(app: typer.Typer) -> None:
    app.command("list")(list_components)
