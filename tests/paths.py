"""Where the shared benchmark data lives (never committed into the project)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HALLUSCOPE_SHARED", REPO_ROOT.parent / "shared"))
TRI_HE_JSON = SHARED / "data" / "tri-he" / "tri-he.json"
TRI_HE_IMAGES = SHARED / "data" / "tri-he" / "images"
REEFKNOT_DIR = SHARED / "data" / "reefknot"
HQH_DIR = SHARED / "data" / "hqh"
