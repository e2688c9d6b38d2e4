"""The program sandbox's overhead per program: what running a trivial program costs, against running it inline.

    python bench/sandbox_overhead.py [--programs 200] [--batch 12]

Reports, for a trivial ``verify(g)`` over a Tri-HE-sized graph:
- inline: the same function called in this process (what an unsafe ``exec`` would cost);
- sandbox, batched: ``--batch`` programs per request (one image's pairs), a fresh fork per program;
- sandbox, one per request: one program per request (the worst case for the builder);
- cold start: a new Sandbox (worker process start) plus one program.
The batch and per-request figures exclude the worker's one-time start, which is reported separately.
Wall times depend on how busy the machine is; the CPU time per program (worker and forks, from
``RUSAGE_CHILDREN``) does much less.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from halluscope.sandbox import Sandbox
from halluscope.scene.graph import SceneGraph

PROGRAM = """
def verify(g):
    out = []
    for name in g.entities():
        for rel in g.outgoing(name):
            if rel.predicate == "on":
                out.append(rel.object)
    return sorted(set(out))
"""


def _graph() -> SceneGraph:
    facts = [(f"thing{i}", "on", f"thing{i + 1}") for i in range(30)]
    facts += [(f"thing{i}", "is", "red") for i in range(0, 30, 3)]
    return SceneGraph.from_triplets(facts, objects=[f"thing{i}" for i in range(31)], image_id="bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--cold", type=int, default=5, help="cold starts to time")
    args = parser.parse_args()
    graph = _graph().to_dict()

    scope: dict[str, object] = {}
    exec(PROGRAM, scope)  # trusted, fixed benchmark code: the inline baseline
    verify = scope["verify"]
    from halluscope.sandbox._child import Graph

    started = time.perf_counter()
    for _ in range(args.programs):
        verify(Graph(graph))  # type: ignore[operator]
    inline_ms = (time.perf_counter() - started) * 1000 / args.programs

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    cpu_before = children_cpu()
    with Sandbox() as box:
        box.run(graph, [PROGRAM])  # warm
        batches = max(1, args.programs // args.batch)
        started = time.perf_counter()
        results = []
        for _ in range(batches):
            results += box.run(graph, [PROGRAM] * args.batch)
        batch_ms = (time.perf_counter() - started) * 1000 / (batches * args.batch)
        assert all(r.ok for r in results), [r.describe() for r in results if not r.ok][:3]
        in_child_ms = statistics.median(r.seconds or 0.0 for r in results) * 1000

        started = time.perf_counter()
        for _ in range(args.programs // 4):
            assert box.run_one(graph, PROGRAM).ok
        single_ms = (time.perf_counter() - started) * 1000 / (args.programs // 4)

    # CPU time of the worker and every forked program (counted once the worker exits): independent of load.
    sandbox_cpu_ms = (children_cpu() - cpu_before) * 1000 / (batches * args.batch + 1 + args.programs // 4)
    cold: list[float] = []
    for _ in range(args.cold):
        started = time.perf_counter()
        with Sandbox() as box:
            assert box.run_one(graph, PROGRAM).ok
        cold.append((time.perf_counter() - started) * 1000)

    print(
        f"programs: {batches * args.batch} batched ({args.batch} per request), {args.programs // 4} one per request"
    )
    print(f"inline (no isolation):          {inline_ms:8.3f} ms/program")
    print(
        f"sandbox, batched:               {batch_ms:8.2f} ms/program  (fork + limits + seccomp + compile + run)"
    )
    print(f"  of which fork-to-answer:      {in_child_ms:8.2f} ms (median, timed by the worker)")
    print(f"sandbox, one per request:       {single_ms:8.2f} ms/program")
    print(
        f"sandbox CPU time (all programs):{sandbox_cpu_ms:8.2f} ms/program (worker + forks, user+sys; start included)"
    )
    print(f"worker cold start + 1 program:  {statistics.median(cold):8.1f} ms (median of {args.cold})")


if __name__ == "__main__":
    main()
