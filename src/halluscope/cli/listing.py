"""``halluscope list``: what can be plugged in — benchmarks, extractors, judges, model providers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from halluscope.cli.common import console

if TYPE_CHECKING:
    from halluscope.registry import Registry


def list_components() -> None:
    """List the registered benchmarks, claim extractors, judges and model providers, and each benchmark's
    options (--bench-opt)."""
    from rich.table import Table

    from halluscope.benchmarks import BENCHMARKS, judge_slots
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import JUDGE_KINDS
    from halluscope.models import MODELS

    table = Table(title="halluscope components")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("what it is")
    slots = judge_slots()
    judges: list[tuple[str, Registry[Any]]] = [
        (f"judge ({', '.join(slots[kind])})", registry) for kind, registry in JUDGE_KINDS.items()
    ]
    others: list[tuple[str, Registry[Any]]] = [("benchmark", BENCHMARKS), ("extractor", EXTRACTORS)]
    for kind, registry in (*others, *judges, ("model", MODELS)):
        for name in registry.names():
            table.add_row(kind, name, registry.descriptions.get(name, ""))
    console().print(table)
    console().print(benchmark_options_table())


def benchmark_options_table() -> Any:
    """Every benchmark's options, from what each declares (so this table cannot fall behind the code)."""
    from rich.table import Table

    from halluscope.benchmarks import BENCHMARKS, benchmark_class
    from halluscope.options import option_rows

    table = Table(title="benchmark options (--bench-opt key=value)")
    for column in ("benchmark", "option", "values", "default", "what it does"):
        table.add_column(column)
    for name in BENCHMARKS.names():
        rows = option_rows(benchmark_class(name).options) or [("(none)", "", "", "")]
        for index, (option, values, default, text) in enumerate(rows):
            table.add_row(name if index == 0 else "", option, values, default, text, end_section=index == len(rows) - 1)
    return table


def register(app: typer.Typer) -> None:
    app.command("list")(list_components)
