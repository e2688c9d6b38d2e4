"""halluscope against its floors, side by side in one run: what a user waits for against the least work the
same answer needs.

Two measurements, each interleaving halluscope and its floor repeat by repeat (so a busy machine slows
both alike), reporting the best and the median of each side, their ratio, and the load average:

``reefknot``
    halluscope: the whole command a user types, ``halluscope run -b reefknot --bench-opt tasks=yesno,mcq
    --responses FILE --out DIR --no-cache -q``, as a subprocess (interpreter start, imports, loading, reading
    both rule sets, records, ``samples.jsonl``, metrics with their bootstrap intervals, ``metric_tables.json``
    and the terminal table), a fresh ``--out`` each repeat.
    Floor: a plain-Python subprocess (this file, ``reefknot-floor``) that reads the two official files and
    the same responses file with :mod:`json`, reads each answer with halluscope's own rules (the ``paper``
    substring/first-letter rules written out, the ``robust`` readers imported from
    :mod:`halluscope.judges.answers`: the rules are the work, not machinery around them) and counts the
    accuracies. It writes no records and computes no intervals and no entropy analysis: it is a floor of the
    reading and counting, not of everything the command gives. Its figures are checked against the run's
    ``metrics.json`` (every per-task and per-group accuracy, the R scores of both modes, the yes/no
    yes-ratio, precision, recall, F1 and pair accuracy, and the counts).
    Floor with outputs: the same floor also doing what the command must give besides the figures, plainly: a
    JSON line per answer and the declared intervals (per-image sums of the same table rows, the same seeded
    cluster bootstrap through numpy), its intervals checked bound for bound against ``metrics.json``. The
    ratio to it says how much of the command's time is its obligations and how much is its machinery (typed
    records, the CLI, the terminal table).
    The answers are synthetic in the shapes real models write (``bench/reefknot_scoring_speed.py``'s mix),
    written once, not timed.

``similarity``
    Tri-HE's ground-truth claims judged against their image's reference triplets, in one process, model
    loaded once and warmed up first (load excluded from both sides). Floor: every distinct string encoded
    once in batched calls and the same cosine-threshold verdicts (``bench/similarity_speed.py``'s ideal
    path). halluscope: :class:`~halluscope.judges.similarity.SimilarityJudge` with an empty embedding cache
    (a fresh SQLite file per repeat). Same model, same torch threads; verdicts compared claim by claim. The
    judge's one-time cost in a process, loading WordNet to orient its verdicts' evidence (about 1.5 s, in a
    thread while the model encodes), falls in its first repeat.
    The claims are Tri-HE's ground truth, so every verdict is "supported"; ``bench/similarity_speed.py
    --mismatched`` covers hallucinated verdicts too.

Run (from the repository root; ``$HALLUSCOPE_SHARED`` or ``../shared`` holds the data)::

    python bench/floors.py [reefknot|similarity|all] [--repeat R] [--threads T] [--against OTHER/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))
REEFKNOT = SHARED / "data" / "reefknot"
TRI_HE = SHARED / "data" / "tri-he" / "tri-he.json"
#: The figures the floor checks in metrics.json, beside every group's accuracy and the counts below.
CHECKED_METRICS = (
    "halr_yesno", "halr_mcq", "r_score", "paper_r_score", "robust_r_score", "yes_ratio", "yesno_precision",
    "yesno_recall", "yesno_f1", "yesno_pair_accuracy",
)  # fmt: skip
CHECKED_COUNTS = (
    "samples", "scored", "unanswered", "unanswered_yesno", "unanswered_mcq", "mode_disagreements_yesno",
    "mode_disagreements_mcq", "mode_disagreements", "yesno_pairs", "yesno_pairs_scored",
)  # fmt: skip


# -- the Reefknot floor (runs in its own interpreter: only the standard library and the reading rules) ------


def reefknot_floor(data: Path, answers: Path, out: Path, outputs: Path | None = None) -> None:
    """Read the yes/no and multiple-choice files and the answers, read every answer by both rule sets, count
    the accuracies; write the figures as JSON to ``out``. With ``outputs`` (a folder), also what the command
    must write besides: a log line per answer and the declared intervals (:func:`floor_outputs`)."""
    import re

    from halluscope.judges.answers import parse_choice, parse_mcq_options, parse_yes_no

    pair_re = re.compile(  # the subject and object of a multiple-choice question (masked in option text)
        r"relation\s+(?:\w+\s+)?(?:with|between)\s+(?:the\s+)?(?P<s>.+?)\s+and\s+(?:the\s+)?(?P<o>.+?)\s+"
        r"in (?:this|the) (?:photo|image|picture)",
        re.IGNORECASE,
    )
    kinds = {"perceptive": "perception", "cognition": "cognitive"}

    def lines(path: Path) -> list[dict[str, Any]]:
        with path.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    given = {row["id"]: row for row in lines(answers)}
    # Per task: (relation type, paper correct, robust correct or None, robust prediction, label)
    results: dict[str, list[tuple[str, bool, bool | None, str | None, str]]] = {"yesno": [], "mcq": []}
    #: Per task and item: its image and its answer's metadata (for the outputs only).
    seen: dict[str, list[tuple[str, dict[str, Any]]]] = {"yesno": [], "mcq": []}
    #: Each twin pair's (image, robust correct or None) of both twins, in line order.
    pairs: dict[int, list[tuple[str, bool | None]]] = {}
    yes_rows = lines(data / "YESNO.jsonl")
    for number, row in enumerate(yes_rows):
        text = given[f"yesno-{number}"]["response"]
        label, prompt = str(row["label"]).strip().lower(), str(row["query_prompt"]).strip()
        paper = "yes" if "yes" in text.strip().lower() else "no"
        robust = parse_yes_no(text, question=prompt).value
        robust_ok = None if robust is None else robust == label
        kind = str(row.get("relation_type") or "unknown").strip().lower()
        results["yesno"].append((kinds.get(kind, kind), paper == label, robust_ok, robust, label))
        seen["yesno"].append((str(row["image_id"]).strip(), given[f"yesno-{number}"].get("metadata") or {}))
        twin = number + 1 if label == "yes" else number - 1
        if 0 <= twin < len(yes_rows):
            other = yes_rows[twin]
            same_image = str(other["image_id"]).strip() == str(row["image_id"]).strip()
            twin_label = str(other["label"]).strip().lower()
            if same_image and min(number, twin) % 2 == 0 and {label, twin_label} == {"yes", "no"}:
                pairs.setdefault(min(number, twin) // 2, []).append((str(row["image_id"]).strip(), robust_ok))
    for number, row in enumerate(lines(data / "Multichoice.jsonl")):
        text = given[f"mcq-{number}"]["response"]
        label, prompt = str(row["label"]).strip().upper(), str(row["query_prompt"]).strip()
        found = pair_re.search(prompt)
        mask = [m for m in (found.group("s").strip(), found.group("o").strip())] if found else []
        paper_letter = text[0].upper() if text else None
        robust = parse_choice(text, parse_mcq_options(prompt), mask=[m for m in mask if m]).value
        kind = str(row.get("relation_type") or "unknown").strip().lower()
        seen["mcq"].append((str(row["image_id"]).strip(), given[f"mcq-{number}"].get("metadata") or {}))
        results["mcq"].append(
            (
                kinds.get(kind, kind),
                paper_letter == label,
                None if robust is None else robust == label,
                robust,
                label,
            )
        )

    def halr(flags: list[bool]) -> float | None:
        return 100.0 - 100.0 * sum(flags) / len(flags) if flags else None

    metrics: dict[str, float | None] = {}
    groups: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {"samples": sum(len(r) for r in results.values())}
    mode_halr: dict[str, dict[str, float | None]] = {"paper": {}, "robust": {}}
    for task, rows in results.items():
        robust_flags = [ok for _, _, ok, _, _ in rows if ok is not None]
        metrics[f"halr_{task}"] = halr(robust_flags)
        mode_halr["robust"][task] = metrics[f"halr_{task}"]
        mode_halr["paper"][task] = halr([ok for _, ok, _, _, _ in rows])
        groups[task] = {"n": float(len(robust_flags))}
        for kind in sorted({k for k, *_ in rows}):
            groups[f"{task}/{kind}"] = {
                "n": float(sum(1 for k, _, ok, _, _ in rows if k == kind and ok is not None))
            }
            value = halr([ok for k, _, ok, _, _ in rows if k == kind and ok is not None])
            groups[f"{task}/{kind}"]["halr"] = value if value is not None else float("nan")
        groups[task]["halr"] = metrics[f"halr_{task}"] or 0.0
        counts[f"unanswered_{task}"] = len(rows) - len(robust_flags)
        counts[f"mode_disagreements_{task}"] = sum(1 for _, paper, robust, _, _ in rows if paper != robust)
    for mode, per_task in mode_halr.items():
        values = [100.0 - v for v in per_task.values() if v is not None]
        metrics[f"{mode}_r_score"] = sum(values) / len(values)
    metrics["r_score"] = metrics["robust_r_score"]
    counts["scored"] = sum(len(rows) - counts[f"unanswered_{task}"] for task, rows in results.items())
    counts["unanswered"] = counts["samples"] - counts["scored"]
    counts["mode_disagreements"] = counts["mode_disagreements_yesno"] + counts["mode_disagreements_mcq"]
    answered = [(p, y) for _, _, ok, p, y in results["yesno"] if ok is not None]
    tp = sum(1 for p, y in answered if p == "yes" and y == "yes")
    fp = sum(1 for p, y in answered if p == "yes" and y == "no")
    fn = sum(1 for p, y in answered if p != "yes" and y == "yes")
    precision, recall = 100.0 * tp / (tp + fp), 100.0 * tp / (tp + fn)
    scored_pairs = [[ok for _, ok in v] for v in pairs.values() if len(v) == 2 and None not in (v[0][1], v[1][1])]
    metrics.update(
        yes_ratio=100.0 * sum(1 for p, _ in answered if p == "yes") / len(answered),
        yesno_precision=precision,
        yesno_recall=recall,
        yesno_f1=2 * precision * recall / (precision + recall),
        yesno_pair_accuracy=100.0 * sum(1 for v in scored_pairs if all(v)) / len(scored_pairs),
    )
    counts["yesno_pairs"] = sum(1 for v in pairs.values() if len(v) == 2)
    counts["yesno_pairs_scored"] = len(scored_pairs)
    out.write_text(json.dumps({"metrics": metrics, "groups": groups, "counts": counts}), encoding="utf-8")
    if outputs is not None:
        floor_outputs(outputs, results, seen, pairs)


def floor_outputs(
    folder: Path,
    results: dict[str, list[tuple[str, bool, bool | None, str | None, str]]],
    seen: dict[str, list[tuple[str, dict[str, Any]]]],
    pairs: dict[int, list[tuple[str, bool | None]]],
) -> None:
    """What the command writes besides the figures, done plainly: one JSON line per answer
    (``samples.jsonl``) and the declared intervals, from per-image sums of the same table rows and the same
    seeded cluster bootstrap (numpy; halluscope's :func:`bootstrap_shared`, since the draw is the work), as
    ``intervals.json``. No pydantic object, no table kept per item, no terminal table."""
    import math

    import numpy as np

    from halluscope.metrics.confidence import PAPER_ENTROPY_THRESHOLD, answer_probabilities, entropy_bits
    from halluscope.metrics.stats.bootstrap import ClusteredSums, bootstrap_shared, f1, ratio

    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "samples.jsonl").open("w", encoding="utf-8") as log:
        for task, rows in results.items():
            for number, ((kind, paper, robust, prediction, label), (image, _)) in enumerate(
                zip(rows, seen[task], strict=True)
            ):
                log.write(json.dumps({"id": f"{task}-{number}", "task": task, "image_id": image,
                                      "relation_type": kind, "label": label, "prediction": prediction,
                                      "correct": robust, "paper_correct": paper}) + "\n")  # fmt: skip
    # Table rows as halluscope's tables have them: per task, every item (unanswered count in no rate).
    tables: dict[str, tuple[list[str], dict[str, list[float]]]] = {}

    def add(table: str, image: str, values: dict[str, bool]) -> None:
        clusters, columns = tables.setdefault(table, ([], {name: [] for name in values}))
        clusters.append(f"image:{image}" if image else "")
        for name, value in values.items():
            columns[name].append(float(value))

    for task, rows in results.items():
        for (_, _, correct, prediction, label), (image, metadata) in zip(rows, seen[task], strict=True):
            answered = correct is not None
            values = {"wrong": answered and not correct, "answered": answered}
            if task == "yesno":
                said_yes, truly_yes = answered and prediction == "yes", label == "yes"
                values |= {"said_yes": said_yes, "truly_yes": answered and truly_yes, "tp": said_yes and truly_yes,
                           "fp": said_yes and not truly_yes, "fn": answered and not said_yes and truly_yes}  # fmt: skip
            add(task, image, values)
            probs = answer_probabilities(metadata, task)
            if probs and answered:
                flagged = entropy_bits(list(probs.values())) >= PAPER_ENTROPY_THRESHOLD * math.log2(
                    2 if task == "yesno" else 4
                )
                add(f"confidence_{task}", image, {"flagged_wrong": flagged and not correct, "flagged": flagged,
                                                  "wrong": not correct})  # fmt: skip
    for twins in pairs.values():
        if len(twins) == 2:
            both = None not in (twins[0][1], twins[1][1])
            add("yesno_pairs", twins[0][0], {"both_right": both and bool(twins[0][1] and twins[1][1]),
                                             "both_answered": both})  # fmt: skip
    declared = {
        "halr_yesno": ("yesno", ratio("wrong", "answered", scale=100.0)),
        "halr_mcq": ("mcq", ratio("wrong", "answered", scale=100.0)),
        "yes_ratio": ("yesno", ratio("said_yes", "answered", scale=100.0)),
        "yesno_precision": ("yesno", ratio("tp", "said_yes", scale=100.0)),
        "yesno_recall": ("yesno", ratio("tp", "truly_yes", scale=100.0)),
        "yesno_f1": ("yesno", f1("tp", "fp", "fn", scale=100.0)),
        "yesno_pair_accuracy": ("yesno_pairs", ratio("both_right", "both_answered", scale=100.0)),
        "entropy_detector_precision_yesno": ("confidence_yesno", ratio("flagged_wrong", "flagged", scale=100.0)),
        "entropy_detector_recall_yesno": ("confidence_yesno", ratio("flagged_wrong", "wrong", scale=100.0)),
        "entropy_detector_precision_mcq": ("confidence_mcq", ratio("flagged_wrong", "flagged", scale=100.0)),
        "entropy_detector_recall_mcq": ("confidence_mcq", ratio("flagged_wrong", "wrong", scale=100.0)),
    }
    items = []
    for table, (clusters, columns) in tables.items():
        unique, index = np.unique(np.asarray(clusters, dtype=str), return_inverse=True)
        names = tuple(columns)
        sums = np.stack([np.bincount(index, weights=np.asarray(columns[n]), minlength=unique.size) for n in names],
                        axis=1)  # fmt: skip
        data = ClusteredSums(names=names, sums=sums, cluster_ids=tuple(unique.tolist()), n=len(clusters),
                             unit="image")  # fmt: skip
        items.append((data, {name: statistic for name, (t, statistic) in declared.items() if t == table}))
    found = {name: interval for intervals in bootstrap_shared(items) for name, interval in intervals.items()}
    (folder / "intervals.json").write_text(json.dumps(
        {name: None if (i := found.get(name)) is None else [round(i.low, 6), round(i.high, 6)] for name in declared}
    ), encoding="utf-8")  # fmt: skip


# -- Reefknot: the measurement ---------------------------------------------------------------------------------


def write_reefknot_answers(path: Path) -> int:
    """Synthetic answers to every yes/no and multiple-choice item, in the shapes real models write."""
    import random

    sys.path.insert(0, str(REPO / "bench"))
    from reefknot_scoring_speed import synthetic_answer

    from halluscope.benchmarks.reefknot import Reefknot

    rng = random.Random(0)
    samples = list(Reefknot(data=REEFKNOT, tasks="yesno,mcq").samples())
    with path.open("w", encoding="utf-8") as out:
        for sample in samples:
            out.write(synthetic_answer(sample, rng).model_dump_json(exclude_defaults=True) + "\n")
    return len(samples)


def _subprocess_env(pycache: Path) -> dict[str, str]:
    """The environment of both sides: bytecode cached (in ``pycache``, outside the source tree), as an installed
    package has it. A shell with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module from source
    on every start, a cost no installed halluscope pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _timed_subprocess(command: Sequence[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a))


def check_floor_figures(floor: dict[str, Any], metrics: dict[str, Any]) -> list[str]:
    """Where the floor's figures and the run's metrics.json differ (empty when they agree)."""
    wrong = [
        f"{name}: floor {floor['metrics'][name]} run {metrics['metrics'].get(name)}"
        for name in CHECKED_METRICS
        if not _same(floor["metrics"][name], metrics["metrics"].get(name))
    ]
    wrong += [
        f"count {name}: floor {floor['counts'][name]} run {metrics['counts'].get(name)}"
        for name in CHECKED_COUNTS
        if floor["counts"][name] != metrics["counts"].get(name)
    ]
    for group, values in floor["groups"].items():
        run = metrics["groups"].get(group, {})
        wrong += [
            f"group {group} {key}: floor {value} run {run.get(key)}"
            for key, value in values.items()
            if not _same(value, run.get(key))
        ]
    if set(floor["groups"]) != set(metrics["groups"]):
        wrong.append(f"groups: floor {sorted(floor['groups'])} run {sorted(metrics['groups'])}")
    return wrong


def measure_reefknot(
    repeat: int, against: Path | None = None
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Seconds of each repeat of halluscope's command, the floor, the floor with the command's outputs, and (with
    ``against``, another checkout's ``src`` folder) the same command run by that code."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        answers = tmp / "answers.jsonl"
        items = write_reefknot_answers(answers)
        python = sys.executable
        run_command = [
            python, "-m", "halluscope.cli.main", "run", "-b", "reefknot", "--data", str(REEFKNOT),
            "--bench-opt", "tasks=yesno,mcq", "--responses", str(answers), "--no-cache", "-q",
        ]  # fmt: skip
        floor_out = tmp / "floor.json"
        floor_command = [python, str(Path(__file__).resolve()), "reefknot-floor", str(answers), str(floor_out)]
        outputs = tmp / "floor-outputs"
        outputs_command = [*floor_command, str(outputs)]
        print(f"reefknot: {items} yes/no + multiple-choice answers; load average {_load()}")
        print(f"  halluscope:          {' '.join(run_command)} --out DIR")
        print(f"  floor:               {' '.join(floor_command)}")
        print(f"  floor with outputs:  {' '.join(outputs_command)}")
        env = _subprocess_env(tmp / "pycache")
        other_env = {**env, "PYTHONPATH": str(against)} if against is not None else env
        if against is not None:
            print(f"  against:             the same command, PYTHONPATH={against}")
        # One untimed start of each side first: bytecode written, files in the page cache.
        _timed_subprocess([*run_command, "--out", str(tmp / "warm-up")], env)
        _timed_subprocess(floor_command, env)
        _timed_subprocess(outputs_command, env)
        if against is not None:
            _timed_subprocess([*run_command, "--out", str(tmp / "warm-up-against")], other_env)
        command_s: list[float] = []
        floor_s: list[float] = []
        outputs_s: list[float] = []
        against_s: list[float] = []
        for index in range(repeat):
            out = tmp / f"run-{index}"
            # Rotate which side goes first, so none always runs on a machine another just warmed.
            sides = [(command_s, [*run_command, "--out", str(out)], env), (floor_s, floor_command, env),
                     (outputs_s, outputs_command, env)]  # fmt: skip
            if against is not None:
                sides.append((against_s, [*run_command, "--out", str(tmp / f"against-{index}")], other_env))
            shift = index % len(sides)
            for times, command, side_env in sides[shift:] + sides[:shift]:
                times.append(_timed_subprocess(command, side_env))
            if index == 0 and against is not None:
                differ = [name for name in ("metrics.json", "metric_tables.json", "samples.jsonl")
                          if (out / name).read_bytes() != (tmp / "against-0" / name).read_bytes()]  # fmt: skip
                print(f"  the other code's outputs: {'differ in ' + ', '.join(differ) if differ else 'byte-identical'}")
            if index == 0:
                metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
                wrong = check_floor_figures(json.loads(floor_out.read_text(encoding="utf-8")), metrics)
                wrong += check_floor_intervals(json.loads((outputs / "intervals.json").read_text()), metrics)
                if wrong:
                    raise SystemExit("the floor and halluscope disagree:\n  " + "\n  ".join(wrong))
                print(
                    "  the floor's figures equal metrics.json's (accuracies, R scores, yes/no figures, counts), "
                    "and so do the intervals of the floor with outputs"
                )
        return command_s, floor_s, outputs_s, against_s


def check_floor_intervals(floor: dict[str, list[float] | None], metrics: dict[str, Any]) -> list[str]:
    """Where the floor's intervals and metrics.json's differ (empty when every bound is the same)."""
    wrong = []
    for name, bounds in floor.items():
        ours = metrics["intervals"].get(name)
        mine = None if ours is None else [ours["low"], ours["high"]]
        if mine != bounds:
            wrong.append(f"interval {name}: floor {bounds} run {mine}")
    return wrong


# -- similarity --------------------------------------------------------------------------------------------------


def measure_similarity(
    repeat: int, threads: int | None, model_name: str | None
) -> tuple[list[float], list[float]]:
    sys.path.insert(0, str(REPO / "bench"))
    from similarity_speed import ideal_batched, judge_scores

    from halluscope.benchmarks.tri_he import load_scene_graphs, load_tri_he
    from halluscope.cache import Cache
    from halluscope.embeddings import Embedder, load_embedder
    from halluscope.judges.similarity import SimilarityJudge
    from halluscope.scene.triplets import parse_triplet_string
    from halluscope.stages import JudgeItem

    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    raw, scenes = load_tri_he(TRI_HE), load_scene_graphs(TRI_HE)
    items = [
        JudgeItem(
            sample_id=f"{image_id}-{index}",
            claims=[c for text in instance["triplet"] for c in parse_triplet_string(text)],
            scene=scenes[image_id],
        )
        for image_id in raw
        for index, instance in enumerate(raw[image_id]["instance"])
    ]
    claims = sum(len(item.claims) for item in items)
    loaded = load_embedder(model_name)
    loaded.model.encode([f"warm-up sentence number {i}" for i in range(64)], batch_size=64)
    print(
        f"similarity: {len(items)} Tri-HE questions, {claims} claims; model {loaded.identity()}, batch "
        f"{loaded.batch_size}, torch threads {_threads()}; load average {_load()}"
    )
    judge_s: list[float] = []
    floor_s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:

        def judge_side(index: int) -> list[float]:
            cache = Cache(Path(tmp) / f"cold-{index}.sqlite")  # empty: every string is encoded
            embedder = Embedder(loaded.model, loaded.identity(), cache=cache, batch_size=loaded.batch_size)
            judge = SimilarityJudge(model=model_name, embedder=embedder)
            started = time.perf_counter()
            scores = judge_scores(judge, items)
            judge_s.append(time.perf_counter() - started)
            return scores

        def floor_side(index: int) -> list[float]:
            started = time.perf_counter()
            scores = ideal_batched(loaded.model, items, loaded.batch_size)
            floor_s.append(time.perf_counter() - started)
            return scores

        for index in range(repeat):
            sides = [judge_side, floor_side]
            first, second = [side(index) for side in (sides if index % 2 == 0 else sides[::-1])]
            if len(first) != claims or len(second) != claims:
                raise SystemExit(f"scores for {len(first)} and {len(second)} claims, expected {claims}")
            same = sum((a > 0.6) == (b > 0.6) for a, b in zip(first, second, strict=True))
            diff = max(abs(a - b) for a, b in zip(first, second, strict=True))
            if same != claims:
                raise SystemExit(f"verdicts differ: {claims - same} of {claims} claims")
            if index == 0:
                supported = sum(s > 0.6 for s in first)
                print(
                    f"  verdicts equal claim by claim: {same}/{claims} ({supported} supported); max score "
                    f"difference {diff:.1e}"
                )
    return judge_s, floor_s


# -- reporting ---------------------------------------------------------------------------------------------------


def _load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


def report(name: str, ours: list[float], floor: list[float], other: str = "floor") -> None:
    best, median = min(ours) / min(floor), statistics.median(ours) / statistics.median(floor)
    print(
        f"  {name}: halluscope best {min(ours):.2f} s, median {statistics.median(ours):.2f} s; {other} best "
        f"{min(floor):.2f} s, median {statistics.median(floor):.2f} s; ratio best {best:.2f}x, median "
        f"{median:.2f}x ({len(ours)} repeats, interleaved; load average {_load()})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "which", choices=("reefknot", "similarity", "all", "reefknot-floor"), nargs="?", default="all"
    )
    parser.add_argument("paths", nargs="*", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved repeats of each side (default 5)")
    parser.add_argument("--against", type=Path, default=None,
                        help="reefknot: also time the command with another checkout's src folder on PYTHONPATH")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)"
    )
    parser.add_argument(
        "--model", default=None, help="embedding model (default: the packaged all-MiniLM-L6-v2)"
    )
    args = parser.parse_args(argv)
    if args.which == "reefknot-floor":
        answers, out, *outputs = args.paths
        reefknot_floor(REEFKNOT, answers, out, outputs[0] if outputs else None)
        return 0
    if args.which in ("reefknot", "all"):
        command_s, floor_s, outputs_s, against_s = measure_reefknot(args.repeat, args.against)
        report("reefknot", command_s, floor_s)
        report("reefknot against the floor with outputs", command_s, outputs_s)
        if against_s:
            report("reefknot against the other code", command_s, against_s, other="other code")
    if args.which in ("similarity", "all"):
        report("similarity", *measure_similarity(args.repeat, args.threads, args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
