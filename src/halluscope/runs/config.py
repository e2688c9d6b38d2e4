"""One run's configuration: what ``halluscope run`` and :func:`halluscope.evaluate` both build.

The command line and the Python API parse their own spellings (``--judge-opt k=v`` or
``judge_options={...}``) into one frozen :class:`RunConfig` and hand it to the one orchestrator,
:func:`halluscope.runs.evaluation.execute`. So the rules about which options go together live here once,
and ``spec.json`` records the config as given (``run``), beside what was resolved while running (the
benchmark's files, the stages' identities, the model an endpoint reported, the images found).

Messages name an option the way the user wrote it: :attr:`RunConfig.surface` says whether that was on the
command line or in Python, and :meth:`RunConfig.flag` spells it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from halluscope.redact import is_secret_name, mask_data
from halluscope.spelling import Surface, spell

__all__ = ["EvaluationError", "RunConfig", "StageChoice"]


class EvaluationError(ValueError):
    """The evaluation could not be set up (unknown component, bad option, unreadable responses, ...)."""


class StageChoice(BaseModel):
    """The extractor or judge the user chose: a name (None: the benchmark's default) and its options.

    ``model`` (``--judge-model``) is one of the options; ``given`` lists the flags the user wrote for this
    stage, so a stage the benchmark does not use can be refused by name.
    """

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    given: tuple[str, ...] = ()


class RunConfig(BaseModel):
    """Everything one run of a benchmark depends on, as the user gave it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    benchmark: str
    out: Path
    data: Path | None = None
    bench_options: dict[str, Any] = Field(default_factory=dict)
    #: The first N samples of the benchmark are asked and scored (``runs.selection.first_samples``).
    limit: int | None = None
    #: Answers from a file (``responses``) or from a model asked now (``model``): exactly one of the two.
    responses: Path | None = None
    responses_key: str | None = None
    only_answered: bool = False
    strict: bool = False
    model: str | None = None
    model_options: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int | None = None
    concurrency: int | None = None
    extractor: StageChoice = Field(default_factory=StageChoice)
    judge: StageChoice = Field(default_factory=StageChoice)
    #: The OpenAI-compatible endpoint of the LLM stages (comma-separated replicas).
    base_url: str | None = None
    #: The cache file (None: the user's cache); ``use_cache=False`` reads and writes none.
    cache: Path | None = None
    use_cache: bool = True
    overwrite: bool = False
    chunk_size: int = 256
    max_failure_share: float = Field(default=0.1, ge=0.0, le=1.0)
    #: The run whose answers this run re-judges (``halluscope rejudge``); recorded in spec.json.
    rejudged_from: Path | None = None
    #: The confidence level of the headline intervals in ``metrics.json`` (each interval records it).
    ci: float = Field(default=0.95, ge=0.5, le=0.999)
    progress: bool = False
    #: Where the options were written: names in messages follow it.
    surface: Surface = "cli"

    #: Answer length and requests in flight for ``model`` runs when not given.
    DEFAULT_MAX_TOKENS: ClassVar[int] = 512
    DEFAULT_CONCURRENCY: ClassVar[int] = 4

    def flag(self, option: str) -> str:
        """``option`` as the user writes it here (``--judge-opt`` or ``judge_options=``; see ``spelling``)."""
        return spell(option, self.surface)

    def benchmark_options(self) -> dict[str, Any]:
        """The benchmark's options (the limit is not one: the run selects the samples, not the benchmark)."""
        return dict(self.bench_options)

    def check(self) -> None:
        """Refuse options that contradict each other or would change nothing, naming them as written."""
        if self.limit is not None and self.limit < 1:
            raise EvaluationError(f"{self.flag('limit')} must be at least 1, got {self.limit}")
        if (self.responses is None) == (self.model is None):
            raise EvaluationError(
                f"give exactly one of {self.flag('responses')} (answers you have) or {self.flag('model')} "
                "(collect answers now)"
            )
        if self.only_answered and self.responses is None:
            raise EvaluationError(f"{self.flag('only_answered')} goes with {self.flag('responses')}")
        from_file = self.responses is not None
        idle = [
            self.flag(option)
            for option, given, used in (
                ("responses_key", self.responses_key is not None, from_file),
                ("strict", self.strict, from_file),
                ("model_options", bool(self.model_options), not from_file),
                ("max_tokens", self.max_tokens is not None, not from_file),
                ("concurrency", self.concurrency is not None, not from_file),
            )
            if given and not used
        ]
        if idle:
            verb, pronoun = ("apply", "them") if len(idle) > 1 else ("applies", "it")
            path = self.flag("model" if from_file else "responses").split()[0]
            raise EvaluationError(f"{', '.join(idle)} only {verb} with {path}; leave {pronoun} out")

    def recorded(self) -> dict[str, Any]:
        """The config as ``spec.json`` keeps it: as given, secrets left out, nothing about presentation.

        Options named as secrets (whole words: ``api_key``, ``access_token``, but not ``max_tokens``) are not
        recorded; keys written inside a value (a base URL's ``user:password@``, a spec's ``?api_key=``) are
        masked, since the rest of that value says which endpoint or model ran.
        """
        data = self.model_dump(mode="json", exclude={"progress", "surface", "overwrite", "ci"})
        for key in ("bench_options", "model_options"):
            data[key] = _without_secrets(data[key])
        for stage in ("extractor", "judge"):
            data[stage] = {"name": data[stage]["name"], "options": _without_secrets(data[stage]["options"])}
        masked: dict[str, Any] = mask_data(data)
        return masked


def _without_secrets(options: dict[str, Any]) -> dict[str, Any]:
    return {key: "(not recorded)" if is_secret_name(key) else value for key, value in options.items()}
