"""How accurately do the offline judges recover hallucinations whose truth is known?

Runs the ``validate-judge`` measurements for three offline judge configurations on two known-truth sets:

- judges: ``similarity`` with all-MiniLM-L6-v2 and the paper's thresholds (0.5 / 0.6, tuned by Tri-HE for
  all-mpnet-base-v2), ``similarity`` with thresholds calibrated for MiniLM (``--calibrate``: fitted on each
  set, with a two-fold held-out estimate, and — on Tri-HE — the thresholds fitted on the synthetic set,
  an out-of-domain check), and ``typed``;
- sets: synthetic scenes answered by ``sim/hallucinate`` (``--n`` images, exact scene graphs) and Tri-HE's
  1,226 questions (ground-truth supporting triplets, plus object- and relation-perturbed copies).

Each report gives precision / recall / balanced accuracy of "hallucinated", object-vs-relation typing
accuracy, and the calibration curve (measured vs injected Hallu-Q at rates 0, 0.1, 0.2, 0.3, 0.5). The
issue's aim: balanced accuracy >= 0.85 and typing >= 0.8 for the best offline judge on Tri-HE.

    .venv/bin/python bench/validate_judges.py [--n 100] [--tri-he PATH] [--limit N] [--out FILE.json]

Uses a private cache (``--cache``, default a file next to ``--out``), so a re-run is fast. Profiles are
written to the user's judge-profile folder as ``bench-minilm-synthetic`` and ``bench-minilm-tri-he``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from halluscope.benchmarks.synthetic import SyntheticBenchmark
from halluscope.benchmarks.tri_he import TriHE
from halluscope.builders.synthetic import build_synthetic
from halluscope.cache import Cache
from halluscope.calibration.validate import (
    ValidationReport,
    ValidationSet,
    calibrate_similarity,
    save_calibration,
    synthetic_validation_set,
    tri_he_validation_set,
    validate_judge,
)
from halluscope.judges import JUDGES

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO.parent / "shared"))


def _pct(value: float | None) -> str:
    return "   —" if value is None else f"{100 * value:5.1f}"


def _row(label: str, report: ValidationReport) -> str:
    curve = " ".join(
        f"{p.rate:g}:{(p.injected_hallu_q or 0):.0f}→{(p.measured_hallu_q or 0):.0f}" for p in report.curve
    )
    return (
        f"  {label:38s} P {_pct(report.precision)}  R {_pct(report.recall)}  spec {_pct(report.specificity)}"
        f"  BA {_pct(report.balanced_accuracy)}  typing {_pct(report.typing_accuracy)}"
        f"  gap {report.curve_mae or 0:4.1f}  curve {curve}  ({report.seconds:.0f} s)"
    )


def run_set(name: str, vset: ValidationSet, cache: Cache, extra_profiles: dict[str, str]) -> dict[str, Any]:
    """Calibrate on the set, then validate every judge configuration on it."""
    started = time.perf_counter()
    calibration = calibrate_similarity(vset, cache=cache)
    profile = f"bench-minilm-{name}"
    save_calibration(profile, calibration)
    calibrate_s = time.perf_counter() - started
    print(
        f"{name}: calibrated MiniLM thresholds filter {calibration.filter_threshold:g} / verdict "
        f"{calibration.verdict_threshold:g}: BA {calibration.balanced_accuracy:.3f} in-sample, "
        f"{calibration.heldout_balanced_accuracy or 0:.3f} two-fold held-out, paper thresholds "
        f"{calibration.paper_balanced_accuracy or 0:.3f} ({calibrate_s:.0f} s)"
    )
    configurations: list[tuple[str, str, dict[str, Any]]] = [
        ("similarity (paper 0.5/0.6)", "similarity", {}),
        (f"similarity (calibrated on {name})", "similarity", {"profile": profile}),
        *[(label, "similarity", {"profile": other}) for label, other in extra_profiles.items()],
        ("typed", "typed", {}),
    ]
    reports = {}
    for label, judge_name, options in configurations:
        judge = JUDGES.create(judge_name, cache=cache, **options)
        report = validate_judge(vset, judge, cache)
        reports[label] = report.model_dump(mode="json")
        print(_row(label, report), flush=True)
    return {
        "questions": len({q.sample_id for q in vset.questions}),
        "calibration": calibration.model_dump(mode="json"),
        "calibrate_seconds": round(calibrate_s, 1),
        "reports": reports,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="synthetic images (4 questions each)")
    parser.add_argument("--tri-he", type=Path, default=SHARED / "data" / "tri-he" / "tri-he.json")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each set")
    parser.add_argument("--out", type=Path, default=None, help="write all figures as JSON")
    parser.add_argument("--cache", type=Path, default=None, help="cache file (default: a private temporary one)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="halluscope-validate-"))
    cache = Cache(args.cache or tmp / "cache.sqlite")
    results: dict[str, Any] = {"n_synthetic_images": args.n, "limit": args.limit}

    synthetic_dir = tmp / "synthetic"
    build_synthetic(synthetic_dir, n=args.n, seed=0)
    synthetic = synthetic_validation_set(SyntheticBenchmark(synthetic_dir), limit=args.limit)
    results["synthetic"] = run_set("synthetic", synthetic, cache, {})

    tri_he = tri_he_validation_set(TriHE(data=args.tri_he), limit=args.limit)
    results["tri-he"] = run_set(
        "tri-he", tri_he, cache, {"similarity (calibrated on synthetic)": "bench-minilm-synthetic"}
    )

    best_label, best = max(
        results["tri-he"]["reports"].items(), key=lambda item: item[1]["balanced_accuracy"] or 0.0
    )
    typing_ok = best["typing_accuracy"] is not None and best["typing_accuracy"] >= 0.8
    verdict = "met" if (best["balanced_accuracy"] or 0) >= 0.85 and typing_ok else "NOT met"
    print(
        f"aim (Tri-HE perturbations: BA >= 0.85, typing >= 0.8) {verdict} by the best offline judge, "
        f"{best_label}: BA {best['balanced_accuracy']:.3f}, typing "
        f"{'—' if best['typing_accuracy'] is None else format(best['typing_accuracy'], '.3f')}"
    )
    results["aim"] = {"best_judge": best_label, "met": verdict == "met"}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
