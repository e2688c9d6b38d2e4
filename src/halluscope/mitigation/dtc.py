"""Detect-then-Calibrate (DTC): Reefknot's decoding fix for relation hallucination, as a wrapper of ``hf``.

Reference: Zheng et al., "Reefknot: A Comprehensive Benchmark for Relation Hallucination Evaluation, Analysis
and Mitigation in Multimodal Large Language Models", 2024, section 5.

The paper observes that a model hallucinating a relation answers with low confidence, and that the layers just
below the last one often still hold the right answer. So at every greedy step:

1. **Detect.** Take the probabilities of the task's answer options (yes/no, or A–D) from the final layer's
   softmax, renormalise them over the options, and compute their entropy in bits,
   ``H = -sum_i p_i log2 p_i`` (at most 1 for two options, log2 k for k). Option tokens come from the
   tokenizer (:func:`halluscope.models.hf.answer_token_ids`), never from a table of ids.
2. **Calibrate**, only when ``H >= threshold`` (0.9): with ``F`` the final layer's log-softmax and ``I`` the
   log-softmax that an intermediate layer gives through the LM head, the next-token scores are
   ``(1 + alpha) * F - alpha * I`` (alpha = 0.1) over the tokens the final layer finds plausible
   (``F >= max F + log(relative_top)``, relative_top = 0.1); every other token is masked out.
   Confident steps keep the final logits untouched: the point is not to disturb answers that are fine.

Choices the paper leaves open, and what is done here:

* **Which layer.** ``layer`` indexes transformers' ``hidden_states`` (0 = embeddings, i = output of decoder
  layer i); negative values count from the end, so the default ``-2`` is the output of the second-to-last
  layer. The paper used layer 38 of LLaVA-1.5-13B's 40 (``layer=38``).
* **Final norm.** By default the model's final norm is applied to the intermediate hidden state before the
  LM head, as the LM head expects; ``final_norm=False`` reproduces the official code, which skips it.
* **Renormalising.** The options' probabilities are renormalised before the entropy, so that mass on other
  tokens does not lower it; ``normalize_entropy=True`` further divides by log2 k so that one threshold serves
  any number of options. If the options get no probability at all, the step is not an answering step and
  is never calibrated.
* **Which steps.** Every step, as in the paper (``steps="all"``), or only the first (``steps="first"``),
  which for yes/no and multiple-choice prompts is the answering step.

Decoding is greedy, as in the paper; a request with a temperature above 0 is refused. Each answer's
``metadata["dtc"]`` records whether any step was calibrated and whether the answer changed against plain
greedy decoding. "Changed" needs no second run: until the first step where the calibrated choice differs from
the final layer's own argmax, decoding is exactly plain greedy; from that step on the texts differ.
:func:`summarize` counts calibrated and changed answers over results or saved records.

The decoding math is in plain functions over tensors (:func:`option_entropy`, :func:`relative_top_mask`,
:func:`contrast_logits`, :func:`detect`, :func:`calibrate`), so it can be checked on crafted logits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from halluscope.models.base import GenerateRequest, GenerateResult, Model
from halluscope.models.hf import (
    Batcher,
    HFModel,
    HFModelError,
    batch_key,
    cached_generate,
    gather_failures,
    option_probabilities,
    run_isolated,
    stop_token_ids,
)
from halluscope.stages import Failure

if TYPE_CHECKING:
    import torch


class DTCConfig(BaseModel):
    """The knobs of Detect-then-Calibrate; the defaults are the paper's, except ``layer`` (see module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Calibrate a step when the options' entropy (bits) is at least this.
    threshold: float = 0.9
    #: Weight of the contrast with the intermediate layer.
    alpha: float = Field(default=0.1, ge=0.0)
    #: ``hidden_states`` index of the intermediate layer; negative counts from the end (-2: second to last).
    layer: int = -2
    #: Keep only tokens with final log-prob >= max + log(relative_top); 0 keeps every token.
    relative_top: float = Field(default=0.1, ge=0.0, le=1.0)
    #: Apply the final norm to the intermediate hidden state before the LM head (the paper's code does not).
    final_norm: bool = True
    #: Divide the entropy by log2(k) so that it lies in [0, 1] for any number of options k.
    normalize_entropy: bool = False
    #: Calibrate at every greedy step (the paper) or only at the first.
    steps: Literal["all", "first"] = "all"
    #: Options to use when a request names none (e.g. ["yes", "no"]); None: such requests are not calibrated.
    options: list[str] | None = None


