"""Fetching a benchmark's official files into the user cache (machines with internet only).

One place for the loop every benchmark loader needs: try each mirror of a file in order, write the first
answer through a temporary file so a reader never sees half a file, and collect what went wrong so the
caller can raise its own error naming the file and every URL tried.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["fetch_first"]


def fetch_first(target: Path, urls: Sequence[str], *, timeout: float = 60.0) -> list[str]:
    """Download ``target`` from the first URL that answers; return the errors met (empty on success)."""
    import urllib.request  # here: http.client's import is ~50 ms every CLI command would pay

    errors: list[str] = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                payload = answer.read()
        except OSError as error:
            errors.append(f"{url}: {error}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".part")
        tmp.write_bytes(payload)
        tmp.replace(target)
        return []
    return errors
