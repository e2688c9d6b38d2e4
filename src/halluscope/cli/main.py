"""The ``halluscope`` command line. Each command lives in its own module under ``halluscope.cli`` and
exposes ``register(app)``; modules keep heavy imports inside the command functions so ``--help`` is instant.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import typer

# halluscope shows its own progress bars; library download/loading bars would only add noise.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_app = typer.Typer(
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


#: The modules that register each top-level command (``build``'s sub-commands come from two); a test checks it
#: against what the modules register.
COMMANDS: dict[str, tuple[str, ...]] = {
    "run": ("halluscope.cli.run",),
    "eval": ("halluscope.cli.eval",),
    "data": ("halluscope.cli.data",),
    "rejudge": ("halluscope.cli.rejudge",),
    "respond": ("halluscope.cli.respond",),
    "report": ("halluscope.cli.report",),
    "list": ("halluscope.cli.listing",),
    "models": ("halluscope.cli.models",),
    "build": ("halluscope.cli.build", "halluscope.cli.synthetic"),
    "validate-judge": ("halluscope.cli.validate",),
    "quality": ("halluscope.cli.quality",),
    "demo": ("halluscope.cli.demo",),
    "serve": ("halluscope.cli.serve",),
}

_registered: set[str] = set()


@_app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", help="Print halluscope's version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Measure how much vision-language models hallucinate, against scene graphs of the images."""


def register_commands(module_names: Iterable[str] = COMMAND_MODULES) -> typer.Typer:
    """The app with the commands of ``module_names`` registered (each module once per process: ``build``'s
    sub-app is shared, so a second registration would list its commands twice)."""
    for module_name in module_names:
        if module_name not in _registered:
            importlib.import_module(module_name).register(_app)
            _registered.add(module_name)
    return _app


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The command modules a command line needs: only its own command's when it names one (a user waits for
    every start of ``halluscope run``, and the other commands' modules cost a fifth of a second to import),
    every module otherwise (``--help``, ``--version``, a mistyped command listed among the right ones)."""
    return COMMANDS.get(argv[0], tuple(COMMAND_MODULES)) if argv else tuple(COMMAND_MODULES)


def __getattr__(name: str) -> Any:
    # ``from halluscope.cli.main import app``: the whole app, every command registered.
    if name == "app":
        return register_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    register_commands(modules_for(sys.argv[1:]))()


if __name__ == "__main__":
    main()
