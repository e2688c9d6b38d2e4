"""The ``halluscope`` command line. Each command lives in its own module under ``halluscope.cli`` and
exposes ``register(app)``; modules keep heavy imports inside the command functions so ``--help`` is instant.
"""

from __future__ import annotations

import importlib
import os

import typer

# halluscope shows its own progress bars; library download/loading bars would only add noise.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    name="halluscope",
    help="Measure how much vision-language models hallucinate, against scene graphs of the images.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

#: Command modules, in the order they appear in ``--help``.
COMMAND_MODULES = [
    "halluscope.cli.run",
    "halluscope.cli.eval",
    "halluscope.cli.data",
    "halluscope.cli.rejudge",
    "halluscope.cli.respond",
    "halluscope.cli.report",
    "halluscope.cli.listing",
    "halluscope.cli.models",
    "halluscope.cli.build",
    "halluscope.cli.synthetic",
    "halluscope.cli.validate",
    "halluscope.cli.quality",
    "halluscope.cli.demo",
    "halluscope.cli.serve",
]


def _print_version(value: bool) -> None:
    if value:
        from halluscope.version import __version__

        typer.echo(f"halluscope {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", help="Print halluscope's version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Measure how much vision-language models hallucinate, against scene graphs of the images."""


def _register_all() -> None:
    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        module.register(app)


_register_all()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
