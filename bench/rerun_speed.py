"""How long re-running a finished run takes, for every benchmark: the whole command, as a user waits for it.

A finished run asks and scores nothing again, so what a re-run costs is start-up, reading the answers and the
benchmark's data, and writing metrics.json. Each case is run once to finish it, then re-run ``--repeats`` times
as a separate ``halluscope run`` process with the same arguments; the best and the median wall time are printed,
and the least CPU time (user + system) of a re-run, which other work on a shared machine disturbs less.

Cases: the golden test's fixed inputs for every benchmark (small: the excerpts and the released files of HQH and
CHAIR), and two of real size: LLaVA-1.5-7B's 5,712 POPE answers, and OPERA's 500 LLaVA-1.5 CHAIR captions.

For CHAIR also "second run": the same command into a new ``--out`` folder, the cache kept from the first run
(whose captions' word forms it holds): a second CHAIR run scores every caption again but tags none.

Python writes its bytecode the first time (as an installed package has it): ``PYTHONDONTWRITEBYTECODE`` is
dropped for the timed processes (``--keep-env`` keeps it), since compiling every module again on each start
is not what a user waits for.

    python bench/rerun_speed.py [--repeats 3] [--only pope-llava,chair-opera] [--keep-env]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.paths import FULL_DATA  # noqa: E402
from tests.test_golden_metrics import CASES, FULL_DATA_CASES  # noqa: E402

LLAVA_POPE = FULL_DATA / "peer-outputs" / "pope-llava-1.5-7b-partial"
OPERA = FULL_DATA / "chair-coco" / "opera-released-captions" / "llava-1.5" / "greedy.jsonl"


def _pope_llava(_: Path) -> list[str]:
    return [
        "-b", "pope", "--data", str(LLAVA_POPE / "pope-labels-e3e3926"), "--responses",
        str(LLAVA_POPE / "llava-v1.5-7b.jsonl"), "--bench-opt", "sources=coco", "--bench-opt", "mode=paper",
        "--bench-opt", f"questions={LLAVA_POPE / 'llava_pope_test.jsonl'}", "--only-answered",
    ]  # fmt: skip


def _chair_opera(_: Path) -> list[str]:
    return ["-b", "chair", "--data", str(FULL_DATA / "chair-coco"), "-r", str(OPERA), "--bench-opt", f"ids={OPERA}"]


def cases() -> dict[str, Callable[[Path], list[str]]]:
    return {**CASES, **FULL_DATA_CASES, "pope-llava": _pope_llava, "chair-opera": _chair_opera}


#: CPU seconds (user + system) of each timed process, by case: on a shared machine the wall time counts
#: other people's work too, the CPU time much less so.
CPU: dict[str, list[float]] = {}


def timed(args: list[str], env: dict[str, str], case: str = "") -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "halluscope.cli.main", "run", *args], env=env,
                          capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    CPU.setdefault(case, []).append(used)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--keep-env", action="store_true", help="keep PYTHONDONTWRITEBYTECODE if set")
    args = parser.parse_args()
    chosen = cases()
    if args.only:
        chosen = {name: chosen[name] for name in args.only.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HALLUSCOPE_CACHE_DIR": str(Path(tmp) / "cache"), "HF_HUB_OFFLINE": "1"}
        if not args.keep_env:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        print(f"load average {os.getloadavg()}; PYTHONDONTWRITEBYTECODE={env.get('PYTHONDONTWRITEBYTECODE')}")
        print(f"{'case':20} {'first run':>10} {'re-run best':>12} {'median':>8} {'cpu best':>9}  "
              f"{'second run (new --out)':>22}")  # fmt: skip
        for name, make in chosen.items():
            work = Path(tmp) / name
            work.mkdir()
            made = make(work)
            run_args = [*made, "--out", str(work / "run"), "-q"]
            first = timed(run_args, env)
            again = [timed(run_args, env, name) for _ in range(args.repeats)]
            cpu = min(CPU[name])
            line = f"{name:20} {first:9.2f}s {min(again):11.2f}s {statistics.median(again):7.2f}s {cpu:8.2f}s"
            if name.startswith("chair"):
                second = [timed([*made, "--out", str(work / f"second-{i}"), "-q"], env) for i in range(args.repeats)]
                line += f"  best {min(second):.2f}s median {statistics.median(second):.2f}s"
            print(line, flush=True)
        print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
