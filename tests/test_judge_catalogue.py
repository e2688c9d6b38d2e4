"""Which judges exist and which benchmarks each serves, as the user reads it (``--judge``'s help,
``halluscope list``, the refusal of a judge of another benchmark), made from the registries and from what
each benchmark declares: a judge or a benchmark added to a registry shows up without a second edit."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from halluscope.benchmarks import BENCHMARKS, benchmark_class, judge_belongs_elsewhere, judge_slots
from halluscope.cli.main import app
from halluscope.judges import JUDGE_KINDS


def _words(*args: str) -> set[str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"}, terminal_width=400)
    assert result.exit_code == 0, result.output
    return set(re.split(r"[\s|;:,.()│]+", result.output))


@pytest.mark.parametrize("command", ["run", "rejudge"])
def test_judge_help_lists_every_registered_judge(command: str) -> None:
    words = _words(command, "--help")
    every = {name for registry in JUDGE_KINDS.values() for name in registry.names()}
    assert {"vlm", "parser", "vlmevalkit", "hqh-rules", "hqh-llm", "mmhal-llm", "gavie-llm", "none", "itm"} <= every
    assert not every - words, f"`{command} --help` leaves out judges: {sorted(every - words)}"


def test_each_benchmark_with_a_judge_is_in_the_slot_of_its_declared_kind() -> None:
    slots = judge_slots()
    assert set(slots) == set(JUDGE_KINDS)
    for name in BENCHMARKS.names():
        declared = benchmark_class(name)
        holding = [kind for kind, names in slots.items() if name in names]
        if declared.default_judge is None:  # POPE, AMBER, CHAIR: scored without a judge
            assert holding == [], name
        else:
            assert holding == [declared.judge_kind], name
            assert declared.default_judge in JUDGE_KINDS[declared.judge_kind].names(), name
    assert slots["claims"] == ("tri-he", "synthetic")  # the catalogue's order, as messages name them
    assert all(slots.values()), "a kind of judge no benchmark takes"


def test_a_judge_of_another_benchmark_is_named_with_its_benchmarks() -> None:
    assert judge_belongs_elsewhere("hqh-rules", "answers") == "judge 'hqh-rules' belongs to --benchmark hqh"
    both = "judge 'typed' belongs to --benchmark tri-he or --benchmark synthetic"
    assert judge_belongs_elsewhere("typed", "hqh") == both
    assert judge_belongs_elsewhere("no-such-judge", "claims") is None


def test_list_names_the_benchmarks_each_kind_of_judge_serves() -> None:
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "400"}, terminal_width=400)
    assert result.exit_code == 0, result.output
    for names in judge_slots().values():
        assert f"judge ({', '.join(names)})" in result.output