# -- the math --


def option_entropy(option_probs: torch.Tensor, *, normalize: bool = False) -> torch.Tensor:
    """Entropy in bits of option probabilities ``[..., k]``, renormalised over the k options.

    Rows whose options carry no probability at all get entropy 0 (nothing to be unsure about: the model is
    not answering). With ``normalize``, the entropy is divided by log2(k), so that it lies in [0, 1].
    """
    import torch

    probs = option_probs.double()
    total = probs.sum(dim=-1, keepdim=True)
    share = torch.where(
        total > 0, probs / total.clamp_min(torch.finfo(torch.float64).tiny), torch.zeros_like(probs)
    )
    entropy = -torch.special.xlogy(share, share).sum(dim=-1) / math.log(2.0)
    if normalize:
        k = option_probs.shape[-1]
        entropy = entropy / math.log2(k) if k > 1 else torch.zeros_like(entropy)
    return entropy.to(option_probs.dtype if option_probs.is_floating_point() else torch.float32)


def needs_calibration(entropy: torch.Tensor, threshold: float) -> torch.Tensor:
    """Which rows are unsure enough to calibrate: ``entropy >= threshold`` (NaN never is)."""
    return entropy >= threshold


def relative_top_mask(final_logprobs: torch.Tensor, relative_top: float) -> torch.Tensor:
    """True for tokens the final layer finds plausible: log-prob >= row max + log(relative_top).

    ``relative_top`` 0 keeps every token.
    """
    import torch

    if relative_top <= 0:
        return torch.ones_like(final_logprobs, dtype=torch.bool)
    cutoff = final_logprobs.max(dim=-1, keepdim=True).values + math.log(relative_top)
    return final_logprobs >= cutoff


def contrast_logits(
    final_logits: torch.Tensor, intermediate_logits: torch.Tensor, *, alpha: float, relative_top: float
) -> torch.Tensor:
    """``(1 + alpha) * log_softmax(final) - alpha * log_softmax(intermediate)``; implausible tokens -inf."""
    import torch

    final = torch.log_softmax(final_logits.float(), dim=-1)
    intermediate = torch.log_softmax(intermediate_logits.float(), dim=-1)
    contrasted = (1.0 + alpha) * final - alpha * intermediate
    return contrasted.masked_fill(~relative_top_mask(final, relative_top), float("-inf"))


@dataclass
class Detection:
    """What the detect half of one DTC step found for each row of a batch."""

    #: Entropy in bits of each row's renormalised option probabilities (NaN: the row has no options).
    entropy: torch.Tensor
    #: Rows to calibrate.
    calibrated: torch.Tensor
    #: Each row's option probabilities under the final layer (None: no options).
    option_probs: list[list[float] | None] = field(default_factory=list)


@dataclass
class StepOutcome:
    """One whole DTC step: what :func:`detect` found, and the next-token scores decoding continues from."""

    scores: torch.Tensor
    entropy: torch.Tensor
    calibrated: torch.Tensor
    option_probs: list[list[float] | None]


def detect(
    final_logits: torch.Tensor,
    option_ids: Sequence[Sequence[Sequence[int]] | None],
    config: DTCConfig,
    eligible: torch.Tensor | None = None,
) -> Detection:
    """Which rows of a batch ``[B, V]`` are unsure of their answer: option entropy >= threshold.

    ``option_ids[b]`` holds, per option, the token ids of row b's options (None: the row has no options and is
    never calibrated); ``eligible`` (bool ``[B]``) can exclude rows, e.g. finished ones or later steps.
    """
    import torch

    rows = final_logits.shape[0]
    entropy = torch.full((rows,), float("nan"))
    probs: list[list[float] | None] = [None] * rows
    for row, ids in enumerate(option_ids):
        if ids:
            row_probs = option_probabilities(final_logits[row], ids)
            probs[row] = row_probs.tolist()
            entropy[row] = option_entropy(row_probs, normalize=config.normalize_entropy)
    calibrated = needs_calibration(entropy, config.threshold)
    if eligible is not None:
        calibrated &= eligible.to(calibrated.device)
    return Detection(entropy=entropy, calibrated=calibrated, option_probs=probs)


