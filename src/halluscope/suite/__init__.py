"""A whole evaluation: several benchmarks for one or several models, or a folder of answers other tools wrote.

``halluscope eval`` and :func:`evaluate_suite` plan the suite (:func:`plan_suite`: which benchmark for which
model, with which data, into which run folder), run each pair through the one single-run orchestrator
(:mod:`halluscope.suite.execute`), and rank the finished runs in a leaderboard
(:mod:`halluscope.report.leaderboard`). Each run folder is an ordinary ``halluscope run`` folder.
"""

from __future__ import annotations

from halluscope.suite.plan import SuitePlan, SuiteResult, evaluate_suite, plan_suite, run_planned

__all__ = ["SuitePlan", "SuiteResult", "evaluate_suite", "plan_suite", "run_planned"]
