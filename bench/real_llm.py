"""The packaged Qwen2.5-Coder 1.5B (llama.cpp, CPU) as judge on the hand-labelled real answers.

    python bench/real_llm.py --data ../shared/data/tri-he/tri-he.json [--ids real-05,real-06,...]

Starts the packaged model on loopback, judges the hand-made claims of the chosen answers in batched mode
(one call per answer, ``json_mode=false``), then the answers through the ``llm`` extractor and the same judge,
then per claim, printing each step's figures as soon as it ends (docs/calibration.md, "The LLM path").
Slow on a shared 2-core machine: keep the answer count in the tens.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from halluscope.benchmarks.tri_he import TriHE
from halluscope.cache import Cache, default_cache_dir
from halluscope.calibration.real import load_real_set, run_real
from halluscope.claims import EXTRACTORS
from halluscope.judges import JUDGES
from halluscope.llm.offline import PACKAGED_MODEL_NAME, llama_server

#: The ten answers of the documented measurement: every score from 1 to 5, several sources.
DEFAULT_IDS = "real-05,real-06,real-18,real-22,real-29,real-39,real-41,real-50,real-53,real-58"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--ids", default=DEFAULT_IDS)
    parser.add_argument("--out", type=Path, default=Path("real_llm.json"))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    scenes = TriHE(data=args.data).scenes
    wanted = set(args.ids.split(","))
    answers = [a for a in load_real_set() if a.id in wanted]
    cache = Cache(default_cache_dir() / "cache.sqlite")
    results: dict[str, object] = {}
    with llama_server(n_ctx=4096, n_threads=args.threads) as server:
        common = {
            "model": PACKAGED_MODEL_NAME,
            "base_url": server.base_url,
            "concurrency": 1,
            "timeout_s": 600,
        }
        steps = [
            ("hand claims + llm (batched)", None, {"mode": "batched", "json_mode": False}, "hand"),
            ("llm claims + llm (batched)", "llm", {"mode": "batched", "json_mode": False}, "answer"),
            ("hand claims + llm (per claim)", None, {"mode": "per-claim"}, "hand"),
        ]
        for label, extractor, options, claims_from in steps:
            start = time.monotonic()
            judge = JUDGES.create("llm", cache=cache, **common, **options)
            extract = EXTRACTORS.create(extractor, cache=cache, **common) if extractor else None
            report, _ = run_real(
                answers, scenes.get, judge=judge, cache=cache, extractor=extract, claims_from=claims_from,  # type: ignore[arg-type]
                rate="paper", label=label, chunk=2,
            )  # fmt: skip
            seconds = time.monotonic() - start
            results[label] = {"report": report.model_dump(mode="json"), "seconds": seconds}
            f = report.all
            print(
                f"{label}: r={f.pearson} mean {f.mean_rate:.1f} (labelled {f.labelled_mean_rate:.1f}) "
                f"P/R {f.precision}/{f.recall} unjudged {f.unjudged_claims}/{f.claims} {seconds:.0f} s",
                flush=True,
            )
            args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