def calibrate(
    final_logits: torch.Tensor, intermediate_logits: torch.Tensor, rows: torch.Tensor, config: DTCConfig
) -> torch.Tensor:
    """Next-token scores: :func:`contrast_logits` for the ``rows`` (bool ``[B]``) to calibrate, the final
    logits unchanged for the others."""
    import torch

    if not bool(rows.any()):
        return final_logits
    contrasted = contrast_logits(
        final_logits,
        intermediate_logits.to(final_logits.device),
        alpha=config.alpha,
        relative_top=config.relative_top,
    )
    return torch.where(rows.to(final_logits.device)[:, None], contrasted, final_logits.float())


def calibrate_step(
    final_logits: torch.Tensor,
    intermediate_logits: torch.Tensor,
    option_ids: Sequence[Sequence[Sequence[int]] | None],
    config: DTCConfig,
    eligible: torch.Tensor | None = None,
) -> StepOutcome:
    """One greedy step of DTC over a batch ``[B, V]``: :func:`detect`, then :func:`calibrate`."""
    found = detect(final_logits, option_ids, config, eligible)
    scores = calibrate(final_logits, intermediate_logits, found.calibrated, config)
    return StepOutcome(scores, found.entropy, found.calibrated, found.option_probs)


def resolve_layer(layer: int, num_layers: int) -> int:
    """The ``hidden_states`` index of ``layer`` for a decoder of ``num_layers`` layers (below the last)."""
    resolved = layer if layer >= 0 else num_layers + 1 + layer
    if not 0 <= resolved < num_layers:
        raise ValueError(
            f"dtc layer {layer} is outside 0..{num_layers - 1} for a model with {num_layers} decoder layers "
            f"(the last layer, {num_layers}, is the one being calibrated)"
        )
    return resolved


# -- per-item records --


class DTCSummary(BaseModel):
    """How DTC acted over a set of answers."""

    items: int = 0
    #: Answers with at least one calibrated step.
    calibrated: int = 0
    #: Answers whose text differs from plain greedy decoding.
    changed: int = 0
    #: Answers to requests without answer options (decoded plainly).
    without_options: int = 0


def summarize(results: Iterable[GenerateResult | Failure | Mapping[str, Any] | None]) -> DTCSummary:
    """Count calibrated and changed answers from results or saved metadata (``{"dtc": {...}}``) alike."""
    summary = DTCSummary()
    for result in results:
        if result is None or isinstance(result, Failure):
            continue
        metadata = result.metadata if isinstance(result, GenerateResult) else result
        record = metadata.get("dtc")
        if not isinstance(record, Mapping):
            continue
        summary.items += 1
        summary.calibrated += bool(record.get("calibrated"))
        summary.changed += bool(record.get("changed"))
        summary.without_options += not record.get("options")
    return summary


class _Trace:
    """What happened to one row across the decoding steps."""

    def __init__(self, options: list[str] | None) -> None:
        self.options = options
        self.steps_calibrated: list[int] = []
        self.first_entropy: float | None = None
        self.first_option_probs: list[float] | None = None
        self.intermediate_option_probs: list[float] | None = None
        self.calibrated_option_probs: list[float] | None = None
        self.change: dict[str, Any] | None = None
        self.done = False


