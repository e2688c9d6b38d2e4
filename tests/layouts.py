"""Stand-ins in the released Tri-HE and Reefknot layouts, for tests about halluscope's own machinery.

Tri-HE's ``tri-he.json`` and Reefknot's files publish no licence, so no excerpt of them is committed (see
``tests/data/excerpts/NOTICE.md``). Tests that check the runner, the CLI, resuming, failures or the HQM
statistics need items in those layouts, not those particular items: they read a small synthetic build
(``halluscope build synthetic``: rendered scenes with exact scene graphs, written as ``tri-he.json`` with
``images/`` and ``reefknot/{YESNO,Multichoice,VQA}.jsonl``), made once per test session into a temporary
folder. Tests about the released files themselves read those files and are marked ``full_data``.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

IMAGES = 32  # 128 Tri-HE-layout questions; 140 yes/no, 40 multiple-choice and 70 VQA Reefknot-layout items


@functools.cache
def synthetic_layouts() -> Path:
    """The folder of the session's synthetic build (the same bytes every time: seed 0)."""
    from halluscope.builders.synthetic import build_synthetic

    root = Path(tempfile.mkdtemp(prefix="halluscope-test-layouts-"))
    atexit.register(shutil.rmtree, root, True)
    build_synthetic(root / "synthetic", n=IMAGES, seed=0)
    return root / "synthetic"


def tri_he_layout() -> Path:
    """A ``tri-he.json`` in the released layout, with its ``images/`` folder beside it."""
    return synthetic_layouts() / "tri-he.json"


def reefknot_layout() -> Path:
    """A folder with ``YESNO.jsonl``, ``Multichoice.jsonl`` and ``VQA.jsonl`` in the released layout."""
    return synthetic_layouts() / "reefknot"
