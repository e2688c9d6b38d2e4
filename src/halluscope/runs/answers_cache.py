"""An answers file as the benchmark read it, kept in the cache, so a finished run re-run does not read it again.

Why: re-running a finished run confirms that its answers are the ones it scored, and the reading is most of that
re-run: LLaVA's 5,712 POPE answers are matched through its 8,910-line question file to the benchmark's
samples, a third of a second on two cores. What the reading gives (the answers by sample id, the problems found,
the layout, the file's own items and its notes) depends only on:

- the answers file's bytes, and the bytes of the question file the benchmark names for imported answers;
- the benchmark's samples, each in full (ids, questions, images, labels and metadata: what an importer matches
  rows against) and the benchmark's class;
- the answers' key option, and halluscope's version and code (the readers themselves).

Those make the key; anything else leaves a kept reading unused. A kept reading that cannot be read back (an
older layout, a damaged entry) is read from the file again and replaced. A reading whose notes are not plain
JSON is not kept. ``--no-cache`` leaves the cache in memory, so nothing is reused across runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from halluscope.cache import Cache, content_key
from halluscope.download import file_sha256
from halluscope.responses import ResponsesFile
from halluscope.stages import BenchmarkInterface
from halluscope.types import Response, Sample
from halluscope.version import __version__

__all__ = ["NAMESPACE", "read_kept"]

#: The cache namespace of kept readings.
NAMESPACE = "answers-read"

_RESPONSES = TypeAdapter(dict[str, Response])
_ITEMS = TypeAdapter(list[Sample])


def read_kept(
    bench: BenchmarkInterface,
    path: Path,
    cache: Cache,
    read: Callable[[], ResponsesFile],
    *,
    options: Any = None,
) -> ResponsesFile:
    """``read()`` (the benchmark reading ``path``), or the reading kept in ``cache`` under the same inputs;
    ``options``: whatever else the caller's reading depends on (the answers' key option), JSON-serialisable."""
    key = _key(bench, path, options)
    if key is None:
        return read()
    kept = cache.get_blobs(NAMESPACE, [key]).get(key)
    if kept is not None:
        loaded = _loads(kept)
        if loaded is not None:
            return loaded
    loaded = read()
    blob = _dumps(loaded)
    if blob is not None:
        cache.put_blobs(NAMESPACE, {key: blob})
    return loaded


def _key(bench: BenchmarkInterface, path: Path, options: Any) -> str | None:
    """What the reading of ``path`` depends on, as one key; None when a file it depends on cannot be read."""
    from halluscope.runs.finished import code_stamp

    try:
        answers = file_sha256(path)
        questions_path = bench.external_questions()
        questions = file_sha256(Path(questions_path)) if questions_path is not None else None
    except OSError:
        return None
    samples = hashlib.sha256()
    for sample in bench.every_sample():
        samples.update(sample.model_dump_json().encode("utf-8"))
        samples.update(b"\n")
    return content_key(
        NAMESPACE, __version__, code_stamp(), f"{type(bench).__module__}.{type(bench).__qualname__}", answers,
        questions, samples.hexdigest(), options,
    )  # fmt: skip


def _dumps(loaded: ResponsesFile) -> bytes | None:
    """The reading as three lines of JSON (layout, problems and notes; the answers; the file's own items), or
    None when its notes would not read back as themselves. JSON text holds no raw newline, so the lines
    split back exactly, and pydantic reads the answers straight from their JSON (faster than from objects)."""
    head = {"layout": loaded.layout, "problems": loaded.problems, "notes": loaded.notes}
    try:
        head_json = json.dumps(head, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if json.loads(head_json) != head:
        return None
    return b"\n".join(
        [head_json.encode("utf-8"), _RESPONSES.dump_json(loaded.responses), _ITEMS.dump_json(loaded.items)]
    )


def _loads(blob: bytes) -> ResponsesFile | None:
    """A kept reading, or None when it is not one (damaged, or written by another layout of this module)."""
    try:
        head_json, responses, items = blob.split(b"\n")
        head: Any = json.loads(head_json)
        if not isinstance(head, dict) or not isinstance(head.get("problems"), list):
            return None
        return ResponsesFile(
            responses=_RESPONSES.validate_json(responses),
            problems=[str(p) for p in head["problems"]],
            layout=str(head["layout"]),
            items=_ITEMS.validate_json(items),
            notes=dict(head["notes"]),
        )
    except (ValueError, KeyError, TypeError, ValidationError):
        return None
