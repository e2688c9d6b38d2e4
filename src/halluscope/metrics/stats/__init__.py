"""Honest error bars: intervals, paired comparisons and detectable differences for any metric.

Pure numpy (scipy is not needed). Four parts, each a small module:

- :mod:`.interval` — the :class:`Interval` record every number's interval is (low, high, level, method,
  unit, n, units, seed), JSON-ready for ``metrics.json``;
- :mod:`.proportion` — Wilson and Clopper-Pearson intervals for one proportion over independent items;
- :mod:`.bootstrap` — the seeded, vectorised cluster bootstrap for any metric made of per-unit sums
  (a rate, F1, CHAIRi, a mean), resampling images, question sets or captions rather than items;
- :mod:`.paired` — two runs on the same items: the difference, its paired interval, McNemar / sign-flip /
  bootstrap p-values, Holm's correction across metrics;
- :mod:`.power` — the minimum detectable difference for a benchmark's size and clustering.

How to read them is in docs/statistics.md.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halluscope.metrics.stats.bootstrap import (
        DEFAULT_RESAMPLES,
        ClusteredSums,
        Statistic,
        cluster_bootstrap,
        f1,
        ratio,
    )
    from halluscope.metrics.stats.interval import DEFAULT_LEVEL, Interval
    from halluscope.metrics.stats.paired import (
        PairedComparison,
        holm_adjust,
        mcnemar_exact,
        paired_bootstrap,
        paired_mean_comparison,
        paired_proportion_comparison,
        sign_flip_test,
        with_holm,
    )
    from halluscope.metrics.stats.power import (
        DetectableDifference,
        design_effect,
        discordance_rate,
        intraclass_correlation,
        minimum_detectable_difference,
        paired_minimum_detectable_difference,
    )
    from halluscope.metrics.stats.proportion import clopper_pearson_bounds, proportion_interval, wilson_bounds

#: Where each name lives. The names are imported on first use (PEP 562): importing this package for one
#: constant (``DEFAULT_LEVEL``) must not import numpy, which every run would pay even when it reuses a
#: finished run's intervals.
_WHERE = {
    "ClusteredSums": "bootstrap",
    "DEFAULT_LEVEL": "interval",
    "DEFAULT_RESAMPLES": "bootstrap",
    "DetectableDifference": "power",
    "Interval": "interval",
    "PairedComparison": "paired",
    "Statistic": "bootstrap",
    "clopper_pearson_bounds": "proportion",
    "cluster_bootstrap": "bootstrap",
    "design_effect": "power",
    "discordance_rate": "power",
    "f1": "bootstrap",
    "holm_adjust": "paired",
    "intraclass_correlation": "power",
    "mcnemar_exact": "paired",
    "minimum_detectable_difference": "power",
    "paired_bootstrap": "paired",
    "paired_mean_comparison": "paired",
    "paired_minimum_detectable_difference": "power",
    "paired_proportion_comparison": "paired",
    "proportion_interval": "proportion",
    "ratio": "bootstrap",
    "sign_flip_test": "paired",
    "wilson_bounds": "proportion",
    "with_holm": "paired",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "ClusteredSums",
    "DetectableDifference",
    "Interval",
    "PairedComparison",
    "Statistic",
    "clopper_pearson_bounds",
    "cluster_bootstrap",
    "design_effect",
    "discordance_rate",
    "f1",
    "holm_adjust",
    "intraclass_correlation",
    "mcnemar_exact",
    "minimum_detectable_difference",
    "paired_bootstrap",
    "paired_mean_comparison",
    "paired_minimum_detectable_difference",
    "paired_proportion_comparison",
    "proportion_interval",
    "ratio",
    "sign_flip_test",
    "wilson_bounds",
    "with_holm",
]