class _DTCHook:
    """The per-batch step hook: captures the intermediate layer with a forward hook, calibrates the scores."""

    def __init__(self, model: HFModel, requests: Sequence[GenerateRequest], config: DTCConfig) -> None:
        self.model = model
        self.config = config
        layers, _, _ = model.text_stack()
        self.layer = resolve_layer(config.layer, len(layers))
        self.options: list[list[str] | None] = [r.answer_options or config.options for r in requests]
        self.option_ids: list[list[list[int]] | None] = [
            list(model.option_token_ids(opts).values()) if opts else None for opts in self.options
        ]
        self.traces = [_Trace(opts) for opts in self.options]
        self.stop_ids = stop_token_ids(model.model.generation_config, model.tokenizer)
        self.step = 0
        self.captured: torch.Tensor | None = None
        if self.layer == 0:
            self._handle = layers[0].register_forward_pre_hook(self._capture_input, with_kwargs=True)
        else:
            self._handle = layers[self.layer - 1].register_forward_hook(self._capture_output)

    def _capture_input(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        self.captured = hidden[:, -1, :].detach()

    def _capture_output(self, module: Any, args: Any, output: Any) -> None:
        hidden = output[0] if isinstance(output, tuple) else output
        self.captured = hidden[:, -1, :].detach()

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        if self.captured is None:
            raise HFModelError(f"dtc: layer {self.layer} produced no hidden state")
        if self.step > 0:  # the token appended last step may have ended a row
            for row, token in enumerate(input_ids[:, -1].tolist()):
                if token in self.stop_ids:
                    self.traces[row].done = True
        eligible = torch.tensor(
            [not t.done and (self.config.steps == "all" or self.step == 0) for t in self.traces],
            dtype=torch.bool,
        )
        found = detect(scores, self.option_ids, self.config, eligible)
        intermediate = None
        if self.step == 0 or bool(found.calibrated.any()):  # the extra LM-head pass only when needed
            intermediate = self.model.logit_lens(self.captured, apply_norm=self.config.final_norm)
        calibrated_scores = (
            calibrate(scores, intermediate, found.calibrated, self.config)
            if intermediate is not None
            else scores
        )
        plain = scores.argmax(dim=-1).tolist()
        chosen = calibrated_scores.argmax(dim=-1).tolist()
        for row, trace in enumerate(self.traces):
            if trace.done:
                continue
            ids = self.option_ids[row]
            if self.step == 0:
                entropy = float(found.entropy[row])
                trace.first_entropy = None if math.isnan(entropy) else entropy
                trace.first_option_probs = found.option_probs[row]
                if ids and intermediate is not None:
                    trace.intermediate_option_probs = option_probabilities(intermediate[row], ids).tolist()
            if bool(found.calibrated[row]):
                trace.steps_calibrated.append(self.step)
                if self.step == 0 and ids:
                    trace.calibrated_option_probs = option_probabilities(calibrated_scores[row], ids).tolist()
                if trace.change is None and chosen[row] != plain[row]:
                    decode = self.model.tokenizer.decode
                    trace.change = {
                        "step": self.step,
                        "plain_token": decode([plain[row]]),
                        "calibrated_token": decode([chosen[row]]),
                        "plain_token_id": plain[row],
                        "calibrated_token_id": chosen[row],
                    }
        self.step += 1
        self.captured = None
        return calibrated_scores

    def item_metadata(self, row: int) -> dict[str, Any]:
        trace = self.traces[row]
        options = trace.options or []
        record: dict[str, Any] = {
            "options": options,
            "layer": self.layer,
            "calibrated": bool(trace.steps_calibrated),
            "steps_calibrated": trace.steps_calibrated,
            "changed": trace.change is not None,
            "first_change": trace.change,
            "entropy": trace.first_entropy,
        }
        for name, values in (
            ("option_probs", trace.first_option_probs),
            ("intermediate_option_probs", trace.intermediate_option_probs),
            ("calibrated_option_probs", trace.calibrated_option_probs),
        ):
            if values is not None:
                record[name] = dict(zip(options, values, strict=True))
        if trace.first_option_probs is not None:
            record["plain_option"] = _best(options, trace.first_option_probs)
            calibrated = trace.calibrated_option_probs or trace.first_option_probs
            record["calibrated_option"] = _best(options, calibrated)
        return {"dtc": record}

    def close(self) -> None:
        self._handle.remove()


def _best(options: Sequence[str], probs: Sequence[float]) -> str | None:
    """The most probable option, or None when no option has any probability (all masked out)."""
    if not options or max(probs) <= 0:
        return None
    return options[max(range(len(options)), key=lambda i: probs[i])]


# -- the wrapper --


class DTCModel(Model):
    """An ``hf`` model decoding with Detect-then-Calibrate; answers carry ``metadata["dtc"]``."""

    provider: ClassVar[str] = "dtc"

    def __init__(self, inner: HFModel, config: DTCConfig | None = None) -> None:
        if not isinstance(inner, HFModel):
            raise TypeError(f"dtc needs an hf model (it reads hidden states), got {type(inner).__name__}")
        self.inner = inner
        self.config = config or DTCConfig()
        layers, _, _ = inner.text_stack()
        self.layer = resolve_layer(self.config.layer, len(layers))
        self._batcher = Batcher(self._run_isolated, inner.batch_size, batch_key)
        self._summary = DTCSummary()

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "mitigation": "dtc", "dtc": self.config.model_dump(mode="json")}

    def summary(self) -> DTCSummary:
        """Counts over every answer this wrapper has returned (cached ones included)."""
        return self._summary.model_copy()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if request.temperature > 0:
            raise HFModelError(
                f"dtc decodes greedily, as in the paper; got temperature={request.temperature}"
                + (f" for sample {request.sample_id}" if request.sample_id else "")
            )
        result = await cached_generate(self.inner.cache, self.identity(), request, self._batcher.submit)
        counted = summarize([result])
        self._summary.items += counted.items
        self._summary.calibrated += counted.calibrated
        self._summary.changed += counted.changed
        self._summary.without_options += counted.without_options
        return result

    async def generate_many(
        self, requests: Sequence[GenerateRequest], concurrency: int = 4
    ) -> list[GenerateResult | Failure]:
        return await gather_failures(self.generate, requests)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def generate_batch(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """One batch, blocking (what the batcher runs in its worker thread)."""
        return self.inner.generate_batch(
            requests, step_hook=lambda model, batch: _DTCHook(model, batch, self.config)
        )

    def _run_isolated(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult | BaseException]:
        return run_isolated(self.generate_batch, requests)


def dtc(
    inner: Model,
    *,
    threshold: float = 0.9,
    alpha: float = 0.1,
    layer: int = -2,
    relative_top: float = 0.1,
    final_norm: bool = True,
    normalize_entropy: bool = False,
    steps: Literal["all", "first"] = "all",
    options: str | list[str] | None = None,
) -> DTCModel:
    """The mitigation factory: wrap an ``hf`` model in Detect-then-Calibrate.

    ``options`` (answers for requests that name none) may be a list or text separated by ``|``
    (``"yes|no"``), as written in a model spec, e.g.
    ``dtc[layer=38,final_norm=false,options=yes|no]:hf/llava-hf/llava-1.5-13b-hf``.
    """
    if isinstance(options, str):
        options = [part.strip() for part in options.split("|") if part.strip()]
    config = DTCConfig(
        threshold=threshold,
        alpha=alpha,
        layer=layer,
        relative_top=relative_top,
        final_norm=final_norm,
        normalize_entropy=normalize_entropy,
        steps=steps,
        options=options or None,
    )
    if not isinstance(inner, HFModel):
        raise TypeError(
            f"dtc needs an hf model, since it reads the model's hidden layers; got {type(inner).__name__} "
            "(write the model as dtc:hf/<repo or path>)"
        )
    return DTCModel(inner, config)


__all__ = [
    "DTCConfig",
    "DTCModel",
    "DTCSummary",
    "Detection",
    "StepOutcome",
    "calibrate",
    "calibrate_step",
    "contrast_logits",
    "detect",
    "dtc",
    "needs_calibration",
    "option_entropy",
    "relative_top_mask",
    "resolve_layer",
    "summarize",
]
