"""Each benchmark declares its options once; parsing, the unknown-option error, ``halluscope list`` and the
option table of its doc page are made from that declaration and cannot fall behind it.

Run this file with ``HALLUSCOPE_WRITE_OPTION_TABLES=1`` to rewrite the doc pages' tables after changing a
declaration (the tests then check the rewritten pages).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS, benchmark_class
from halluscope.options import BenchmarkOption, markdown_table, parse_declared

ROOT = Path(__file__).resolve().parents[1]
#: Where each benchmark's options are documented (Tri-HE's page is the README's first section).
PAGES = {name: ROOT / "docs" / f"{name}.md" for name in BENCHMARKS.names()} | {"tri-he": ROOT / "README.md"}
BEGIN = (
    "<!-- options: made from the benchmark's declared options (as halluscope list shows them); "
    "tests/test_benchmark_options.py checks this copy -->\n"
)
END = "<!-- end of options -->\n"
#: Constructor arguments that are the Python API's alone: objects spec.json could not record.
PYTHON_ONLY = {("reefknot", "entailment")}


def _documented_table(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"{page} needs one generated options table"
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


@pytest.mark.parametrize("name", BENCHMARKS.names())
def test_each_doc_page_holds_the_table_of_the_declared_options(name: str) -> None:
    declared = benchmark_class(name).options
    if not declared:
        assert not PAGES[name].exists() or BEGIN not in PAGES[name].read_text(encoding="utf-8")
        return
    expected = markdown_table(declared)
    if os.environ.get("HALLUSCOPE_WRITE_OPTION_TABLES"):
        text = PAGES[name].read_text(encoding="utf-8")
        before, rest = text.split(BEGIN, 1)
        PAGES[name].write_text(before + BEGIN + expected + END + rest.split(END, 1)[1], encoding="utf-8")
    assert _documented_table(PAGES[name]) == expected, f"{PAGES[name]}: the options table is out of date"


@pytest.mark.parametrize("name", BENCHMARKS.names())
def test_the_declarations_and_the_constructor_agree(name: str) -> None:
    """Every keyword of ``__init__`` is declared (an undeclared one could not be given on the command line), and
    each declared default is the one ``__init__`` applies."""
    cls = benchmark_class(name)
    parameters = {p: v for p, v in inspect.signature(cls.__init__).parameters.items() if p not in ("self", "data")}
    declared = {option.name: option for option in cls.options}
    assert set(parameters) - {p for b, p in PYTHON_ONLY if b == name} == set(declared)
    for option in declared.values():
        if option.default is not None:
            assert _same(option.parse(option.default, name), parameters[option.name].default), option.name


def _same(parsed: Any, default: Any) -> bool:
    if isinstance(parsed, list):
        return parsed == [str(v) for v in default]
    return bool(parsed == default)


def test_unknown_options_are_the_same_one_line_error() -> None:
    pope = benchmark_class("pope")
    with pytest.raises(ValueError) as caught:
        pope.from_options(sorces="coco")
    assert str(caught.value) == (
        "the POPE benchmark: unknown option(s) sorces; it takes: images, labels, missing_images, mode, prompt, "
        "questions, repope_data, settings, sources"
    )
    with pytest.raises(ValueError, match=r"^the synthetic benchmark: unknown option\(s\) x; it takes: \(none\)$"):
        benchmark_class("synthetic").from_options(x=1)
    with pytest.raises(ValueError, match="the number of samples is the run's --limit N"):
        benchmark_class("mmhal").from_options(limit=3)


def test_a_value_that_cannot_be_read_names_the_option_before_any_data_is_read() -> None:
    chair = benchmark_class("chair")
    with pytest.raises(ValueError) as caught:
        chair.from_options(sample="many")
    assert str(caught.value) == "the CHAIR benchmark: option sample takes a whole number, got 'many'"
    with pytest.raises(ValueError, match=r"^the AMBER benchmark: option similarity_threshold takes a number"):
        benchmark_class("amber").from_options(similarity_threshold="high")
    with pytest.raises(ValueError, match=r"^the Tri-HE benchmark: option images takes a path, got 3$"):
        benchmark_class("tri-he").from_options(images=3)


def test_values_are_read_by_their_kind() -> None:
    declared = (
        BenchmarkOption("types", "csv", ""), BenchmarkOption("images", "path", ""), BenchmarkOption("on", "bool", ""),
        BenchmarkOption("n", "int", ""), BenchmarkOption("t", "float", ""), BenchmarkOption("prompt", "text", ""),
    )  # fmt: skip
    read = parse_declared("x", declared, {"types": " count, OCR ", "images": "", "on": "yes", "n": 3.0, "t": 1,
                                          "prompt": True})  # fmt: skip
    assert read == {"types": ["count", "OCR"], "images": None, "on": True, "n": 3, "t": 1.0, "prompt": "True"}
    assert parse_declared("x", declared, {"types": ["a", "b"], "images": None}) == {"types": ["a", "b"]}
    for bad in ({"n": 2.5}, {"n": True}, {"on": "maybe"}, {"t": False}):
        with pytest.raises(ValueError, match=f"^x: option {next(iter(bad))} takes "):
            parse_declared("x", declared, bad)
    with pytest.raises(ValueError, match="kind must be one of"):
        BenchmarkOption("x", "number", "")


def test_list_shows_every_declared_option_of_every_benchmark() -> None:
    from halluscope.cli.main import app

    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    rows = [" ".join(line.replace("│", " ").split()) for line in result.output.splitlines()]
    for name in BENCHMARKS.names():
        for option in benchmark_class(name).options:
            assert any(row.startswith(f"{option.name} ") or f" {option.name} " in row for row in rows), (name, option)
    assert any(row.startswith("pope sources a comma list of coco, aokvqa, gqa") for row in rows)
