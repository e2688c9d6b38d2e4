"""The one order in which metrics are shown, in the terminal table, CSV, markdown and the HTML report.

Why fixed: comparing reports side by side only works when a column sits in the same place in each,
whatever runs were given and in what order. Why paired: Tri-HE reports each rate question-level then
image-level (Hallu-Q, Hallu-I) per kind of hallucination, and a reader scans them as pairs.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["HEADLINE_RATES", "TRI_HE_RATES", "order_metrics"]

#: Tri-HE's rates in the order the paper reports them.
TRI_HE_RATES = (
    "hallu_q",
    "hallu_i",
    "object_hallu_q",
    "object_hallu_i",
    "relation_hallu_q",
    "relation_hallu_i",
)
#: Tri-HE's headline for three-way judges (``typed``, ``vlm``) and what it cannot check, before the paper's
#: rates: a report leads with the headline (docs/metrics.md); ``hallu_q`` leads for the other judges.
HEADLINE_RATES = ("contradicted_hallu_q", "contradicted_hallu_i", "unverifiable_share_q", "unverifiable_share_i")
_LEADING = (
    *HEADLINE_RATES,
    *TRI_HE_RATES,
    "attribute_hallu_q",
    "attribute_hallu_i",
    "hallu_q_with_empty",
    "hallu_i_with_empty",
)


def _pair_key(key: str) -> tuple[str, int]:
    """Sort key that puts each ``…hallu_i…`` right after its ``…hallu_q…`` partner."""
    if "hallu_i" in key:
        return key.replace("hallu_i", "hallu_q"), 1
    return key, 0


def order_metrics(keys: Iterable[str], headlines: Iterable[str] = ()) -> list[str]:
    """The benchmarks' declared ``headlines`` first, in their declared order; then Tri-HE's headline, then its
    paper rates (each Hallu-Q before its Hallu-I), then the rest, paired."""
    unique = list(dict.fromkeys(keys))
    declared = [k for k in dict.fromkeys(headlines) if k in unique]
    leading = declared + [k for k in _LEADING if k in unique and k not in declared]
    rest = sorted((k for k in unique if k not in leading), key=_pair_key)
    return leading + rest
