"""A finished run's ``metrics.json`` reused when nothing it was computed from has changed.

Why: re-running the command of a finished run (to see its table again, or from a script that runs every
step each time) asks and scores nothing, yet recomputing the metrics, the metric tables and the bootstrap
intervals took most of the re-run's time (numpy's import alone a fifth of a second). The figures are a
pure function of the run log, the run's spec, the interval level and halluscope's code, so when none of
those changed, the files written last time are the answer.

The key (``metrics.key`` beside ``metrics.json``) is a digest of ``samples.jsonl``'s bytes, ``spec.json``
as written, the interval level, halluscope's version and the stamp of its code (the newest modification
time and the count of its ``.py`` files, so an edited metric in a development checkout is recomputed); it
also holds digests of ``metrics.json`` and ``metric_tables.json`` as written, so a hand-edited or removed
file is rewritten. Anything that does not match means: compute as before.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from halluscope.download import file_sha256
from halluscope.jsonio import write_json_atomic
from halluscope.runs.store import METRICS_FILE, METRICS_KEY_FILE, SAMPLES_FILE, TABLES_FILE
from halluscope.types import MetricsReport
from halluscope.version import __version__

__all__ = ["FinishedMetrics", "code_stamp", "finished_key", "forget_metrics", "remember_metrics"]


@cache
def code_stamp() -> tuple[int, int]:
    """(newest modification time in ns, count) of halluscope's Python files: changes when the code does."""
    root = Path(__file__).resolve().parents[1]
    newest, count = 0, 0
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
                count += 1
    return newest, count


def _digest(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except FileNotFoundError:
        return None


def finished_key(out_dir: Path, spec: dict[str, Any], level: float) -> str:
    """The digest of what ``out_dir``'s metrics are computed from (see the module docstring)."""
    head = {"version": __version__, "code": code_stamp(), "level": level, "spec": spec}
    digest = hashlib.sha256(json.dumps(head, sort_keys=True, default=str).encode("utf-8"))
    digest.update(bytes.fromhex(file_sha256(Path(out_dir, SAMPLES_FILE))))  # the log's own sha256, as bytes
    return digest.hexdigest()


def _outputs(out_dir: Path) -> dict[str, str | None]:
    return {name: _digest(Path(out_dir) / name) for name in (METRICS_FILE, TABLES_FILE)}


@dataclass(frozen=True)
class FinishedMetrics:
    """The metrics files a run wrote last time, and the key they were computed for.

    Read before the run touches its folder: a run with failed samples redoes them (an unanswered sample
    stays unanswered, the same record is written again), and removes its old ``metrics.json`` while it
    works; when the log it ends with is the one the saved files describe, they are written back.
    """

    key: str
    files: dict[str, bytes]

    @classmethod
    def read(cls, out_dir: Path) -> FinishedMetrics | None:
        """The saved files when ``metrics.key`` names them and they are as written, else None."""
        try:
            saved = json.loads(Path(out_dir, METRICS_KEY_FILE).read_text(encoding="utf-8"))
            files = {name: Path(out_dir, name).read_bytes() for name in (METRICS_FILE, TABLES_FILE)
                     if Path(out_dir, name).exists()}  # fmt: skip
        except (OSError, ValueError):
            return None
        digests = {name: hashlib.sha256(files[name]).hexdigest() if name in files else None
                   for name in (METRICS_FILE, TABLES_FILE)}  # fmt: skip
        if not isinstance(saved, dict) or not isinstance(saved.get("key"), str) or saved.get("files") != digests:
            return None
        return cls(saved["key"], files) if METRICS_FILE in files else None

    def reuse(self, out_dir: Path, key: str) -> MetricsReport | None:
        """The saved report, its files written back, when ``key`` is the one they were computed for."""
        if key != self.key:
            return None
        try:
            report = MetricsReport.model_validate_json(self.files[METRICS_FILE])
        except ValueError:
            return None
        for name, content in self.files.items():
            path = Path(out_dir, name)
            if not path.exists() or path.read_bytes() != content:
                write_bytes_atomic(path, content)
        remember_metrics(out_dir, key)
        return report


def remember_metrics(out_dir: Path, key: str) -> None:
    """Record that the metrics files now in ``out_dir`` were computed for ``key``."""
    write_json_atomic(Path(out_dir) / METRICS_KEY_FILE, {"key": key, "files": _outputs(out_dir)})


def forget_metrics(out_dir: Path) -> None:
    """Drop the key: the run changes, its metrics are gone or about to be."""
    Path(out_dir, METRICS_KEY_FILE).unlink(missing_ok=True)


def write_bytes_atomic(path: Path, content: bytes) -> None:
    """``content`` into ``path`` through a temporary file in the same folder, then renamed."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)
