"""``halluscope run``: score a model's answers on a benchmark into a run directory (resumable)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail, interactive, join_urls, open_cache, parse_options


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
        list[str] | None,
        typer.Option("--model", "-m", help="Collect answers from this model first (provider/name; one)."),
    ] = None,
    model_opt: Annotated[list[str] | None, typer.Option(help="Model option key=value (repeatable).")] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="With --model: longest answer, in tokens [default: 512].")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="With --model: requests in flight at once [default: 4].")
    ] = None,
    extractor: Annotated[str | None, typer.Option(help="Claim extractor: rules | llm.")] = None,
    extractor_model: Annotated[
        str | None, typer.Option(help="LLM for the llm extractor; local: the packaged model, run for this run.")
    ] = None,
    extractor_opt: Annotated[list[str] | None, typer.Option(help="Extractor option key=value.")] = None,
    judge: Annotated[
        str | None,
        typer.Option(help="Judge: similarity | typed | llm; Reefknot VQA: nli | llm (benchmark default)."),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(
            help="Embedding model (similarity, typed), NLI model (nli) or LLM (llm) for the judge; "
            "local: the packaged LLM on a llama.cpp server started for this run."
        ),
    ] = None,
    judge_opt: Annotated[list[str] | None, typer.Option(help="Judge option key=value (repeatable).")] = None,
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            help="OpenAI-compatible endpoint for LLM stages (else $HALLUSCOPE_BASE_URL, comma-separated)."
            + ' Repeat it for several replicas of one model.'
        ),
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
    # runs.runner.DEFAULT_MAX_FAILURE_SHARE, written out for the same reason.
    max_failure_share: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Exit 1 when the extractor or judge failed on more than this share of samples (or all).",
        ),
    ] = 0.1,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Score answers on a benchmark: extract claims, judge them, and write spec, samples and metrics."""
    from halluscope.api import (
        ENDPOINT_STAGES,
        EvaluationError,
        create_benchmark,
        create_stage,
        known_sample_ids,
        local_base_url_conflict,
        read_answers,
    )
    from halluscope.benchmarks import ScoringContext
    from halluscope.benchmarks.judge_aliases import move_judge_aliases
    from halluscope.claims import EXTRACTORS
    from halluscope.cli.local_llm import local_llm
    from halluscope.judges import judge_registry
    from halluscope.llm.local import is_local
    from halluscope.registry import UnknownComponentError
    from halluscope.report.table import metrics_table
    from halluscope.runs.runner import StageFailureError, check_run_dir, discard_run, run_benchmark
    from halluscope.runs.store import RunDirError

    out_console = console()
    err_console = console(stderr=True)
    if (responses is None) == (not model):
        fail("give exactly one of --responses FILE (answers you have) or --model SPEC (collect answers now)")
    if only_answered and responses is None:
        fail("--only-answered goes with --responses FILE")
    if model and len(model) > 1:
        fail(
            f"run scores one model at a time, got --model {' --model '.join(model)}; run once per model, "
            "each with its own --out, then compare them with `halluscope report`"
        )
    # Options that only act on the path not taken would be accepted and change nothing: refuse them.
    idle = [
        flag
        for flag, given, used in (
            ("--responses-key", responses_key is not None, responses is not None),
            ("--strict", strict, responses is not None),
            ("--model-opt", bool(model_opt), bool(model)),
            ("--max-tokens", max_tokens is not None, bool(model)),
            ("--concurrency", concurrency is not None, bool(model)),
        )
        if given and not used
    ]
    if idle:
        verb, pronoun = ("apply", "them") if len(idle) > 1 else ("applies", "it")
        fail(f"{', '.join(idle)} only {verb} with {'--responses' if model else '--model'}; leave {pronoun} out")

    bench_options = parse_options(bench_opt, "--bench-opt")
    if limit is not None:
        bench_options["limit"] = limit
    try:  # a judge given the old way (--bench-opt judge=llm) moves into the judge slot, with a note
        moved = move_judge_aliases(benchmark, bench_options, bool(judge or judge_model or judge_opt))
    except ValueError as error:
        fail(str(error))
    if moved is not None:
        err_console.print(f"note: {moved.note}", style="yellow", markup=False, highlight=False)
        bench_options, judge, judge_opt = moved.bench_options, moved.judge, moved.cli_options()
    try:
        bench = create_benchmark(benchmark, data, bench_options)
    except EvaluationError as error:
        fail(str(error))
    store = open_cache(cache, no_cache)

    stage_choices = {
        "extractor": (extractor, extractor_model, extractor_opt, bench.default_extractor),
        "judge": (judge, judge_model, judge_opt, bench.default_judge),
    }
    llm_stage = False
    local_stages: list[str] = []  # stages whose model is "local": the packaged server, not --base-url
    for stage, (chosen_name, stage_model, stage_opts, default_name) in stage_choices.items():
        if bench.uses_stage(stage):
            if is_local(stage_model or parse_options(stage_opts, f"--{stage}-opt").get("model")):
                local_stages.append(stage)
            else:
                llm_stage = llm_stage or (chosen_name or default_name) in ENDPOINT_STAGES
            continue
        given = [
            flag
            for flag, value in (
                (f"--{stage}", chosen_name), (f"--{stage}-model", stage_model), (f"--{stage}-opt", stage_opts)
            )
            if value
        ]  # fmt: skip
        if given:
            fail(
                f"{', '.join(given)}: the {bench.name} benchmark uses no {stage} for the selected samples "
                f"(see `halluscope list`), so this would change nothing; leave it out"
            )
    endpoints = join_urls(base_url)
    conflict = local_base_url_conflict(local_stages, ["llm"] if llm_stage else []) if endpoints else None
    if conflict:
        fail(conflict)
    if endpoints and not llm_stage:
        fail("--base-url is the endpoint of the llm extractor or judge, and neither is used in this run")

    def component(
        registry: Any,
        name: str | None,
        default: str | None,
        model_name: str | None,
        opts: list[str] | None,
        flag: str,
        local: Any,
    ) -> Any:
        options = parse_options(opts, flag)
        if model_name:
            options["model"] = model_name
        try:
            return create_stage(
                registry, flag.strip("-").split("-")[0], name, default, options, cache=store,
                base_url=endpoints, local=local,
            )  # fmt: skip
        except EvaluationError as error:
            fail(str(error))

    def check_out(fields: dict[str, Any]) -> None:
        """Refuse an --out holding another run before any answer is collected (not with --overwrite)."""
        if not overwrite:
            try:
                check_run_dir(out, fields, tuple(fields))
            except RunDirError as error:
                fail(str(error))

    ids = {s.id for s in bench.samples()}
    try:
        known_ids = known_sample_ids(benchmark, data, bench_options, bench)
    except EvaluationError as error:
        fail(str(error))
    spec_extra: dict[str, Any] = {}
    model_failures: dict[str, str] = {}
    if overwrite and model:
        discard_run(out)  # the answers of the run being replaced go too (the cache still has them)
    if responses is not None:
        check_out({"model": None, "responses": str(responses)})
        try:
            loaded = read_answers(bench, responses, benchmark_ids=known_ids, key=responses_key)
        except EvaluationError as error:
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
        spec_extra["responses_file"] = loaded.summary(responses)
        spec_extra["model"] = None
        if loaded.items:
            from halluscope.runs.selection import items_from_responses

            bench = items_from_responses(bench, loaded.items, loaded.notes.get("labels"))
            ids = {s.id for s in bench.samples()}
    else:
        import asyncio

        from halluscope.models.spec import create_model
        from halluscope.runs.respond import RespondError, collect_responses, read_respond_errors

        model_options = parse_options(model_opt, "--model-opt")
        try:
            model_obj = create_model((model or [""])[0], cache=store, **model_options)
        except (UnknownComponentError, ValueError, TypeError) as error:
            fail(f"model {model!r}: {error}")
        spec_extra["model"] = model_obj.identity()
        spec_extra["responses"] = str(out / "responses.jsonl")
        check_out({k: spec_extra[k] for k in ("model", "responses")})

        async def collect() -> dict[str, Any]:
            try:
                return await collect_responses(
                    bench, model_obj, out, limit=limit, concurrency=concurrency or 4,
                    max_tokens=max_tokens or 512,
                    show_progress=not quiet and interactive(),
                )
            finally:
                await model_obj.aclose()

        try:
            answers = asyncio.run(collect())
        except RespondError as error:
            fail(str(error))
        model_failures = read_respond_errors(out)

    missing = len(ids - set(answers))
    if only_answered:
        from halluscope.runs.selection import answered_only

        bench = answered_only(bench, answers)
        ids &= set(answers)
        if missing:
            err_console.print(f"scoring the {len(ids)} answered samples; {missing} without an answer left out")
    elif missing:
        asked = sum(1 for i in ids if i in model_failures)
        why = (
            f" ({asked} because the model's request failed: see {out / 'respond-errors.jsonl'})" if asked else ""
        )
        err_console.print(
            f"[yellow]{missing} of {len(ids)} samples have no response{why}; they are recorded as failures "
            "and left out of the rates.[/yellow]"
        )

    judges = judge_registry(bench.judge_kind)
    # --judge-model local / --extractor-model local: one packaged server, stopped however the run ends.
    with local_llm() as local:
        ctx = ScoringContext(
            cache=store,
            extractor=component(
                EXTRACTORS, extractor, bench.default_extractor, extractor_model, extractor_opt,
                "--extractor-opt", local,
            )
            if bench.uses_stage("extractor")
            else None,
            judge=component(
                judges, judge, bench.default_judge, judge_model, judge_opt, "--judge-opt", local
            )
            if bench.uses_stage("judge")
            else None,
        )
        if local.started:
            spec_extra["local_llm"] = local.describe()
        from halluscope.llm.errors import LLMError

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
                max_failure_share=max_failure_share,
                model_failures=model_failures,
            )
        except RunDirError as error:
            fail(str(error))
        except LLMError as error:  # auth and bad-request failures stop the run: every item would fail alike
            fail(f"{type(error).__name__}: {error} (finished samples are saved; re-run to resume)")
        except StageFailureError as error:
            warn_corrupt(err_console, error.report)
            out_console.print(
                metrics_table(error.report.metrics, error.report.counts, title=f"{bench.name} — {out}")
            )
            fail(
                f"{error} — the metrics above rest on the samples that were scored. Fix the cause and re-run "
                "the same command: the failed samples are retried, the rest are kept.",
                code=1,
            )
    warn_corrupt(err_console, report)
    out_console.print(metrics_table(report.metrics, report.counts, title=f"{bench.name} — {out}"))
    imported = spec_extra.get("responses_file") or {}
    if imported.get("labels"):
        out_console.print(f"labels: {imported['labels']}")
    if imported.get("problems"):
        count = imported["problems"]
        out_console.print(f"{count} problem(s) in the responses file, kept in spec.json (responses_file)")
    out_console.print(f"run directory: {out}")


def warn_corrupt(err_console: Any, report: Any) -> None:
    """Say which lines of the run log could not be read (their samples were redone)."""
    corrupt = report.details.get("corrupt_log_lines") or []
    if not corrupt:
        return
    err_console.print(
        f"[yellow]{len(corrupt)} corrupt line(s) in samples.jsonl could not be read; "
        "their samples were scored again:[/yellow]"
    )
    for entry in corrupt[:10]:
        which = f" (sample {entry['id']})" if entry.get("id") else ""
        err_console.print(f"  [yellow]•[/yellow] line {entry['line']}{which}: {entry['problem']}")
    if len(corrupt) > 10:
        err_console.print(f"  … and {len(corrupt) - 10} more")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
