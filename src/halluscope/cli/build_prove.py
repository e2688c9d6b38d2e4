"""``halluscope build prove``: PROVE-style QA pairs with verification programs, and ``--verify`` to re-check.

Registered on the ``build`` sub-app by :mod:`halluscope.cli.build`. Heavy imports stay inside the command.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli.common import console, fail, join_urls, open_cache
from halluscope.cli.flags import flags_command
from halluscope.cli.graphs import GraphFormat, default_images, read_graphs


@dataclass(frozen=True)
class ProveFlags:
    """The options of ``halluscope build prove``, as typer parses them."""

    scene_graphs: Annotated[Path, typer.Option("--scene-graphs", "-g", help="Scene-graph file or folder.")]
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output folder (build), or report file (--verify).")
    ] = None
    graph_format: Annotated[
        GraphFormat,
        typer.Option("--format", "-f", help="tri-he, gqa, vg, or synthetic (a `build synthetic` folder)."),
    ] = GraphFormat.TRI_HE
    verify: Annotated[
        Path | None,
        typer.Option(
            help="Re-run the programs of this QA file ({image_id, question, answer, program} per line) "
            "against the scene graphs, with no LLM, and report each one's outcome."
        ),
    ] = None
    images: Annotated[
        Path | None, typer.Option(help="Image folder (default for tri-he: its images/).")
    ] = None
    limit_images: Annotated[int | None, typer.Option(help="Only the first N images.")] = None
    image_ids: Annotated[
        str | None, typer.Option(help="Only these image ids (comma-separated), after --limit-images.")
    ] = None
    pairs: Annotated[int, typer.Option(help="QA pairs to ask for per image (the paper: 10-15).")] = 12
    llm: Annotated[
        str | None,
        typer.Option(
            help="Generator/filter model on --base-url; `local` (the default without --base-url): the "
            "packaged Qwen2.5-Coder on a llama.cpp server started for this build."
        ),
    ] = None
    base_url: Annotated[
        list[str] | None,
        typer.Option(help="OpenAI-compatible endpoint for --llm (repeat it for several replicas)."),
    ] = None
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the endpoint's API key.")
    ] = None
    answer_threshold: Annotated[
        float, typer.Option(help="Embedding cosine at which a program's answer equals the stated one.")
    ] = 0.75
    duplicate_threshold: Annotated[
        float, typer.Option(help="Question cosine at which a later pair of an image is a duplicate.")
    ] = 0.9
    llm_filter: Annotated[
        bool,
        typer.Option(
            "--llm-filter/--no-llm-filter", help="LLM check for trivial/incomplete/unnatural pairs."
        ),
    ] = True
    orient: Annotated[
        bool | None,
        typer.Option("--orient/--no-orient", help="Repair object-first relations (default: on for tri-he)."),
    ] = None
    cpu_s: Annotated[int, typer.Option(help="CPU seconds per program.")] = 2
    memory_mb: Annotated[int, typer.Option(help="Memory per program, MiB.")] = 256
    embedding_model: Annotated[
        str | None, typer.Option(help="sentence-transformers model (default: the packaged MiniLM).")
    ] = None
    answer_tuples: Annotated[
        str,
        typer.Option(
            help="How the kept answers' qa_diff_tuples (answer minus question) are made: graph (the graph's "
            "tuples each text states; offline), rules (spaCy tuple extractor on both texts) or llm (the DSG "
            "tuple prompt on the --llm model, PROVE's recipe)."
        ),
    ] = "graph"
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False


@flags_command(ProveFlags)
def prove(flags: ProveFlags) -> None:
    """PROVE-style QA pairs, each kept only if its program, run in the sandbox over the graph, confirms it."""
    from halluscope.builders.prove import ProveBuildError
    from halluscope.sandbox import Limits, Sandbox, SandboxUnavailableError

    graphs = _chosen_graphs(flags)
    store = open_cache(flags.cache, flags.no_cache)
    embedder = _embedder(flags.embedding_model, store)
    orient = flags.graph_format is GraphFormat.TRI_HE if flags.orient is None else flags.orient
    try:
        with Sandbox(limits=Limits(cpu_s=flags.cpu_s, memory_mb=flags.memory_mb)) as sandbox:
            if flags.verify is not None:
                from halluscope.builders.prove import prepare_graphs

                graphs = prepare_graphs(graphs, orient)
                _verify(flags.verify, graphs, sandbox, embedder, flags.answer_threshold, flags.out)
                return
            summary = _build(flags, graphs, sandbox, embedder, store, orient)
    except SandboxUnavailableError as error:
        fail(str(error))
    except ProveBuildError as error:
        fail(str(error))
    _print_funnel(summary, flags.out)


def _chosen_graphs(flags: ProveFlags) -> dict[str, Any]:
    """The scene graphs to build from (or verify against), after the checks that need no model."""
    from halluscope.llm.local import is_local

    if is_local(flags.llm) and flags.base_url:
        fail(
            "--llm local runs the packaged model on a server of its own, and --base-url names another "
            "endpoint; give one of the two"
        )
    graphs = read_graphs(flags.scene_graphs, flags.graph_format, flags.limit_images)
    if flags.image_ids:
        wanted = [i.strip() for i in flags.image_ids.split(",") if i.strip()]
        unknown = [i for i in wanted if i not in graphs]
        if unknown:
            fail(f"no scene graph for image id(s) {', '.join(map(repr, unknown))} in {flags.scene_graphs}")
        graphs = {i: graphs[i] for i in wanted}
    if flags.answer_tuples not in ANSWER_TUPLES:
        fail(f"--answer-tuples {flags.answer_tuples!r}: choose one of {', '.join(ANSWER_TUPLES)}")
    return graphs


def _embedder(embedding_model: str | None, store: Any) -> Any:
    from halluscope.embeddings import EmbeddingModelError, load_embedder

    try:
        return load_embedder(embedding_model, cache=store)
    except EmbeddingModelError as error:
        fail(str(error))


def _build(
    flags: ProveFlags, graphs: dict[str, Any], sandbox: Any, embedder: Any, store: Any, orient: bool
) -> dict[str, Any]:
    """Generate, run and filter the QA pairs with the ``--llm`` model (the packaged one, started here, by
    default) and write the benchmark to ``--out``."""
    from halluscope.builders.prove import BuildOptions, ProveBuilder
    from halluscope.cli.local_llm import local_llm
    from halluscope.llm.client import stage_client

    out = flags.out
    if out is None:
        fail("--out is needed to build (the folder the benchmark is written to)")
    assert out is not None
    options = BuildOptions(
        pairs=flags.pairs,
        answer_threshold=flags.answer_threshold,
        duplicate_threshold=flags.duplicate_threshold,
        llm_filter=flags.llm_filter,
        orient=orient,
    )
    images = default_images(flags.images, flags.scene_graphs, flags.graph_format)
    with local_llm(n_ctx=6144) as local:
        llm, base_url = _generator(flags.llm, join_urls(flags.base_url), local)
        try:
            client = stage_client(
                "build prove", model=llm, base_url=base_url, api_key_env=flags.api_key_env,
                concurrency=1, timeout_s=900.0, cache=store,
            )  # fmt: skip
            extractor = _answer_tuple_extractor(flags.answer_tuples, llm, base_url, flags.api_key_env, store)
        except ValueError as error:
            fail(str(error))
        builder = ProveBuilder(client, embedder, sandbox, options)
        return _run_build(graphs, out, builder, images, client, extractor)


def _generator(llm: str | None, base_url: str | None, local: Any) -> tuple[str | None, str | None]:
    """The generator's model and endpoint: the packaged model's server for ``local`` or when none is named."""
    from halluscope.llm.local import is_local

    if is_local(llm) or (llm is None and base_url is None):
        from halluscope.llm.offline import LocalServerError, OfflineModelError

        try:
            server = local.server()
        except (LocalServerError, OfflineModelError) as error:
            fail(f"the packaged model (--llm local, the default) could not start: {error}")
        return server.model, server.base_url
    return llm, base_url


def _run_build(
    graphs: dict[str, Any], out: Path, builder: Any, images: Path | None, client: Any, extractor: Any
) -> dict[str, Any]:
    """Build every image's pairs under a progress bar; the LLM clients are closed however it ends."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from halluscope.builders.prove import build_prove_async

    with Progress(
        TextColumn("[bold]build prove"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=console(stderr=True), transient=False,
    ) as bar:  # fmt: skip
        task = bar.add_task("", total=len(graphs))

        def progress(image_id: str, result: Any, reused: bool) -> None:
            kept = sum(1 for p in result.pairs if p.stage == "kept")
            note = "saved" if reused else f"{result.seconds:.0f} s"
            bar.update(task, advance=1, description=f"{image_id}: {kept}/{len(result.pairs)} kept ({note})")

        async def go() -> dict[str, Any]:
            try:
                return await build_prove_async(
                    graphs, out, builder, images=images, progress=progress, extractor=extractor
                )
            finally:
                await client.aclose()
                if extractor is not None:
                    await extractor.aclose()

        return asyncio.run(go())


#: --answer-tuples: ``graph`` (no extractor) or a tuple extractor of halluscope.claims.dsg.
ANSWER_TUPLES = ("graph", "rules", "llm")


def _answer_tuple_extractor(
    kind: str, llm: str | None, base_url: str | None, api_key_env: str | None, store: Any
) -> Any:
    """The tuple extractor for ``--answer-tuples`` (None for ``graph``); ``llm`` uses the build's model."""
    if kind == "graph":
        return None
    from halluscope.claims.dsg import TUPLE_EXTRACTORS

    if kind == "llm":
        return TUPLE_EXTRACTORS.create(
            "llm", model=llm, base_url=base_url, api_key_env=api_key_env, concurrency=1, timeout_s=900.0,
            cache=store,
        )  # fmt: skip
    return TUPLE_EXTRACTORS.create(kind, cache=store)


def _print_funnel(summary: dict[str, Any], out: Path | None) -> None:
    from rich.table import Table

    f = summary["funnel"]
    table = Table(title=f"PROVE-style build — {out}")
    table.add_column("stage")
    table.add_column("pairs", justify="right")
    table.add_column("%", justify="right")
    table.add_column("reasons")
    table.add_row("generated", str(f["generated"]), "100", f"{f['images']} images")
    for stage in ("program_failed", "wrong_answer", "filtered", "kept"):
        reasons = ", ".join(f"{k} {v}" for k, v in f["reasons"].get(stage, {}).items())
        table.add_row(stage.replace("_", " "), str(f[stage]), f"{f['percent'][stage]:g}", reasons)
    out_console = console()
    out_console.print(table)
    if f.get("kept_unfiltered"):
        console(stderr=True).print(
            f"[yellow]{f['kept_unfiltered']} kept pair(s) were not checked by the LLM filter (its call failed "
            "or gave no verdict for them); they are marked \"unfiltered\" in prove.json. Re-run to check them."
            "[/yellow]"
        )
    if summary["errors"]:
        err = console(stderr=True)
        for image_id, error in summary["errors"].items():
            err.print(f"[yellow]image {image_id}: {error}[/yellow]")
    out_console.print(
        f"{summary['wall_seconds']:g} s; score answers with: halluscope run -b prove --data {out}"
    )


def _verify(
    path: Path, graphs: dict[str, Any], sandbox: Any, embedder: Any, threshold: float, out: Path | None
) -> None:
    from collections import Counter

    from rich.table import Table

    from halluscope.builders.prove import embedding_similarity, verify_qa_file
    from halluscope.jsonio import write_json_atomic

    if not path.is_file():
        fail(f"no QA file at {path}")
    rows = verify_qa_file(path, graphs, sandbox, embedding_similarity(embedder), threshold)
    table = Table(title=f"verification programs — {path}")
    for column in ("line", "image", "outcome", "program answer / problem"):
        table.add_column(column)
    for row in rows:
        shown = (
            json.dumps(row.program_answer) if row.outcome in ("ok", "wrong_answer") else (row.detail or "")
        )
        style = "green" if row.outcome == "ok" else "red"
        table.add_row(str(row.line), row.image_id, f"[{style}]{row.outcome}[/{style}]", shown[:100])
    out_console = console()
    out_console.print(table)
    counts = Counter(r.outcome for r in rows)
    out_console.print(", ".join(f"{k} {v}" for k, v in counts.most_common()))
    if out is not None:
        write_json_atomic(
            out,
            {"file": str(path), "counts": dict(counts), "rows": [r.model_dump(mode="json") for r in rows]},
        )
    if any(r.outcome != "ok" for r in rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("prove")(prove)
