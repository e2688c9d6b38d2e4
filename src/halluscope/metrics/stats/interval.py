"""The interval record every headline number travels with, and the two normal quantiles the rest needs.

Why one record: a reader of ``metrics.json`` must be able to tell, for every interval, what was resampled
(``unit``: item, image, question set, caption), over how many items (``n``) and how many independent units
(``units``), by which method, at which level, and with which seed a bootstrap can be repeated. An interval
without those fields cannot be judged, and two intervals with different units cannot be compared.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["DEFAULT_LEVEL", "Interval", "check_level", "normal_quantile", "two_sided_z"]

#: The confidence level used when none is given.
DEFAULT_LEVEL = 0.95

_STANDARD_NORMAL = NormalDist()


def normal_quantile(probability: float) -> float:
    """The standard normal quantile; the stdlib's, so the core needs neither scipy nor a table."""
    return _STANDARD_NORMAL.inv_cdf(probability)


def normal_cdf(value: float) -> float:
    """The standard normal distribution function (stdlib)."""
    return _STANDARD_NORMAL.cdf(value)


def check_level(level: float) -> float:
    """Return ``level`` if it is a confidence level strictly between 0 and 1, else say what is wrong."""
    if not (isinstance(level, int | float) and 0.0 < float(level) < 1.0):
        raise ValueError(f"confidence level {level!r} must lie strictly between 0 and 1 (e.g. 0.95)")
    return float(level)


def two_sided_z(level: float) -> float:
    """The z with ``level`` of the standard normal between -z and z (1.96 for 0.95)."""
    return normal_quantile(0.5 + check_level(level) / 2.0)


class Interval(BaseModel):
    """A confidence interval for one number, with everything needed to read and repeat it.

    ``low``/``high`` are on the scale of the number they bound (use :meth:`scaled` to go from a share to a
    percentage). ``n`` counts items, ``units`` the independent resampling units the items fall into (equal to
    ``n`` when every item is its own unit). ``seed`` is the bootstrap seed, None for a closed-form interval;
    ``resamples`` the bootstrap resamples the interval rests on (those where the statistic was defined).
    """

    model_config = ConfigDict(frozen=True)

    low: float
    high: float
    level: float
    method: str
    unit: str
    n: int
    units: int
    seed: int | None = None
    resamples: int | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Interval:
        check_level(self.level)
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError(f"interval bounds must be finite numbers, got [{self.low}, {self.high}]")
        if self.low > self.high:
            raise ValueError(f"interval low {self.low} is above high {self.high}")
        if self.n < 0 or self.units < 0 or self.units > self.n:
            raise ValueError(f"an interval over {self.n} items cannot have {self.units} resampling units")
        return self

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval, bounds included."""
        return self.low <= value <= self.high

    def scaled(self, factor: float) -> Interval:
        """The same interval with its bounds multiplied by a positive ``factor`` (100 for a percentage)."""
        if not factor > 0:
            raise ValueError(f"an interval can only be scaled by a positive factor, not {factor}")
        return self.model_copy(update={"low": self.low * factor, "high": self.high * factor})

    def to_json(self, digits: int | None = None) -> dict[str, Any]:
        """A plain dict for ``metrics.json``; bounds rounded to ``digits`` decimals when given."""
        record = self.model_dump(mode="json")
        if digits is not None:
            record["low"] = round(self.low, digits)
            record["high"] = round(self.high, digits)
        return record
