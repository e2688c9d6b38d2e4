"""The ``halluscope`` command line. Each command lives in its own module under ``halluscope.cli`` and
exposes ``register(app)``; modules keep heavy imports inside the command functions so ``--help`` is instant.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import sys
import threading
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

def _print_version(value: bool) -> None:
    if value:
        from halluscope.version import __version__

        typer.echo(f"halluscope {__version__}")
        raise typer.Exit()


#: The modules that register each top-level command (``build``'s sub-commands come from two), in the order
#: the commands appear in ``--help``; a test checks it against what the modules register.
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

#: Every command module, in that order.
COMMAND_MODULES = tuple(dict.fromkeys(module for modules in COMMANDS.values() for module in modules))

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
    every start of ``halluscope run``, and the other commands' modules cost up to a fifth of a second to import),
    every module otherwise (``--help``, ``--version``, a mistyped command listed among the right ones)."""
    return COMMANDS.get(argv[0], COMMAND_MODULES) if argv else COMMAND_MODULES


def __getattr__(name: str) -> Any:
    # ``from halluscope.cli.main import app``: the whole app, every command registered.
    if name == "app":
        return register_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Run the command line in this process; it ends with ``SystemExit``, as typer's apps do."""
    register_commands(modules_for(sys.argv[1:]))()


def command_line() -> None:
    """The ``halluscope`` program: :func:`main`, then the process ends without freeing, one by one, every
    object the command built. A Reefknot run holds some 100,000 samples, answers and records at its end, and
    the interpreter's teardown of them is a tenth of a second a user waits for after the work is done.

    Exit handlers run and the output is flushed first, so nothing written is lost; while a thread of ours is
    still running, or a profiler or coverage tool watches the process (they save what they saw as the
    interpreter ends), the ordinary exit is taken instead."""
    try:
        main()
        code: object = 0
    except SystemExit as stop:
        code = stop.code
    leave(code)


def _watched() -> bool:
    """Whether a tracer or profiler (``python -m cProfile``, ``coverage run``) is attached to this process."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+: tools such as coverage may use it instead
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))


def leave(code: object) -> None:
    """End the process with ``code`` (as ``SystemExit`` reads it: None is 0, a message is printed and is 1)."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if any(t.is_alive() for t in others) or _watched():
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe (``| head``) or a closed stream: nothing more can go there.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    command_line()
