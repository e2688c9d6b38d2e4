"""``halluscope rejudge``: score a finished run's answers with another judge, without asking the model again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from halluscope.cli.common import fail, join_urls, judge_names
from halluscope.cli.flags import flags_command
from halluscope.cli.run import execute_and_show, stage_choice


@dataclass(frozen=True)
class RejudgeFlags:
    """The options of ``halluscope rejudge``."""

    run_dir: Annotated[Path, typer.Argument(help="The finished run whose answers are judged again.")]
    out: Annotated[Path, typer.Option("--out", "-o", help="The new run directory (re-run to resume).")]
    judge: Annotated[
        str | None,
        typer.Option(help=f"The judge this time (the benchmark's default if omitted), by kind: {judge_names()}."),
    ] = None
    judge_model: Annotated[str | None, typer.Option(help="Model of the judge (as `run --judge-model`).")] = None
    judge_opt: Annotated[list[str] | None, typer.Option(help="Judge option key=value (repeatable).")] = None
    extractor: Annotated[str | None, typer.Option(help="Another claim extractor (the old run's if omitted).")] = None
    extractor_model: Annotated[str | None, typer.Option(help="Model of the extractor.")] = None
    extractor_opt: Annotated[list[str] | None, typer.Option(help="Extractor option key=value.")] = None
    base_url: Annotated[
        list[str] | None, typer.Option(help="OpenAI-compatible endpoint for LLM stages (the old run's if omitted).")
    ] = None
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False
    overwrite: Annotated[bool, typer.Option(help="Discard an existing run in --out.")] = False
    ci: Annotated[
        float, typer.Option("--ci", min=0.5, max=0.999, help="Confidence level of the headline intervals.")
    ] = 0.95
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False


@flags_command(RejudgeFlags)
def rejudge(flags: RejudgeFlags) -> None:
    """Judge a finished run's answers again with another judge; compare the two with `halluscope report OLD NEW`."""
    from halluscope.runs.config import EvaluationError
    from halluscope.runs.rejudge import rejudge_config

    extractor_given = flags.extractor or flags.extractor_model or flags.extractor_opt
    settings = {
        "cache": flags.cache, "use_cache": not flags.no_cache, "overwrite": flags.overwrite, "ci": flags.ci,
        "progress": not flags.quiet, "surface": "cli",
        **({"base_url": join_urls(flags.base_url)} if flags.base_url else {}),
    }  # fmt: skip
    try:
        config = rejudge_config(
            flags.run_dir, out=flags.out,
            judge=stage_choice("judge", flags.judge, flags.judge_model, flags.judge_opt),
            extractor=(
                stage_choice("extractor", flags.extractor, flags.extractor_model, flags.extractor_opt)
                if extractor_given else None
            ),
            settings=settings,
        )  # fmt: skip
    except EvaluationError as error:
        fail(str(error))
    execute_and_show(config)


def register(app: typer.Typer) -> None:
    app.command("rejudge")(rejudge)
