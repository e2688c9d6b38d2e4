"""One check for options a component does not take, so that every typo is the same clear error; and the
typed declaration of an option, from which a benchmark's options are parsed, checked, listed and documented.

Components take their options as keyword arguments (``--judge-opt key=value`` on the command line); an
option nobody reads would otherwise be accepted, recorded in spec.json, and silently change nothing.

A benchmark declares each option once (:class:`BenchmarkOption`: name, kind, default, choices, help), so the
parsing of ``--bench-opt`` values, the list of names it takes, ``halluscope list`` and the option table of its
doc page cannot drift apart, as hand-kept lists in three places did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "OPTION_KINDS", "BenchmarkOption", "check_options", "markdown_table", "option_rows", "parse_declared", "split_csv",
]  # fmt: skip

#: What an option's value is, and so how a ``--bench-opt`` value (a string, number or bool after the command
#: line's conversion) or a Python value is read: ``text`` and ``choice`` a string (a choice's membership is
#: checked by the component itself, with its own message, so Python and the command line say the same),
#: ``csv`` a list of strings (a comma list or a Python list), ``path`` a file or folder (empty: none),
#: ``bool``, ``int`` and ``float`` as named.
OPTION_KINDS = ("text", "choice", "csv", "path", "bool", "int", "float")


def check_options(component: str, unknown: Mapping[str, Any] | Iterable[str], known: Iterable[str]) -> None:
    """Raise ``ValueError`` naming ``component``, the unknown option(s) and the ones it takes."""
    names = sorted(unknown)
    if names:
        takes = ", ".join(sorted(known)) or "(none)"
        # The number of samples is chosen by the run for every benchmark alike (--limit), not by a benchmark.
        hint = "; the number of samples is the run's --limit N" if "limit" in names else ""
        raise ValueError(f"{component}: unknown option(s) {', '.join(names)}; it takes: {takes}{hint}")


def split_csv(value: Any) -> list[str]:
    """A list option as given: a comma list on the command line (``types=count,OCR``), or a list in Python."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


@dataclass(frozen=True)
class BenchmarkOption:
    """One option a benchmark takes: its name, its kind (:data:`OPTION_KINDS`), its default as the component
    applies it (None: none, or "all" where ``default_text`` says so), its choices and one line of help."""

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    #: The default in words, where the value alone would mislead (a default that depends on another option).
    default_text: str = ""

    def __post_init__(self) -> None:
        if self.kind not in OPTION_KINDS:
            raise ValueError(f"option {self.name!r}: kind must be one of {', '.join(OPTION_KINDS)}, not {self.kind!r}")

    def parse(self, value: Any, component: str) -> Any:
        """The value as the component takes it; ``ValueError`` naming the option when it cannot be read."""
        try:
            return _PARSERS[self.kind](value)
        except (TypeError, ValueError):
            raise ValueError(f"{component}: option {self.name} takes {_KIND_WORDS[self.kind]}, got {value!r}") from None

    def values(self) -> str:
        """What the option takes, in words: its choices, or its kind."""
        if self.choices:
            listed = ", ".join(self.choices)
            return f"a comma list of {listed}" if self.kind == "csv" else listed
        return _KIND_WORDS[self.kind]

    def shown_default(self) -> str:
        """The default as a user would type it, for help and doc tables."""
        if self.default_text:
            return self.default_text
        if self.default is None:
            return "none"
        if isinstance(self.default, (list, tuple)):
            return ",".join(str(v) for v in self.default)
        return str(self.default)


def parse_declared(component: str, declared: Sequence[BenchmarkOption], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` checked against ``declared`` (unknown names are the one error of :func:`check_options`) and each
    value read by its option's kind. A value of None means "not given": the component's default applies."""
    by_name = {option.name: option for option in declared}
    check_options(component, set(given) - set(by_name), by_name)
    return {name: by_name[name].parse(value, component) for name, value in given.items() if value is not None}


def option_rows(declared: Sequence[BenchmarkOption]) -> list[tuple[str, str, str, str]]:
    """(name, values, default, help) of each option, in declared order: the rows of ``halluscope list`` and of
    the option table of each benchmark's doc page."""
    return [(o.name, o.values(), o.shown_default(), o.help) for o in declared]


def markdown_table(declared: Sequence[BenchmarkOption]) -> str:
    """The option table of a doc page, made from the declarations (a test keeps each page's copy in sync)."""
    lines = ["| option | values | default | what it does |", "|---|---|---|---|"]
    for name, values, default, text in option_rows(declared):
        cells = (f"`{name}`", values, default, text)
        lines.append("| " + " | ".join(_markdown_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _markdown_cell(text: str) -> str:
    """A table cell that renders as written: a pipe would end the cell, ``<image_id>`` would be read as HTML."""
    return text.replace("|", "\\|").replace("<", "\\<").replace(">", "\\>")


def _text(value: Any) -> str:
    return str(value)


def _csv(value: Any) -> list[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]  # "--bench-opt types=1" arrives as a number
    if not isinstance(value, (str, list, tuple, set, frozenset)):
        raise TypeError(value)
    return split_csv(value)


def _path(value: Any) -> Path | None:
    if not isinstance(value, (str, Path)):
        raise TypeError(value)
    return Path(value) if value else None


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    text = str(value).strip().lower()
    if text not in words:
        raise ValueError(value)
    return words[text]


def _int(value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    return int(value)


def _float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    return float(value)


_PARSERS = {"text": _text, "choice": _text, "csv": _csv, "path": _path, "bool": _bool, "int": _int, "float": _float}
_KIND_WORDS = {
    "text": "text", "choice": "one of its choices", "csv": "a comma list", "path": "a path",
    "bool": "true or false", "int": "a whole number", "float": "a number",
}  # fmt: skip
