"""halluscope: measure how much vision-language models hallucinate, against scene graphs of the images.

The public nouns are few: :class:`Sample`, :class:`Response`, :class:`Claim`, :class:`Verdict`,
:class:`SampleRecord` (in :mod:`halluscope.types`), :class:`SceneGraph`, and the registries of
benchmarks, models, extractors and judges. Everything heavy is imported lazily.
"""

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
from halluscope.version import __version__

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
