"""``halluscope run``: score a model's answers on a benchmark into a run directory (resumable)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail, interactive, open_cache, parse_options


def run(
    benchmark: Annotated[
        str, typer.Option("--benchmark", "-b", help="Benchmark name (see `halluscope list`).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; re-run to resume).")],
    data: Annotated[
        Path | None, typer.Option("--data", help="Benchmark data file or folder (downloaded if omitted).")
    ] = None,
    responses: Annotated[
        Path | None,
        typer.Option(
            "--responses", "-r", help="Answers: halluscope JSONL or the benchmark's official layout."
        ),
    ] = None,
    responses_key: Annotated[
        str | None, typer.Option(help="Field holding the answers in an official-layout file.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Collect answers from this model first (provider/name)."),
    ] = None,
    model_opt: Annotated[list[str] | None, typer.Option(help="Model option key=value (repeatable).")] = None,
    max_tokens: Annotated[int, typer.Option(help="With --model: longest answer, in tokens.")] = 512,
    concurrency: Annotated[int, typer.Option(help="With --model: requests in flight at once.")] = 4,
    extractor: Annotated[str | None, typer.Option(help="Claim extractor: rules | llm.")] = None,
    extractor_model: Annotated[str | None, typer.Option(help="LLM for the llm extractor.")] = None,
    extractor_opt: Annotated[list[str] | None, typer.Option(help="Extractor option key=value.")] = None,
    judge: Annotated[
        str | None, typer.Option(help="Judge: similarity | typed | llm (benchmark default).")
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option(help="Embedding model (similarity, typed) or LLM (llm) for the judge.")
    ] = None,
    judge_opt: Annotated[list[str] | None, typer.Option(help="Judge option key=value (repeatable).")] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible endpoint for LLM stages (else $HALLUSCOPE_BASE_URL)."),
    ] = None,
    bench_opt: Annotated[
        list[str] | None, typer.Option(help="Benchmark option key=value (repeatable).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N samples.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Discard an existing run in --out.")] = False,
    strict: Annotated[bool, typer.Option(help="Stop if the responses file has any problem.")] = False,
    only_answered: Annotated[
        bool, typer.Option(help="With --responses: score only the samples the file answers.")
    ] = False,
    # runs.runner.DEFAULT_CHUNK_SIZE, written out so that `--help` need not import the runner.
    chunk_size: Annotated[int, typer.Option(help="Samples scored per batch (and per durable write).")] = 256,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Score answers on a benchmark: extract claims, judge them, and write spec, samples and metrics."""
    from halluscope.api import EvaluationError, create_benchmark, create_stage, known_sample_ids
    from halluscope.benchmarks import ScoringContext
    from halluscope.claims import EXTRACTORS
    from halluscope.judges import JUDGES
    from halluscope.registry import UnknownComponentError
    from halluscope.report.table import metrics_table
    from halluscope.responses import ResponsesError
    from halluscope.runs.runner import run_benchmark
    from halluscope.runs.store import RunDirError

    out_console = console()
    err_console = console(stderr=True)
    if (responses is None) == (model is None):
        fail("give exactly one of --responses FILE (answers you have) or --model SPEC (collect answers now)")
    if only_answered and responses is None:
        fail("--only-answered goes with --responses FILE")

    bench_options = parse_options(bench_opt, "--bench-opt")
    if limit is not None:
        bench_options["limit"] = limit
    try:
        bench = create_benchmark(benchmark, data, bench_options)
    except EvaluationError as error:
        fail(str(error))
    store = open_cache(cache, no_cache)

    def component(
        registry: Any,
        name: str | None,
        default: str | None,
        model_name: str | None,
        opts: list[str] | None,
        flag: str,
    ) -> Any:
        options = parse_options(opts, flag)
        if model_name:
            options["model"] = model_name
        try:
            return create_stage(
                registry, flag.strip("-").split("-")[0], name, default, options, cache=store, base_url=base_url
            )
        except EvaluationError as error:
            fail(str(error))

    ids = {s.id for s in bench.samples()}
    try:
        known_ids = known_sample_ids(benchmark, data, bench_options, bench)
    except EvaluationError as error:
        fail(str(error))
    spec_extra: dict[str, Any] = {}
    if responses is not None:
        try:
            loaded = bench.read_responses(responses, benchmark_ids=known_ids, key=responses_key)
        except (ResponsesError, ValueError, OSError) as error:
            fail(str(error))
        if loaded.problems:
            err_console.print(f"[yellow]{len(loaded.problems)} problem(s) in {responses}:[/yellow]")
            for problem in loaded.problems[:20]:
                err_console.print(f"  [yellow]•[/yellow] {problem}")
            if len(loaded.problems) > 20:
                err_console.print(f"  … and {len(loaded.problems) - 20} more")
            if strict:
                fail("stopping because of --strict")
        answers = loaded.responses
        spec_extra["responses"] = str(responses)
        spec_extra["model"] = None
    else:
        import asyncio

        from halluscope.models.spec import create_model
        from halluscope.runs.respond import collect_responses

        model_options = parse_options(model_opt, "--model-opt")
        try:
            model_obj = create_model(str(model), cache=store, **model_options)
        except (UnknownComponentError, ValueError, TypeError) as error:
            fail(f"model {model!r}: {error}")
        async def collect() -> dict[str, Any]:
            try:
                return await collect_responses(
                    bench, model_obj, out, limit=limit, concurrency=concurrency, max_tokens=max_tokens,
                    show_progress=not quiet and interactive(),
                )
            finally:
                await model_obj.aclose()

        answers = asyncio.run(collect())
        spec_extra["model"] = model_obj.identity()
        spec_extra["responses"] = str(out / "responses.jsonl")

    missing = len(ids - set(answers))
    if only_answered:
        from halluscope.runs.selection import answered_only

        bench = answered_only(bench, answers)
        ids &= set(answers)
        if missing:
            err_console.print(f"scoring the {len(ids)} answered samples; {missing} without an answer left out")
    elif missing:
        err_console.print(
            f"[yellow]{missing} of {len(ids)} samples have no response; they are recorded as failures "
            "and left out of the rates.[/yellow]"
        )

    ctx = ScoringContext(
        cache=store,
        extractor=component(
            EXTRACTORS, extractor, bench.default_extractor, extractor_model, extractor_opt, "--extractor-opt"
        ),
        judge=component(JUDGES, judge, bench.default_judge, judge_model, judge_opt, "--judge-opt"),
    )
    from halluscope.llm.client import LLMError

    try:
        report = run_benchmark(
            bench,
            answers,
            ctx,
            out,
            spec_extra=spec_extra,
            chunk_size=chunk_size,
            show_progress=not quiet and interactive(),
            overwrite=overwrite,
        )
    except RunDirError as error:
        fail(str(error))
    except LLMError as error:  # auth and bad-request failures stop the run: every item would fail alike
        fail(f"{type(error).__name__}: {error} (finished samples are saved; re-run to resume)")
    out_console.print(metrics_table(report.metrics, report.counts, title=f"{bench.name} — {out}"))
    out_console.print(f"run directory: {out}")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
