"""The old spellings of a judge as benchmark options, moved into the judge slot with a note.

HallusionBench's grader was once ``--bench-opt judge=llm --bench-opt llm_model=M`` and PROVE's visual
entailment ``--bench-opt entailment=vlm --bench-opt entailment_model=M``; both are now chosen as every
judge is (``--judge llm --judge-model M``). Commands and scripts written the old way keep working: the
orchestrator calls :func:`move_judge_aliases` once, before it builds the benchmark, and shows the note, which
says what to write instead. The run is then the same run as with the new spelling (same judge, same
``spec.json``), so a run started one way resumes the other way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from halluscope.spelling import Given, PhrasedError, Surface, phrase

__all__ = ["JudgeAliasError", "MovedJudge", "move_judge_aliases"]


class JudgeAliasError(PhrasedError, ValueError):
    """A judge given both the old way (a benchmark option) and the new way (the judge slot); its message
    names the options, phrased for the surface that gave them."""


@dataclass(frozen=True)
class MovedJudge:
    """The benchmark options without the old judge options, the judge they chose, and the note to show."""

    bench_options: dict[str, Any]
    judge: str
    judge_options: dict[str, Any]
    note: str


#: benchmark → (the option that named the judge, its default, {old option: the judge option it became}).
_ALIASES: dict[str, tuple[str, str, dict[str, str]]] = {
    "hallusionbench": (
        "judge",
        "parser",
        {"llm_model": "model", "llm_base_url": "base_url", "llm_api_key_env": "api_key_env"},
    ),
    "prove": (
        "entailment",
        "none",
        {"entailment_model": "model", "entailment_base_url": "base_url", "entailment_api_key_env": "api_key_env"},
    ),
}


def move_judge_aliases(benchmark: str, bench_options: Mapping[str, Any], judge_given: bool) -> MovedJudge | None:
    """The judge that ``bench_options`` of ``benchmark`` choose the old way, moved to the judge slot; None
    when they hold no old judge option. ``judge_given``: whether the judge slot was also filled (``--judge``,
    ``--judge-model`` or ``--judge-opt``), which is refused — the two could disagree.
    """
    if benchmark not in _ALIASES:
        return None
    name_option, default, renamed = _ALIASES[benchmark]
    old = [k for k in (name_option, *renamed) if k in bench_options]
    if not old:
        return None
    if judge_given:
        raise JudgeAliasError(
            phrase(
                "the {benchmark} judge is given twice: by {old} (the old spelling) and by {flag:judge_slot}; "
                "keep the {flag:judge} ones only",
                benchmark=benchmark, old=_OldKeys(tuple(old)),
            )
        )
    judge = str(bench_options.get(name_option) or default).strip().lower()
    options = {renamed[k]: bench_options[k] for k in renamed if bench_options.get(k) is not None}
    if benchmark == "prove" and judge == "itm":
        # As before: the ITM model ran on the benchmark's device and took no endpoint.
        options.pop("base_url", None)
        options.pop("api_key_env", None)
        if bench_options.get("device") is not None:
            options["device"] = bench_options["device"]
    rest = {k: v for k, v in bench_options.items() if k not in old}
    new = [f"--judge {judge}"]
    if "model" in options:
        new.append(f"--judge-model {options['model']}")
    new += [f"--judge-opt {k}={v}" for k, v in options.items() if k != "model"]
    python = f"judge={judge!r}" + (f", judge_options={options!r}" if options else "")
    given = " ".join(f"--bench-opt {k}={bench_options[k]}" for k in old)
    note = (
        f"{given} is the old spelling of the {benchmark} judge; write "
        f"{' '.join(new)} instead (in Python: {python})"
    )
    return MovedJudge(rest, judge, options, note)


@dataclass(frozen=True)
class _OldKeys:
    """The old judge options given, in either spelling: ``--bench-opt judge, llm_model`` on the command line,
    ``bench_options['judge'], bench_options['llm_model']`` in Python."""

    keys: tuple[str, ...]

    def phrase(self, surface: Surface) -> str:
        if surface == "cli":
            return f"--bench-opt {', '.join(self.keys)}"
        return ", ".join(Given("bench_options", key=key).phrase("api") for key in self.keys)
