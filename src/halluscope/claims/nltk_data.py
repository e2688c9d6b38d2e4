"""Whether one of NLTK's data packages is installed, answered without importing NLTK when it is not.

Why: ``import nltk`` takes about 4 s here (it imports scipy, sklearn and pandas on the way), and the
taggers of AMBER and CHAIR ask whether NLTK's tokenizer and tagger data are installed every time a run
starts, even a finished run that tags nothing. No package on PyPI ships that data, so the answer is
nearly always "no": this module looks for the package in the folders NLTK would search (the same list
``nltk.data.path`` is built from) and only when something of that name is there asks NLTK itself, so
the answer is NLTK's own whenever it could be "yes".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["nltk_data_installed"]


def _search_paths() -> list[str]:
    """``nltk.data.path``: the live list when NLTK is imported, else the list NLTK 3.x builds on import."""
    loaded = sys.modules.get("nltk.data")
    if loaded is not None:
        return [str(p) for p in getattr(loaded, "path", [])]
    paths = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        paths.append(os.path.expanduser("~/nltk_data"))
    prefix = [os.path.join(sys.prefix, *parts, "nltk_data") for parts in ((), ("share",), ("lib",))]
    if sys.platform.startswith("win"):
        appdata = os.path.join(os.environ.get("APPDATA", "C:\\"), "nltk_data")
        return [*paths, *prefix, appdata, r"C:\nltk_data", r"D:\nltk_data", r"E:\nltk_data"]
    system = ["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return [*paths, *prefix, *system]


def _maybe_there(resource: str) -> bool:
    """Whether a folder or zip of ``resource``'s package (``taggers/averaged_perceptron_tagger_eng``) is in
    a search folder, or a search entry is itself a zip: then only NLTK can tell."""
    category, package = resource.strip("/").split("/")[:2]
    for entry in _search_paths():
        if entry.endswith(".zip") and os.path.exists(entry):
            return True
        base = Path(entry) / category
        if (base / package).exists() or (base / f"{package}.zip").exists():
            return True
    return False


def nltk_data_installed(resource: str) -> bool:
    """NLTK's ``nltk.data.find(resource)`` as a yes/no, False also when NLTK is not installed; NLTK is
    imported only when the package may be there."""
    if not _maybe_there(resource):
        return False
    try:
        import nltk

        nltk.data.find(resource)
    except (ImportError, LookupError):
        return False
    return True
