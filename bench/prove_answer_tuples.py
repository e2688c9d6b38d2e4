"""The kept pairs of a ``halluscope build prove`` folder, their ``qa_diff_tuples`` made each way.

Reads the saved per-image results (``images/<id>.json``, read only; nothing is written there and no
generation is re-run) and the scene graphs they were built from, and prints for every kept pair the
answer-minus-question tuples of each ``--answer-tuples`` method asked for (``graph``, ``rules``, ``llm``),
then how many pairs get the same tuples from each method as from ``graph``.

Usage (``llm`` starts the packaged Qwen2.5-Coder on llama.cpp unless ``--base-url`` is given)::

    python bench/prove_answer_tuples.py --build /tmp/pb/tri-he-20 -g ../shared/data/tri-he/tri-he.json \
        --limit-images 20 --methods graph,rules
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from halluscope.builders.prove import ImageResult, answer_tuples, prepare_graphs, released_rows
from halluscope.cache import Cache
from halluscope.claims.dsg import TUPLE_EXTRACTORS
from halluscope.cli.graphs import GraphFormat, load_graphs
from halluscope.scene.tuples import fact_key, parse_tuple


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, required=True, help="a build prove output folder")
    parser.add_argument("-g", "--scene-graphs", type=Path, required=True)
    parser.add_argument("--format", default="tri-he", choices=[f.value for f in GraphFormat])
    parser.add_argument("--limit-images", type=int, default=None)
    parser.add_argument("--no-orient", action="store_true", help="the build ran with --no-orient")
    parser.add_argument("--methods", default="graph,rules")
    parser.add_argument("--llm", default=None)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--cache", type=Path, default=None, help="cache file for the llm calls (none: no cache)")
    args = parser.parse_args()

    graph_format = GraphFormat(args.format)
    orient = graph_format is GraphFormat.TRI_HE and not args.no_orient
    graphs = prepare_graphs(load_graphs(args.scene_graphs, graph_format, args.limit_images), orient)
    results = []
    for path in sorted((args.build / "images").glob("*.json")):
        result = ImageResult.model_validate_json(path.read_text(encoding="utf-8"))
        if result.image_id in graphs:
            results.append(result)

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    by_method: dict[str, dict[str, list[str]]] = {}
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        for method in methods:
            extractor = None
            if method == "llm":
                model, base_url = args.llm, args.base_url
                if base_url is None:
                    from halluscope.llm.offline import llama_server

                    server = stack.enter_context(llama_server(n_ctx=4096))
                    model, base_url = server.model, server.base_url
                extractor = TUPLE_EXTRACTORS.create(
                    "llm", model=model, base_url=base_url, concurrency=1, timeout_s=900.0, cache=Cache(args.cache)
                )
            elif method != "graph":
                extractor = TUPLE_EXTRACTORS.create(method)
            started = time.perf_counter()
            diffs, how = asyncio.run(answer_tuples(results, extractor))
            print(f"{method}: {time.perf_counter() - started:.1f} s")
            rows = released_rows(results, graphs, None, diffs)
            by_method[method] = {str(r["id"]): list(r["qa_diff_tuples"]) for r in rows}
            if how.get("fallback"):
                print(f"{method}: fell back to the graph for {json.dumps(how['fallback'])}")
    print(f"{len(results)} images, {len(rows)} kept pairs")
    for row in rows:
        print(f"\n{row['id']}: {row['question']} / {row['answer']}")
        for method in methods:
            print(f"  {method:>5}: {by_method[method][str(row['id'])]}")
    if "graph" in by_method:
        graph = by_method["graph"]
        for method in methods:
            same = sum(by_method[method][i] == graph[i] for i in graph)
            facts = sum(_facts(by_method[method][i]) == _facts(graph[i]) for i in graph)
            print(f"{method}: same tuples as graph on {same} of {len(rows)} pairs, same facts on {facts}")


def _facts(texts: list[str]) -> set[tuple[str, tuple[str, ...]]]:
    """The facts the tuples state, whatever their subcategories (``fact_key``)."""
    return {fact_key(parse_tuple(t)) for t in texts}


if __name__ == "__main__":
    main()
