"""Commands whose options are the fields of a dataclass.

A command such as ``halluscope run`` has two dozen options. Written as two dozen parameters of one function,
the parsing, the checks and the work grow together into one long body. Here the options are declared once,
as the fields of a frozen dataclass (each annotated with its ``typer.Option``), and the command's body
receives one value of that class: the body stays short, and the option table can be read on its own.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F")


def flags_command(flags_type: type[F]) -> Callable[[Callable[[F], None]], Callable[..., None]]:
    """Turn ``body(flags)`` into a typer command whose options are the fields of ``flags_type``.

    Typer reads a command's options from its signature; the command made here carries a signature built
    from the dataclass's fields (name, ``Annotated[..., typer.Option(...)]`` type and default), and calls
    ``body`` with the dataclass filled from what typer parsed. The body's docstring is the command's help.
    """
    hints = typing.get_type_hints(flags_type, include_extras=True)
    parameters = [
        inspect.Parameter(
            spec.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=hints[spec.name],
            default=spec.default if spec.default is not dataclasses.MISSING else inspect.Parameter.empty,
        )
        for spec in dataclasses.fields(flags_type)  # type: ignore[arg-type]
    ]

    def wrap(body: Callable[[F], None]) -> Callable[..., None]:
        def command(**values: Any) -> None:
            body(flags_type(**values))

        command.__name__ = body.__name__
        command.__qualname__ = body.__qualname__
        command.__doc__ = body.__doc__
        command.__module__ = body.__module__
        command.__annotations__ = {}
        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return command

    return wrap
