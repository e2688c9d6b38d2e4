"""Each hostile program of tests/test_sandbox.py through the full sandbox and through its OS layers alone.

    PYTHONPATH=src:. python bench/sandbox_hostile.py

Prints a markdown table of outcomes (the table in docs/prove.md) after checking, as the tests do, that no
program had an effect outside the sandbox (no file read, written or deleted, no process, no connection).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.test_sandbox import _assert_no_escape, _run_hostile

from halluscope.sandbox import Limits, Sandbox


def main() -> None:
    columns: list[dict[str, str]] = []
    for restricted in (True, False):
        limits = Limits(cpu_s=1, wall_s=10.0, memory_mb=128, restricted=restricted)
        with Sandbox(limits=limits) as box, tempfile.TemporaryDirectory() as scratch:
            results, listener = _run_hostile(box, Path(scratch))
            _assert_no_escape(results, listener, Path(scratch))
        columns.append({k: r.status for k, r in results.items() if not k.startswith("good after")})
    print("| hostile program | full sandbox | OS layers alone (no RestrictedPython) |")
    print("|---|---|---|")
    for name in columns[0]:
        print(f"| `{name}` | {columns[0][name]} | {columns[1][name]} |")
    print("\n0 escapes: no file read, written or deleted, no process started, no connection made.")


if __name__ == "__main__":
    main()
