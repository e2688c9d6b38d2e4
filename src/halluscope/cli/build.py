"""``halluscope build``: make new benchmarks from scene graphs.

A sub-app, so each builder is one command under it (``build reefknot``; other builders add theirs to
:data:`build_app`). Heavy imports stay inside the commands so ``--help`` is instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from halluscope.cli import build_prove as _build_prove
from halluscope.cli.common import console, fail, join_urls, open_cache
from halluscope.cli.flags import flags_command
from halluscope.cli.graphs import GraphFormat, default_images, read_graphs

build_app = typer.Typer(
    name="build",
    help="Build a new benchmark from scene graphs (Tri-HE, GQA or Visual Genome).",
    no_args_is_help=True,
)


@dataclass(frozen=True)
class ReefknotFlags:
    """The options of ``halluscope build reefknot``, as typer parses them."""

    scene_graphs: Annotated[Path, typer.Option("--scene-graphs", "-g", help="Scene-graph file or folder.")]
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (created).")]
    graph_format: Annotated[
        GraphFormat,
        typer.Option(
            "--format",
            "-f",
            help="tri-he (tri-he.json), gqa (*_sceneGraphs.json) or vg "
            "(relationships.json / scene_graphs.json or their folder).",
        ),
    ] = GraphFormat.TRI_HE
    images: Annotated[
        Path | None, typer.Option(help="Image folder for samples.jsonl (default for tri-he: its images/).")
    ] = None
    tasks: Annotated[str, typer.Option(help="Comma-separated: yesno, mcq, vqa.")] = "yesno,mcq,vqa"
    max_per_relation: Annotated[
        int, typer.Option(help="At most this many triplets per relation word (0: no cap).")
    ] = 20
    seed: Annotated[int, typer.Option(help="Random seed (negatives, distractors, letter positions).")] = 0
    allow_repeated_subjects: Annotated[
        bool, typer.Option(help="Keep triplets whose subject name occurs more than once in the image.")
    ] = False
    orient: Annotated[
        bool | None,
        typer.Option("--orient/--no-orient", help="Repair object-first triplets (default: on for tri-he)."),
    ] = None
    limit_images: Annotated[int | None, typer.Option(help="Only the first N images.")] = None
    relation_llm: Annotated[
        str | None,
        typer.Option(
            help="LLM that categorises relations the lexicon does not know (cached); local: the packaged one."
        ),
    ] = None
    base_url: Annotated[
        list[str] | None,
        typer.Option(help="OpenAI-compatible endpoint for --relation-llm (repeat it for several replicas)."),
    ] = None
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False


@build_app.command("reefknot")
@flags_command(ReefknotFlags)
def reefknot(flags: ReefknotFlags) -> None:
    """Reefknot-style yes/no twins, multiple choice and VQA about relations, checked against the graphs."""
    graphs = read_graphs(flags.scene_graphs, flags.graph_format, flags.limit_images)
    built = build_reefknot_graphs(flags, graphs)
    images = default_images(flags.images, flags.scene_graphs, flags.graph_format)
    source = {"scene_graphs": str(flags.scene_graphs), "format": flags.graph_format.value}
    built.write(flags.out, images=images, source=source)
    show_reefknot(built, flags.out)


def build_reefknot_graphs(flags: ReefknotFlags, graphs: dict[str, Any]) -> Any:
    """The questions built from ``graphs``; unknown relations go to ``--relation-llm`` when one is named."""
    from halluscope.builders.reefknot import BuildOptions, build_reefknot
    from halluscope.builders.relations import RelationClassifier
    from halluscope.cli.local_llm import client_options, llm_endpoint, local_llm

    options = BuildOptions(
        seed=flags.seed,
        tasks=tuple(t.strip() for t in flags.tasks.split(",") if t.strip()),
        max_per_relation=flags.max_per_relation or None,
        allow_repeated_subjects=flags.allow_repeated_subjects,
        orient=flags.graph_format is GraphFormat.TRI_HE if flags.orient is None else flags.orient,
    )
    with local_llm() as local:  # started only for --relation-llm local; stopped however this ends
        client = None
        store = None
        if flags.relation_llm:
            from halluscope.llm.client import ChatClient

            store = open_cache(flags.cache, flags.no_cache)
            model, urls = llm_endpoint(flags.relation_llm, join_urls(flags.base_url), local, "--relation-llm")
            client = ChatClient(model, urls, cache=store, **client_options(flags.relation_llm))
        try:
            return build_reefknot(graphs, options, classifier=RelationClassifier(client, store))
        except ValueError as error:
            fail(str(error))


def show_reefknot(built: Any, out: Path) -> None:
    """The questions per task and relation type, what was filtered out, and the verification's outcome."""
    import json

    from rich.table import Table

    table = Table(title=f"Reefknot-style benchmark — {out}")
    table.add_column("task / relation type")
    table.add_column("questions", justify="right")
    for key, value in built.counts().items():
        table.add_row(key, str(value))
    out_console = console()
    out_console.print(table)
    dropped = {
        k: v
        for k, v in built.stats.items()
        if k.startswith("dropped") or k.endswith(("negative", "distractors"))
    }
    out_console.print("filtered: " + ", ".join(f"{k} {v}" for k, v in dropped.items() if v))
    verification = json.loads((out / "build.json").read_text(encoding="utf-8"))["verification"]
    if verification["n_problems"]:
        console(stderr=True).print(
            f"[yellow]{verification['n_problems']} verification problem(s); see {out / 'build.json'}[/yellow]"
        )
    else:
        out_console.print(
            "verified: every negative is false and every MCQ has one true option under its graph"
        )
    out_console.print(
        f"score answers with: halluscope run --benchmark reefknot --data {out} --responses FILE ..."
    )


