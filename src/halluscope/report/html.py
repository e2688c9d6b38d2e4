"""A static, self-contained HTML report of one or more runs.

Why one file: a report is something people mail, attach to an issue or open from a CI artefact, often on a
machine without the data or the package. So everything it needs — styles, script, plots, image thumbnails,
scene graphs — is inlined, and a Content-Security-Policy forbids every network request.

What it shows (modelled on Tri-HE's Figure 1): a summary table of all runs; a radar of hallucination rates
per model (Fig. 1b); a helpfulness–truthfulness scatter when runs report both (PROVE); and a page per
sample with the image, its scene graph, the question and the response with each extracted claim coloured
by verdict, next to its evidence (Fig. 1a).

Why the samples are rendered by the browser: a Tri-HE run has 1,226 samples with several judged claims
each, and a page with all of them as HTML would be slow to open. The samples go in as one JSON document
that the inline script filters, sorts and paginates; only the summary and plots are HTML/SVG from Python,
so they also read without JavaScript.

Safety: responses are untrusted model output. Text from runs reaches the page either escaped by
``html.escape`` (summary, plots) or through ``textContent`` (everything the script renders), never as markup.

Where the parts are: ``rundir`` reads run directories and labels them; ``samples`` reopens each run's
benchmark for images and scene graphs and builds the per-sample documents (``claims`` places and colours
their claims); ``summary`` and ``plots`` are the server-side table and SVG (``formatting`` is how numbers
and metric names read in both); this module puts them into the page template under ``assets/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from halluscope.report.claims import CATEGORIES, claim_category, locate_claim
from halluscope.report.formatting import esc
from halluscope.report.plots import group_bars_svg, radar_svg, scatter_svg
from halluscope.report.rundir import ReportError, label_runs, load_run
from halluscope.report.samples import Thumbnails, collect_samples
from halluscope.report.summary import summary_html

__all__ = ["ReportError", "claim_category", "locate_claim", "write_html_report"]

_DEFAULT_THUMBNAIL_PX = 384
_DEFAULT_IMAGE_BUDGET = 16_000_000


def _asset(name: str) -> str:
    return resources.files("halluscope.report").joinpath("assets", name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element whatever strings it holds."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Replaces ``<!--@NAME@-->`` markers in one pass, so inserted content is never scanned again."""
    return re.sub(r"<!--@([A-Z_]+)@-->", lambda m: values[m.group(1)], template)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("halluscope")
    except Exception:  # not installed as a distribution (a source checkout on sys.path)
        return "dev"


def write_html_report(
    run_dirs: list[Path],
    out_path: Path,
    *,
    title: str | None = None,
    thumbnail_px: int = _DEFAULT_THUMBNAIL_PX,
    image_budget_bytes: int = _DEFAULT_IMAGE_BUDGET,
    quality_html: str | None = None,
) -> Path:
    """Writes one self-contained HTML file reporting the given run directories; returns its path.

    ``thumbnail_px`` is the longest side of the embedded image thumbnails; once the embedded images reach
    ``image_budget_bytes`` (base64 characters), further samples show no image, so a huge run cannot
    produce a file too large to open. Raises ``ReportError`` naming a directory that is not a run.
    """
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = [load_run(Path(d)) for d in run_dirs]
    label_runs(runs)
    thumbnails = Thumbnails(thumbnail_px, image_budget_bytes)
    samples, scenes = collect_samples(runs, thumbnails)
    if thumbnails.skipped_for_budget:
        runs[0].notes.append(
            f"{thumbnails.skipped_for_budget} images not embedded: the report's image budget "
            f"({image_budget_bytes:,} bytes) was reached"
        )
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    payload = {
        "runs": [
            {
                "label": r.label,
                "name": r.name,
                "dir": r.directory.name,
                "model": r.model,
                "benchmark": r.benchmark,
                "judge": r.judge,
                "extractor": r.extractor,
                "color": r.color,
            }
            for r in runs
        ],
        "samples": samples,
        "images": thumbnails.data,
        "scenes": scenes,
        "categories": list(CATEGORIES),
    }
    report_title = title or (
        f"halluscope report — {runs[0].label}" if len(runs) == 1 else f"halluscope report — {len(runs)} runs"
    )
    plots = radar_svg(runs) + scatter_svg(runs) + group_bars_svg(runs)
    document = _fill(
        _asset("report.html"),
        {
            "TITLE": esc(report_title),
            "SUBTITLE": esc(
                f"{len(runs)} run(s), {len(samples):,} samples · generated {generated} "
                f"· halluscope {_version()}"
            ),
            "CSS": _asset("report.css"),
            # quality_html: the HQM section (halluscope.quality.render.html_section), when given.
            "SUMMARY": summary_html(runs) + (quality_html or ""),
            "PLOTS": plots or '<p class="muted">No rates to plot.</p>',
            "DATA": _script_json(payload),
            "JS": _asset("report.js"),
        },
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(document, encoding="utf-8")
    return out_path
