"""One set of options for every stage that asks an LLM, and one function building its client.

Every LLM-backed extractor and judge (``--judge llm``, ``hqh-llm``, ``vlm``, ``mmhal-llm``, the entailment
``llm``, HallusionBench's ``llm`` grader, PROVE's ``vlm`` entailment, the ``llm`` claim extractor) takes
the same endpoint options under the same names, checked the same way: an option nobody reads is refused,
naming it and the options the stage takes, instead of being recorded in ``spec.json`` and changing nothing.
Stages differ only in their defaults (a VLM call with an image needs a longer timeout) and in the options
of their own (``json_mode``, ``max_side``), which they declare as ``extra``.

A stage that cannot be built raises ``ValueError``; a call that fails raises an
:class:`~halluscope.llm.errors.LLMError`, which the stage turns into a per-item
:class:`~halluscope.stages.Failure` (or re-raises when every other item would fail the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

from halluscope.options import check_options

if TYPE_CHECKING:
    from halluscope.cache import Cache
    from halluscope.llm.client import ChatClient

__all__ = ["LLM_STAGE_OPTIONS", "LLMStage", "LLMStageOptions", "llm_stage_client"]


@dataclass(frozen=True)
class LLMStageOptions:
    """The endpoint options every LLM stage takes (``--judge-opt`` / ``--extractor-opt`` keys).

    ``model``: the model name (else ``$HALLUSCOPE_LLM_MODEL``, else the one the endpoint serves);
    ``base_url``: the OpenAI-compatible endpoint (a list: a fleet); ``api_key_env``: the *name* of the
    environment variable holding the key (a key never appears in a command line or a spec);
    ``concurrency``: requests in flight; ``timeout_s``: seconds per request; ``max_retries``: bounded
    retries of a failed request; ``max_tokens``: the reply's token limit (None: the stage's own default,
    which may depend on its mode).
    """

    model: str | None = None
    base_url: str | Sequence[str] | None = None
    api_key_env: str | None = None
    concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 4
    max_tokens: int | None = None

    @classmethod
    def parse(
        cls, component: str, options: Mapping[str, Any], *, unused: Iterable[str] = (), **defaults: Any
    ) -> LLMStageOptions:
        """The options of ``component`` (as given on the command line: numbers may be strings), over the
        stage's own ``defaults``; unknown options are refused, naming them and the known ones. ``unused``:
        common options this stage has no use for (a fixed reply length), refused as unknown too."""
        parsed, _ = cls.split(component, options, (), unused=unused, **defaults)
        return parsed

    @classmethod
    def split(
        cls,
        component: str,
        options: Mapping[str, Any],
        extra: Iterable[str],
        *,
        unused: Iterable[str] = (),
        **defaults: Any,
    ) -> tuple[LLMStageOptions, dict[str, Any]]:
        """As :meth:`parse`, for a stage with options of its own (``extra``): those come back apart."""
        extra = tuple(extra)
        common = [k for k in LLM_STAGE_OPTIONS if k not in set(unused)]
        given = {k: v for k, v in options.items() if v is not None}
        unknown = set(given) - set(common) - set(extra)
        check_options(component, unknown, [*common, *extra])
        check_options(f"{component} (its defaults)", set(defaults) - set(LLM_STAGE_OPTIONS), LLM_STAGE_OPTIONS)
        base = replace(cls(), **defaults)
        values: dict[str, Any] = {}
        for name in LLM_STAGE_OPTIONS:
            if name not in given:
                continue
            value = given[name]
            try:
                if name in ("concurrency", "max_retries", "max_tokens"):
                    value = int(value)
                elif name == "timeout_s":
                    value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{component}: {name} must be a number, got {value!r}") from None
            values[name] = value
        parsed = replace(base, **values)
        for name, low in (("concurrency", 1), ("max_tokens", 1), ("max_retries", 0)):
            if getattr(parsed, name) is not None and getattr(parsed, name) < low:
                raise ValueError(f"{component}: {name} must be at least {low}, got {getattr(parsed, name)}")
        if parsed.timeout_s <= 0:
            raise ValueError(f"{component}: timeout_s must be positive, got {parsed.timeout_s}")
        return parsed, {k: v for k, v in given.items() if k in extra}


#: The option names of :class:`LLMStageOptions`, in order.
LLM_STAGE_OPTIONS: tuple[str, ...] = tuple(f.name for f in fields(LLMStageOptions))


def llm_stage_client(component: str, options: LLMStageOptions, *, cache: Cache | None) -> ChatClient:
    """The chat client of the LLM stage ``component``, from its options (see
    :func:`halluscope.llm.client.stage_client` for how the model and the key are found)."""
    from halluscope.llm.client import stage_client

    return stage_client(
        component,
        model=options.model,
        base_url=options.base_url,
        api_key_env=options.api_key_env,
        concurrency=options.concurrency,
        timeout_s=options.timeout_s,
        max_retries=options.max_retries,
        cache=cache,
    )


class LLMStage:
    """The half every LLM-backed extractor and judge shares: its endpoint options, parsed under one set of
    names, and the chat client built from them (a fleet when ``base_url`` lists several replicas).

    Why: the stages repeated one constructor (the endpoint keywords, the parse, the client, the reply
    length, closing the client) word for word. A stage subclasses this beside its own interface
    (``class GavieLLMJudge(LLMStage, GavieJudge)``) and declares only what differs: its name in messages
    (:attr:`component`), its defaults (:attr:`option_defaults`, :attr:`reply_tokens`), and the options of its
    own (:attr:`own_options`, read in :meth:`configure`); its prompt and its reply parser stay in its module.

    ``base_url`` is a named parameter of the constructor on purpose: :func:`halluscope.runs.setup.takes_endpoint`
    tells a stage that talks to an endpoint by its signature.
    """

    #: The stage as messages name it ("judge 'gavie-llm'").
    component: ClassVar[str]
    #: Defaults of the common options for this stage (a call with an image needs a longer timeout).
    option_defaults: ClassVar[Mapping[str, Any]] = {"timeout_s": 120.0}
    #: Options of the stage's own, beside the common ones; given ones reach :meth:`configure`.
    own_options: ClassVar[tuple[str, ...]] = ()
    #: The reply's token limit when ``max_tokens`` is not given.
    reply_tokens: ClassVar[int] = 512

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        cache: Cache | None = None,
        **options: Any,
    ) -> None:
        given = {"model": model, "base_url": base_url, "api_key_env": api_key_env, **options}
        self.options, own = LLMStageOptions.split(
            self.component, given, self.own_options, **self.option_defaults
        )
        self.client = llm_stage_client(self.component, self.options, cache=cache)
        self.max_tokens: int = self.options.max_tokens or self.reply_tokens
        self.configure(own)

    def configure(self, own: dict[str, Any]) -> None:
        """Read the stage's own options (only those given); a stage without any has nothing to do."""

    async def aclose(self) -> None:
        await self.client.aclose()
