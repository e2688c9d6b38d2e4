"""``halluscope respond``: collect a model's answers to a benchmark into OUT/responses.jsonl, resumably."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail, join_urls, open_cache, parse_options
from halluscope.cli.flags import flags_command


@dataclass(frozen=True)
class RespondFlags:
    """The options of ``halluscope respond``, as typer parses them."""

    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name.")]
    models: Annotated[
        list[str],
        typer.Option(
            "--model",
            "-m",
            help="Model spec: [mitigation:]provider/name[?key=value&...] (see `halluscope models`); one per run.",
        ),
    ]
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (created; re-run to resume).")]
    data: Annotated[Path | None, typer.Option("--data", help="Benchmark data file or folder.")] = None
    limit: Annotated[
        int | None, typer.Option(help="Ask only the first N samples, in the benchmark's order.")
    ] = None
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 4
    mitigation: Annotated[
        list[str] | None,
        typer.Option(help="Wrap the model in a mitigation (eyes-closed, general-description); repeatable."),
    ] = None
    model_opt: Annotated[
        list[str] | None, typer.Option(help="Backend option key=value (repeatable).")
    ] = None
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            help="OpenAI-compatible endpoint (else $HALLUSCOPE_BASE_URL / $OPENAI_BASE_URL, comma-separated)."
            + ' Repeat it for several replicas of one model.'
        ),
    ] = None
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the API key (else $HALLUSCOPE_API_KEY/$OPENAI_API_KEY)."
        ),
    ] = None
    max_side: Annotated[
        int | None,
        typer.Option(help="Longest image side sent to remote models, in pixels (default: each image as stored)."),
    ] = None
    max_tokens: Annotated[int, typer.Option(help="Longest answer, in tokens.")] = 512
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: greedy).")] = 0.0
    seed: Annotated[int | None, typer.Option(help="Sampling seed, for backends that take one.")] = None
    logprobs: Annotated[
        int | None, typer.Option(help="Keep per-token log-probabilities with this many alternatives.")
    ] = None
    bench_opt: Annotated[
        list[str] | None,
        typer.Option(help="Benchmark option key=value (repeatable); halluscope list shows each benchmark's."),
    ] = None
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False


@flags_command(RespondFlags)
def respond(flags: RespondFlags) -> None:
    """Ask a model every question of a benchmark; answers stream to OUT/responses.jsonl; re-run to resume."""
    if len(flags.models) != 1:
        # One OUT holds one model's answers; silently keeping the last --model would answer with it alone.
        fail(
            f"respond collects one model's answers per --out, got --model {' --model '.join(flags.models)}; "
            "run it once per model, each with its own --out"
        )
    bench, selection = _benchmark(flags)
    spec, model = _model(flags)
    answers = _collect(flags, bench, selection, spec, model)
    _show_answered(flags, selection, answers)


def _benchmark(flags: RespondFlags) -> tuple[Any, Any]:
    """The benchmark, and the samples to ask: its first ``--limit`` N, as ``halluscope run`` selects them."""
    from halluscope.benchmarks import BENCHMARKS
    from halluscope.registry import UnknownComponentError
    from halluscope.runs.selection import first_samples, limit_from_options

    try:
        chosen = limit_from_options(parse_options(flags.bench_opt, "--bench-opt"), flags.limit)
        if chosen.note:
            console(stderr=True).print(f"note: {chosen.note}", style="yellow", markup=False, highlight=False)
        bench = BENCHMARKS.create(flags.benchmark, data=flags.data, **chosen.bench_options)
        return bench, first_samples(bench, chosen.limit)
    except (UnknownComponentError, ValueError, OSError) as error:
        fail(str(error))


def _model(flags: RespondFlags) -> tuple[Any, Any]:
    """The model's spec (mitigations applied) and the model, given the generic flags its backend takes."""
    from halluscope.models.replay import ReplayError
    from halluscope.models.spec import ModelSpecError, create_model, spec_with_mitigations
    from halluscope.registry import UnknownComponentError

    model = flags.models[0]
    options: dict[str, Any] = parse_options(flags.model_opt, "--model-opt")
    generic = {
        "base_url": join_urls(flags.base_url),
        "api_key_env": flags.api_key_env,
        "max_side": flags.max_side,
        "concurrency": flags.concurrency,
    }
    store = open_cache(flags.cache, flags.no_cache)
    try:
        spec = spec_with_mitigations(model, list(flags.mitigation or []))
        model_obj = create_model(
            spec, cache=store, **_supported(spec, {**generic, **options}, explicit=set(options))
        )
    except (ModelSpecError, UnknownComponentError, ReplayError, ValueError, TypeError) as error:
        fail(f"model {model!r}: {error}")
    return spec, model_obj


