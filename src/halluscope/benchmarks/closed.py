"""Former home of what the yes/no benchmarks share, kept so that existing imports work.

It was split by what each part does: reading the official files (:mod:`halluscope.benchmarks.data_files`),
fetching them (:mod:`halluscope.benchmarks._download`) and scoring one yes/no answer under both rule sets
(:mod:`halluscope.benchmarks.yes_no`). Import from those; ``ClosedDataError`` is
:class:`~halluscope.benchmarks.data_files.BenchmarkDataError` under its old name.
"""

from __future__ import annotations

from halluscope.benchmarks.data_files import BenchmarkDataError, read_json_rows
from halluscope.benchmarks.yes_no import MODES, check_mode, check_prompt, yes_no_record

ClosedDataError = BenchmarkDataError

__all__ = [
    "MODES",
    "BenchmarkDataError",
    "ClosedDataError",
    "check_mode",
    "check_prompt",
    "read_json_rows",
    "yes_no_record",
]
