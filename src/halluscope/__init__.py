"""halluscope: measure how much vision-language models hallucinate, against scene graphs of the images.

The public nouns are few: :class:`Sample`, :class:`Response`, :class:`Claim`, :class:`Verdict`,
:class:`SampleRecord` (in :mod:`halluscope.types`), :class:`SceneGraph`, and the registries of
benchmarks, models, extractors and judges. Everything heavy is imported lazily.

The names below resolve on first use (PEP 562): importing one small module (``halluscope.judges.answers``,
``halluscope.text``) must not first import the API, pydantic's models and numpy, which is most of the start-up
time of a short command.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from halluscope.version import __version__

if TYPE_CHECKING:
    from halluscope.api import EvaluationResult, compare, evaluate, load_run, rejudge
    from halluscope.suite import SuiteResult, evaluate_suite
    from halluscope.types import (
        Claim,
        ErrorType,
        JudgedClaim,
        Response,
        Sample,
        SampleRecord,
        Verdict,
        VerdictLabel,
    )

#: Each public name and the module that defines it.
_LAZY = {
    **dict.fromkeys(("EvaluationResult", "compare", "evaluate", "load_run", "rejudge"), "halluscope.api"),
    **dict.fromkeys(("SuiteResult", "evaluate_suite"), "halluscope.suite"),
    **dict.fromkeys(
        (
            "Claim",
            "ErrorType",
            "JudgedClaim",
            "Response",
            "Sample",
            "SampleRecord",
            "Verdict",
            "VerdictLabel",
        ),
        "halluscope.types",
    ),
}

__all__ = [
    "Claim",
    "ErrorType",
    "EvaluationResult",
    "JudgedClaim",
    "Response",
    "Sample",
    "SampleRecord",
    "SuiteResult",
    "Verdict",
    "VerdictLabel",
    "__version__",
    "compare",
    "evaluate",
    "evaluate_suite",
    "load_run",
    "rejudge",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'halluscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