def _collect(flags: RespondFlags, bench: Any, selection: Any, spec: Any, model: Any) -> dict[str, Any]:
    """Ask the model, writing to OUT as answers come; the model is closed however it ends."""
    from halluscope.cli.common import exit_interrupted
    from halluscope.models.replay import ReplayError
    from halluscope.runs.interrupt import run_async
    from halluscope.runs.respond import Generation, RespondError, collect_responses

    async def main() -> dict[str, Any]:
        try:
            return await collect_responses(
                bench,
                model,
                flags.out,
                concurrency=flags.concurrency,
                show_progress=not flags.quiet,
                generation=Generation(
                    max_tokens=flags.max_tokens, temperature=flags.temperature, seed=flags.seed,
                    top_logprobs=flags.logprobs,
                ),
                model_name=spec.render(),
                selection=selection,
            )
        finally:
            await model.aclose()

    answers: dict[str, Any] = {}
    try:
        answers = run_async(main())  # Ctrl-C and SIGTERM stop it at once; answers already written are kept
    except KeyboardInterrupt:
        exit_interrupted()
    except (RespondError, ReplayError) as error:
        fail(str(error))
    return answers


def _show_answered(flags: RespondFlags, selection: Any, answers: dict[str, Any]) -> None:
    """How many were answered, left unasked for a missing image, or failed (exit 1 when any failed)."""
    from halluscope.runs.respond import RESPOND_ERRORS_FILE, RESPONSES_FILE

    out = flags.out
    err = console(stderr=True)
    total = len(selection)
    failed = total - len(answers)
    console().print(f"{len(answers)} of {total} answered → {out / RESPONSES_FILE}")
    no_image = _missing_images(out)
    if no_image:
        err.print(
            f"[yellow]{no_image} not asked: their image is missing or outside the images folder; listed in "
            f"{out / RESPOND_ERRORS_FILE}[/yellow]"
        )
        failed -= no_image
    if failed:
        err.print(f"[yellow]{failed} failed; see {out / RESPOND_ERRORS_FILE} (re-run to retry them)[/yellow]")
        raise typer.Exit(1)


def _missing_images(out: Path) -> int:
    """Samples left unasked for a missing image, as respond.json counts them (0 when unreadable)."""
    import json

    from halluscope.runs.respond import RESPOND_META_FILE

    try:
        counts = json.loads((out / RESPOND_META_FILE).read_text(encoding="utf-8")).get("counts", {})
    except (OSError, ValueError):
        return 0
    return int(counts.get("missing_images", 0) or 0)


def _supported(spec: Any, options: dict[str, Any], *, explicit: set[str]) -> dict[str, Any]:
    """Generic flags go to the backends that take them: ``--concurrency`` is dropped for backends without a
    connection pool (it still sets the collector's parallelism), while ``--base-url``, ``--api-key-env`` and
    ``--max-side`` given to a backend with no use for them are errors. ``--model-opt`` options always go
    through, so a typo is reported by the backend."""
    from halluscope.models import MODELS
    from halluscope.models.spec import ModelSpecError, accepted_options, parse_model_spec

    def base_accepts(provider: str, name: str) -> set[str] | None:
        accepted = accepted_options(MODELS.factory(provider))
        if accepted is None and provider in {"blind", "scene-oracle"}:
            inner = parse_model_spec(name)
            return base_accepts(inner.provider, inner.name)
        return accepted

    accepted = base_accepts(spec.provider, spec.name)
    kept: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key in explicit or accepted is None or key in accepted:
            kept[key] = value
        elif key != "concurrency":
            flag = "--" + key.replace("_", "-")
            raise ModelSpecError(f"{flag} does not apply to model provider {spec.provider!r}")
    return kept


def register(app: typer.Typer) -> None:
    app.command("respond")(respond)