@build_app.command("parallel")
def parallel(
    benchmark: Annotated[
        str, typer.Option("--benchmark", "-b", help="reefknot | tri-he | hqh | pope | amber | hallusionbench.")
    ],
    data: Annotated[Path, typer.Option("--data", help="The benchmark's data file or folder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (created).")],
    tasks: Annotated[str | None, typer.Option(help="Reefknot only: comma-separated yesno, mcq, vqa.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed of the option shuffles.")] = 0,
    paraphraser: Annotated[
        str, typer.Option(help="Open prompts: templates (offline) or llm (any OpenAI-compatible endpoint).")
    ] = "templates",
    llm_model: Annotated[
        str | None, typer.Option(help="Model name for --paraphraser llm (local: the packaged model).")
    ] = None,
    base_url: Annotated[
        list[str] | None, typer.Option(help="Endpoint for --paraphraser llm (repeat it for several replicas).")
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="Cache file (default: the user cache).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False,
) -> None:
    """A parallel form (HQM): yes/no negated with flipped labels, options shuffled, open prompts paraphrased."""
    import asyncio

    from halluscope.builders.parallel import build_parallel

    if paraphraser not in ("templates", "llm"):
        fail(f"unknown paraphraser {paraphraser!r}; choose templates or llm")
    if paraphraser == "llm" and not llm_model:
        fail("--paraphraser llm needs --llm-model NAME (and --base-url for a non-OpenAI endpoint, "
             "or --llm-model local for the packaged model)")
    chosen = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None

    from halluscope.cli.local_llm import client_options, llm_endpoint, local_llm

    async def go() -> Any:
        if paraphraser == "templates":
            return await build_parallel(benchmark, data, out, seed=seed, tasks=chosen)
        from halluscope.builders.paraphrase import LLMParaphraser
        from halluscope.llm.client import ChatClient

        store = open_cache(cache, no_cache)
        async with ChatClient(model, urls, cache=store, **client_options(llm_model)) as client:
            writer = LLMParaphraser(client)
            return await build_parallel(benchmark, data, out, seed=seed, tasks=chosen,
                                        paraphrase=writer.paraphrase, paraphraser=writer.identity())

    with local_llm() as local:  # started only for --llm-model local; stopped however this ends
        model, urls = (
            llm_endpoint(str(llm_model), join_urls(base_url), local, "--llm-model")
            if paraphraser == "llm"
            else ("", None)
        )
        try:
            built = asyncio.run(go())
        except (ValueError, OSError) as error:
            fail(str(error))
    out_console = console()
    for kind, count in sorted(built.counts.items()):
        out_console.print(f"{kind}: {count}")
    if built.skipped:
        summary = built.summary()["skipped_reasons"]
        reasons = "; ".join(f"{k}: {v}" for k, v in summary.items())
        out_console.print(f"left out: {len(built.skipped)} (yes/no: whole twin pairs; {reasons}) "
                          f"— listed in {out / 'parallel.json'}")
    if built.problems:
        console(stderr=True).print(
            f"[yellow]{len(built.problems)} verification problem(s), e.g. {built.problems[0]}; "
            f"see {out / 'parallel.json'}[/yellow]"
        )
    else:
        out_console.print("verified: 0 problems (negations flip the label, one correct option, content kept)")
    out_console.print(f"run it with: halluscope run --benchmark {benchmark} --data {out} --responses FILE ...")


_build_prove.register(build_app)  # ``build prove`` lives in its own module


def register(app: typer.Typer) -> None:
    app.add_typer(build_app, name="build")
