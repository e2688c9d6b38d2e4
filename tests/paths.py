"""Where the benchmark data for the tests lives.

Two kinds of data:
- the full public benchmark files in the shared folder (``$HALLUSCOPE_SHARED``, default ``../shared`` next
  to the repository; never committed). Tests that read them are marked ``full_data``: they run when the
  folder is there and are skipped with a reason when it is not (``.ci/run`` requires them);
- small excerpts of the files whose licences allow it, committed under ``tests/data/excerpts`` (regenerated
  by its ``make_excerpts.py``; sources and licences in its NOTICE.md). The everyday tests read these, and
  the synthetic stand-ins of ``tests/layouts.py`` for Tri-HE and Reefknot, whose files carry no licence.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO_ROOT.parent / "shared"))
FULL_DATA = SHARED / "data"

# The full files: only tests marked ``full_data`` read these.
TRI_HE_JSON = FULL_DATA / "tri-he" / "tri-he.json"
TRI_HE_IMAGES = FULL_DATA / "tri-he" / "images"
REEFKNOT_DIR = FULL_DATA / "reefknot"
HQH_DIR = FULL_DATA / "hqh"
POPE_DIR = FULL_DATA / "pope"
AMBER_DIR = FULL_DATA / "amber"
HALLUSIONBENCH_DIR = FULL_DATA / "hallusionbench"
REPOPE_DIR = FULL_DATA / "repope"
PEER_OUTPUTS = FULL_DATA / "peer-outputs"
MMHAL_DIR = FULL_DATA / "mmhal-bench"
GAVIE_SET = FULL_DATA / "gavie" / "evaluation_set.json"

# The committed excerpts, in the same layout as the full files.
EXCERPTS = REPO_ROOT / "tests" / "data" / "excerpts"
POPE_EXCERPT = EXCERPTS / "pope"
AMBER_EXCERPT = EXCERPTS / "amber"
HALLUSIONBENCH_EXCERPT = EXCERPTS / "hallusionbench"
TRI_HE_IMAGES_EXCERPT = EXCERPTS / "tri-he" / "images"
PEER_OUTPUTS_EXCERPT = EXCERPTS / "peer-outputs"

REQUIRE_FULL_DATA_ENV = "HALLUSCOPE_REQUIRE_FULL_DATA"


def full_data_present() -> bool:
    """True when the shared folder holds the full benchmark data."""
    return FULL_DATA.is_dir()
