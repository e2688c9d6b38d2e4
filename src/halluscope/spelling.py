"""Messages that name a run's options, phrased in the spelling of the surface the user wrote them on.

The same option is ``--judge-opt`` on the command line and ``judge_options=`` in :func:`halluscope.evaluate`;
an error raised deep in the run (a run folder that holds another run, a judge given twice) does not know
which one the user wrote. So such an error carries its message as a :class:`Message`: a template naming
options by their *name* (``{flag:base_url}``, or a :class:`Given` option with its value), phrased when it
reaches the surface (:meth:`PhrasedError.phrase`). ``str()`` of the error is the command line's phrasing.

How a name is spelled is a rule (:func:`spell`): the option ``max_tokens`` is ``--max-tokens`` and
``max_tokens=``; a mapping option ``judge_options`` is ``--judge-opt``. Only the spellings the rule cannot
make are listed (:data:`IRREGULAR`), so the table of a run's options is not written out again here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["IRREGULAR", "Given", "Message", "PhrasedError", "Spelled", "Surface", "phrase", "spell"]

#: Where the options were written: on the command line or as Python keyword arguments.
Surface = Literal["cli", "api"]

#: Options whose spelling the rule of :func:`spell` does not make: (command line, Python).
IRREGULAR: dict[str, tuple[str, str]] = {
    "responses": ("--responses FILE", "responses="),
    "model": ("--model SPEC", "model="),
    "overwrite": ("--overwrite", "overwrite=True"),
    "extractor_model": ("--extractor-model", "extractor_options['model']"),
    "judge_model": ("--judge-model", "judge_options['model']"),
    # The judge slot as a whole, where a message names every way of filling it.
    "judge_slot": ("--judge/--judge-model/--judge-opt", "judge=/judge_options="),
}


@runtime_checkable
class Spelled(Protocol):
    """A value of a message that is written differently on each surface (a :class:`Given`, a :class:`Message`)."""

    def phrase(self, surface: Surface) -> str: ...


def spell(option: str, surface: Surface) -> str:
    """``option`` (a run option's name, as in :class:`~halluscope.runs.config.RunConfig`) as it is written
    on ``surface``: ``--max-tokens`` or ``max_tokens=``; a mapping (``judge_options``) is ``--judge-opt``."""
    if option in IRREGULAR:
        cli, api = IRREGULAR[option]
        return cli if surface == "cli" else api
    if surface == "api":
        return f"{option}="
    stem = f"{option.removesuffix('_options')}_opt" if option.endswith("_options") else option
    return "--" + stem.replace("_", "-")


@dataclass(frozen=True)
class Given:
    """An option as the user gave it, with its value: ``--limit 3`` / ``limit=3``; with ``key``, one entry of
    a mapping option: ``--bench-opt limit=5`` / ``bench_options['limit']=5`` (without a value: the entry's
    name alone, ``--bench-opt limit`` / ``bench_options['limit']``). ``literal`` writes the value as is in
    Python too (a placeholder such as ``N``), else it is written as Python would (``judge='typed'``)."""

    option: str
    value: Any = None
    key: str | None = None
    literal: bool = False

    def phrase(self, surface: Surface) -> str:
        shown = self.value if surface == "cli" or self.literal else repr(self.value)
        if self.key is not None:
            entry = self.key if surface == "cli" else f"{spell(self.option, 'api').rstrip('=')}[{self.key!r}]"
            head = f"{spell(self.option, 'cli')} {entry}" if surface == "cli" else entry
            return head if self.value is None else f"{head}={shown}"
        if surface == "cli":
            return f"{spell(self.option, surface)} {shown}"
        return f"{spell(self.option, surface)}{shown}"


class _Flags:
    """What ``{flag:NAME}`` in a template formats: the option ``NAME`` spelled for one surface."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    def __format__(self, option: str) -> str:
        return spell(option, self.surface)


@dataclass(frozen=True)
class Message:
    """A message whose options are named, not spelled: ``template`` is a :meth:`str.format` string in which
    ``{flag:NAME}`` is an option's spelling and ``{field}`` one of ``values`` (a :class:`Spelled` one, such as
    :class:`Given`, is phrased too; other values are written as they are, so a path with braces is safe)."""

    template: str
    values: dict[str, Any]

    def phrase(self, surface: Surface) -> str:
        values = {k: v.phrase(surface) if isinstance(v, Spelled) else v for k, v in self.values.items()}
        return self.template.format(flag=_Flags(surface), **values)

    def __str__(self) -> str:
        return self.phrase("cli")


def phrase(template: str, /, **values: Any) -> Message:
    """A :class:`Message` (``phrase("choose another {flag:out}")``)."""
    return Message(template, values)


class PhrasedError(Exception):
    """An error whose message names options: ``str()`` is the command line's phrasing, :meth:`phrase` the
    phrasing of either surface. Subclass it together with the error's own base (``ValueError``, ...)."""

    def __init__(self, message: Message | str) -> None:
        self.message = message if isinstance(message, Message) else Message("{text}", {"text": message})
        super().__init__(str(self.message))

    def phrase(self, surface: Surface) -> str:
        """The message as the user of ``surface`` writes the options it names."""
        return self.message.phrase(surface)
