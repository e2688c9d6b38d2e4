"""The ``hf`` backend: local transformers vision-language models (``hf/<hub repo id or local path>``).

Any image-text-to-text model that transformers loads with ``AutoProcessor`` and
``AutoModelForImageTextToText`` works the same way: the request's turns are rendered with the model's own chat
template (``processor.apply_chat_template``), its images go through the model's own image processor, and
generation is batched with left padding so that the last prompt position lines up across a batch. Tested
families: LLaVA-1.5, LLaVA-NeXT and Qwen2-VL.

Beyond text, a request can ask for what hallucination analysis needs and APIs rarely give:

* ``answer_options`` (``["yes", "no"]``, ``["A", "B", "C", "D"]``): the probability of each option at the
  answering step (the first generated token), read from the model's full-vocabulary softmax. Each option's
  token ids come from the tokenizer, never from a table: the first token of the option as written, in lower
  case and capitalised, with and without a leading space, summed (see :func:`answer_token_ids`).
* ``top_logprobs``: per generated token, its log-probability and the ``k`` most likely alternatives under the
  model's own distribution (raw logits, before any sampling adjustments).
* With the model option ``hidden_states=True``: a per-layer summary of the hidden states at the answering
  step in ``metadata["layers"]`` (norm, the token each layer would predict through the LM head, and the
  options' probabilities per layer), the "logit lens" view Reefknot uses to show where relation
  hallucinations appear. :meth:`HFModel.hidden_states` returns the raw vectors.

Concurrent ``generate`` calls are collected into batches of ``batch_size`` and run one batch at a time in a
worker thread, so the event loop stays free and a GPU is never shared by two forward passes. Greedy decoding
of a batch gives the same text as one request at a time; sampled decoding is seeded per batch
(requests with different seeds never share a batch), so a sampled answer depends on its batch-mates.

torch and transformers are imported only when a model is created.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from halluscope.cache import Cache, content_key
from halluscope.models.base import GenerateRequest, GenerateResult, Model, TokenStep
from halluscope.stages import Failure

if TYPE_CHECKING:
    import torch
    from PIL.Image import Image

#: Cache namespace of answers from local transformers models.
CACHE_NAMESPACE = "hf-generate"

#: Options ``HFModel.from_spec`` accepts, with what each does (for listings and docs).
OPTIONS: dict[str, str] = {
    "cache": "a halluscope Cache for answers (None: no caching)",
    "device": "torch device, e.g. 'cuda', 'cuda:1', 'cpu' (default: cuda when available, else cpu)",
    "dtype": "'auto' (bfloat16/float16 on GPU, float32 on CPU), 'float32', 'float16' or 'bfloat16'",
    "batch_size": "how many requests one forward pass takes (default 8)",
    "hidden_states": "summarise every layer's hidden state at the answering step into metadata (default off)",
    "revision": "hub revision (branch, tag or commit) to load",
    "trust_remote_code": "allow model code from the hub repository (default off)",
    "chat_template": "a Jinja chat template to use instead of the model's own",
    "processor": "an already built processor object, for models whose processor cannot be loaded as saved",
}

_DTYPES = {"float32", "float16", "bfloat16", "auto"}


class HFModelError(RuntimeError):
    """A model, processor or request the backend cannot work with; the message says which and why."""


# -- answer options --


def answer_token_ids(tokenizer: Any, options: Sequence[str]) -> dict[str, list[int]]:
    """Token ids that start each answer option, derived from the tokenizer.

    For every option the candidates are its spelling as given, lower case and capitalised (and upper case when
    that is a single token), each with and without a leading space. From each candidate's encoding the first
    token that is not pure whitespace is kept (SentencePiece tokenizers encode " yes" as a bare "▁" then
    "yes"), if it actually spells the beginning of the option. The distinct ids are summed as the option's
    probability. An id claimed by two options makes their probabilities ambiguous, so it is an error.
    """
    if not options:
        raise HFModelError("answer options are empty")
    ids_by_option: dict[str, list[int]] = {}
    owner: dict[int, str] = {}
    for option in options:
        word = option.strip()
        if not word:
            raise HFModelError(f"answer option {option!r} is blank")
        spellings = list(dict.fromkeys([word, word.lower(), word[:1].upper() + word[1:].lower()]))
        ids: list[int] = []
        for spelling in spellings:
            for text in (spelling, " " + spelling):
                token = _first_content_token(tokenizer, text)
                if token is not None and _spells_start_of(tokenizer, token, word):
                    ids.append(token)
        upper = word.upper()
        for text in (upper, " " + upper):
            pieces = _content_tokens(tokenizer, text)
            if len(pieces) == 1 and _spells_start_of(tokenizer, pieces[0], word):
                ids.append(pieces[0])
        unique = list(dict.fromkeys(ids))
        if not unique:
            raise HFModelError(f"the tokenizer has no token that starts answer option {option!r}")
        for token in unique:
            if token in owner and owner[token] != option:
                raise HFModelError(
                    f"answer options {owner[token]!r} and {option!r} start with the same token "
                    f"{tokenizer.decode([token])!r}; their probabilities cannot be told apart"
                )
            owner[token] = option
        ids_by_option[option] = unique
    return ids_by_option


def _content_tokens(tokenizer: Any, text: str) -> list[int]:
    pieces: list[int] = tokenizer.encode(text, add_special_tokens=False)
    start = 0
    while start < len(pieces) and not tokenizer.decode([pieces[start]]).strip():
        start += 1
    return pieces[start:]


def _first_content_token(tokenizer: Any, text: str) -> int | None:
    pieces = _content_tokens(tokenizer, text)
    return pieces[0] if pieces else None


def _spells_start_of(tokenizer: Any, token: int, word: str) -> bool:
    piece = tokenizer.decode([token]).strip().lower()
    return bool(piece) and word.lower().startswith(piece)


def option_probabilities(logits: torch.Tensor, ids_by_option: Sequence[Sequence[int]]) -> torch.Tensor:
    """Each option's probability (summed over its token ids) under the softmax of ``logits`` (``[..., V]``).

    Returns ``[..., k]`` in the order of ``ids_by_option``; not renormalised over the options.
    """
    import torch

    probs = torch.softmax(logits.float(), dim=-1)
    columns = [probs[..., list(ids)].sum(dim=-1) for ids in ids_by_option]
    return torch.stack(columns, dim=-1)


# -- the model --


class StepHook(Protocol):
    """Sees, and may replace, the next-token scores at every decoding step of one batch (``dtc`` uses this).

    It is called like a transformers ``LogitsProcessor`` (after any the model's generation config adds) and is
    closed when the batch ends, also on failure, so it can remove the forward hooks it registered.
    """

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor: ...

    def item_metadata(self, row: int) -> dict[str, Any]: ...

    def close(self) -> None: ...


#: Builds a step hook for one batch: gets the model and the batch's requests, in row order.
StepHookFactory = Callable[["HFModel", Sequence[GenerateRequest]], StepHook]


@dataclass
class _Prepared:
    request: GenerateRequest
    text: str
    images: list[Image]


@dataclass
class _Pending:
    request: GenerateRequest
    future: asyncio.Future[GenerateResult]


class HFModel(Model):
    """A transformers vision-language model answering :class:`GenerateRequest` s locally."""

    provider: ClassVar[str] = "hf"

    def __init__(
        self,
        name: str,
        model: Any,
        processor: Any,
        *,
        device: str,
        dtype: str,
        batch_size: int = 8,
        cache: Cache | None = None,
        hidden_states: bool = False,
        revision: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise HFModelError(f"batch_size must be at least 1, got {batch_size}")
        self.name = name
        self.model = model
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.cache = cache
        self.record_hidden_states = hidden_states
        self.revision = revision
        self._lock = threading.Lock()  # one forward pass at a time, whoever asks
        self._batcher = Batcher(self._run_isolated, batch_size, batch_key)
        self._option_ids: dict[tuple[str, ...], dict[str, list[int]]] = {}
        self._stack: tuple[Sequence[Any], Any | None, Any] | None = None
        self._prepare_tokenizer()

    # -- construction ------------------------------------------------------------------------------------

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        cache: Cache | None = None,
        device: str | None = None,
        dtype: str = "auto",
        batch_size: int = 8,
        hidden_states: bool = False,
        revision: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        processor: Any = None,
    ) -> HFModel:
        """Load ``spec`` (a hub repo id or a local directory); the options are described in :data:`OPTIONS`.

        Options are keyword-only and explicit, so that a misspelt one fails at once (and ``halluscope models``
        can list them).
        """
        if not spec or not spec.strip():
            raise HFModelError("hf needs a model: hf/<hub repo id or local path>")
        if dtype not in _DTYPES:
            raise HFModelError(
                f"unknown dtype {dtype!r} for hf/{spec}; choose one of: {', '.join(sorted(_DTYPES))}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise HFModelError(f"batch_size for hf/{spec} must be a whole number >= 1, got {batch_size!r}")

        import torch
        import transformers

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = _resolve_dtype(dtype, device)
        load_kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if revision:
            load_kwargs["revision"] = revision
        source = str(Path(spec).expanduser()) if Path(spec).expanduser().exists() else spec

        if processor is None:
            try:
                processor = transformers.AutoProcessor.from_pretrained(source, **load_kwargs)
            except Exception as error:
                hint = ""
                if importlib.util.find_spec("torchvision") is None:
                    hint = (
                        " (transformers builds the processors of video-capable models such as Qwen2-VL "
                        "with a video processor that needs torchvision: install the torchvision matching "
                        "your torch, or pass an image-only processor with the processor option)"
                    )
                raise HFModelError(f"cannot load the processor of hf/{spec}: {error}{hint}") from error
        if chat_template:
            processor.chat_template = chat_template
        model = _load_model(transformers, source, spec, load_kwargs, torch_dtype)
        model.to(device)
        model.eval()
        return cls(
            spec,
            model,
            processor,
            device=device,
            dtype=str(torch_dtype).removeprefix("torch."),
            batch_size=batch_size,
            cache=cache,
            hidden_states=hidden_states,
            revision=revision,
        )

    def _prepare_tokenizer(self) -> None:
        tokenizer = self.tokenizer
        tokenizer.padding_side = "left"  # the last prompt position must be the last column for every row
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token is None:
                raise HFModelError(f"the tokenizer of hf/{self.name} has neither a pad nor an eos token")
            tokenizer.pad_token = tokenizer.eos_token
        if getattr(self.model.generation_config, "pad_token_id", None) is None:
            self.model.generation_config.pad_token_id = tokenizer.pad_token_id

    def sees_images(self) -> bool:
        return True

    def identity(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.name,
            "revision": self.revision,
            "commit": getattr(self.model.config, "_commit_hash", None),
            "dtype": self.dtype,
            "hidden_states": self.record_hidden_states,
        }

    # -- the async interface -----------------------------------------------------------------------------

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return await cached_generate(self.cache, self.identity(), request, self._batcher.submit)

    async def generate_many(
        self, requests: Sequence[GenerateRequest], concurrency: int = 4
    ) -> list[GenerateResult | Failure]:
        """All requests at once: the batcher, not a semaphore, bounds the work (``concurrency`` is unused)."""
        return await gather_failures(self.generate, requests)

    async def aclose(self) -> None:
        self.model = None
        import gc

        gc.collect()

    # -- synchronous work (runs in a worker thread) ---------------------------------------------------------

    def option_token_ids(self, options: Sequence[str]) -> dict[str, list[int]]:
        """:func:`answer_token_ids` for this model's tokenizer, memoised per option list."""
        key = tuple(options)
        if key not in self._option_ids:
            self._option_ids[key] = answer_token_ids(self.tokenizer, options)
        return self._option_ids[key]

    def text_stack(self) -> tuple[Sequence[Any], Any | None, Any]:
        """The language model's decoder layers, its final norm (None if it has none) and the LM head."""
        if self._stack is None:
            self._stack = _find_text_stack(self.model, self.name)
        return self._stack

    def logit_lens(self, hidden: torch.Tensor, *, apply_norm: bool = True) -> torch.Tensor:
        """Next-token logits a hidden state (``[..., H]``) gives through the LM head, after the final norm
        unless ``apply_norm`` is off (Reefknot's official code skips it)."""
        _, norm, head = self.text_stack()
        if apply_norm and norm is not None:
            hidden = norm(hidden)
        return head(hidden).float()

    def hidden_states(self, request: GenerateRequest) -> torch.Tensor:
        """The hidden state of the answering position (the prompt's last) in every layer: ``[layers + 1, H]``.

        Row 0 is the input embedding and row ``i`` the output of decoder layer ``i``; the last row has the
        final norm applied (transformers' convention), the others do not.
        """
        import torch

        prepared = self._prepare(request)
        with self._lock, torch.inference_mode():
            inputs = self._encode([prepared])
            outputs = self.model(**inputs, output_hidden_states=True, use_cache=False)
        return torch.stack([layer[0, -1, :].float().cpu() for layer in outputs.hidden_states])

    def generate_batch(
        self, requests: Sequence[GenerateRequest], step_hook: StepHookFactory | None = None
    ) -> list[GenerateResult]:
        """Answer one batch of requests that share temperature, seed and max_tokens (blocking)."""
        if not requests:
            return []
        keys = {batch_key(r) for r in requests}
        if len(keys) > 1:
            raise HFModelError("one batch must share temperature, seed and max_tokens")
        prepared = [self._prepare(r) for r in requests]
        import torch

        first = requests[0]
        sampling = first.temperature > 0
        with self._lock, torch.inference_mode():
            inputs = self._encode(prepared)
            hook = step_hook(self, requests) if step_hook is not None else None
            try:
                kwargs: dict[str, Any] = {
                    "max_new_tokens": first.max_tokens,
                    "do_sample": sampling,
                    "return_dict_in_generate": True,
                    # raw logits of every step: for option probabilities and log-probs only
                    "output_logits": any(r.answer_options or r.top_logprobs is not None for r in requests),
                    "output_hidden_states": self.record_hidden_states,
                }
                if sampling:  # plain temperature sampling over the whole vocabulary
                    kwargs.update(temperature=first.temperature, top_k=0, top_p=1.0)
                    if first.seed is not None:
                        torch.manual_seed(first.seed)
                        if torch.cuda.is_available():
                            torch.cuda.manual_seed_all(first.seed)
                else:
                    kwargs.update(temperature=None, top_p=None, top_k=None)
                if hook is not None:
                    from transformers import LogitsProcessorList

                    kwargs["logits_processor"] = LogitsProcessorList([_as_logits_processor(hook)])
                started = time.perf_counter()
                output = self.model.generate(**inputs, **kwargs)
                latency = time.perf_counter() - started
                return self._results(prepared, inputs, output, latency, hook)
            finally:
                if hook is not None:
                    hook.close()

    def _run_isolated(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult | BaseException]:
        return run_isolated(self.generate_batch, requests)

    def _prepare(self, request: GenerateRequest) -> _Prepared:
        if not request.messages:
            raise HFModelError(f"{_who(request.sample_id)}the request has no messages")
        turns: list[dict[str, Any]] = []
        images: list[Image] = []
        for turn in request.messages:
            content: list[dict[str, Any]] = [{"type": "image"} for _ in turn.images]
            content.append({"type": "text", "text": turn.text})
            images.extend(_load_image(path, request.sample_id) for path in turn.images)
            turns.append({"role": turn.role, "content": content})
        if getattr(self.processor, "chat_template", None) is None:
            raise HFModelError(f"hf/{self.name} has no chat template; pass one with the chat_template option")
        text = self.processor.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)
        if isinstance(text, list):
            text = text[0]
        return _Prepared(request, text, images)

    def _encode(self, prepared: Sequence[_Prepared]) -> Any:
        import torch

        texts = [p.text for p in prepared]
        images = [image for p in prepared for image in p.images]
        bos = getattr(self.tokenizer, "bos_token", None)
        # A template that writes the BOS token itself must not get a second one from the tokenizer.
        add_special = not (bos and all(t.startswith(bos) for t in texts))
        inputs = self.processor(
            text=texts,
            images=images or None,
            padding=True,
            return_tensors="pt",
            add_special_tokens=add_special,
        )
        inputs = inputs.to(self.device)
        model_dtype = next(self.model.parameters()).dtype
        for key, value in list(inputs.items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                inputs[key] = value.to(model_dtype)
        return inputs

    def _results(
        self,
        prepared: Sequence[_Prepared],
        inputs: Any,
        output: Any,
        latency: float,
        hook: StepHook | None,
    ) -> list[GenerateResult]:
        import torch

        prompt_length = inputs["input_ids"].shape[1]
        generated = output.sequences[:, prompt_length:].cpu()
        logits = output.logits  # per step [B, V]: the model's raw logits (None unless asked for)
        stop_ids = stop_token_ids(self.model.generation_config, self.tokenizer)
        results: list[GenerateResult] = []
        for row, item in enumerate(prepared):
            request = item.request
            tokens = generated[row].tolist()
            length = len(tokens)
            finish = "length"
            for position, token in enumerate(tokens):
                if token in stop_ids:
                    length, finish = position + 1, "stop"
                    break
            tokens = tokens[:length]
            text = self.tokenizer.decode(tokens, skip_special_tokens=True).strip()
            metadata: dict[str, Any] = {"finish_reason": finish, "batch_size": len(prepared)}
            option_probs = None
            if request.answer_options:
                ids = self.option_token_ids(request.answer_options)
                values = option_probabilities(logits[0][row], list(ids.values())).tolist()
                option_probs = dict(zip(ids, values, strict=True))
            steps = None
            if request.top_logprobs is not None:
                row_logits = torch.stack([step[row] for step in logits[:length]])
                steps = self._token_steps(row_logits, tokens, request.top_logprobs)
            if self.record_hidden_states and output.hidden_states:
                metadata["layers"] = self._layer_summary(output.hidden_states[0], row, request)
            if hook is not None:
                metadata.update(hook.item_metadata(row))
            results.append(
                GenerateResult(
                    text=text,
                    logprobs=steps,
                    option_probs=option_probs,
                    usage={
                        "prompt_tokens": int(inputs["attention_mask"][row].sum().item()),
                        "completion_tokens": length,
                    },
                    latency_s=latency,
                    metadata=metadata,
                )
            )
        return results

    def _token_steps(self, logits: torch.Tensor, tokens: Sequence[int], k: int) -> list[TokenStep]:
        import torch

        logprobs = torch.log_softmax(logits.float(), dim=-1)
        k = max(0, min(k, logprobs.shape[-1]))
        steps: list[TokenStep] = []
        for step, token in enumerate(tokens):
            top: dict[str, float] = {}
            if k:
                values, ids = torch.topk(logprobs[step], k)
                for value, alternative in zip(values.tolist(), ids.tolist(), strict=True):
                    top.setdefault(self.tokenizer.decode([alternative]), value)
            steps.append(
                TokenStep(token=self.tokenizer.decode([token]), logprob=float(logprobs[step, token]), top=top)
            )
        return steps

    def _layer_summary(
        self, hidden_states: Sequence[torch.Tensor], row: int, request: GenerateRequest
    ) -> list[dict[str, Any]]:
        """Per layer, at the answering position: norm, the token the LM head reads from it, option probs."""
        last = len(hidden_states) - 1
        ids = self.option_token_ids(request.answer_options) if request.answer_options else None
        summary: list[dict[str, Any]] = []
        for index, layer in enumerate(hidden_states):
            hidden = layer[row, -1, :]
            logits = self.logit_lens(hidden, apply_norm=index != last)
            entry: dict[str, Any] = {
                "layer": index,
                "norm": float(hidden.float().norm().item()),
                "top_token": self.tokenizer.decode([int(logits.argmax().item())]),
            }
            if ids is not None:
                values = option_probabilities(logits, list(ids.values())).tolist()
                entry["option_probs"] = dict(zip(ids, values, strict=True))
            summary.append(entry)
        return summary


# -- helpers shared with wrappers (dtc) --


def batch_key(request: GenerateRequest) -> Hashable:
    """Requests that may share one ``generate`` call: same decoding settings (seed only when sampling)."""
    sampling = request.temperature > 0
    return (request.temperature, request.seed if sampling else None, request.max_tokens)


def request_fingerprint(request: GenerateRequest) -> dict[str, Any]:
    """What determines an answer: the request without its id, metadata and scene, images by content."""
    data = request.model_dump(mode="json", exclude={"sample_id", "metadata", "scene"})
    for turn in data["messages"]:
        turn["images"] = [_file_digest(path, request.sample_id) for path in turn["images"]]
    return data


async def cached_generate(
    cache: Cache | None,
    identity: Mapping[str, Any],
    request: GenerateRequest,
    compute: Callable[[GenerateRequest], Any],
) -> GenerateResult:
    """Answer from the cache when this exact question was answered before; else compute and store.

    Unseeded sampling is never cached: asking again must give a fresh sample.
    """
    cacheable = cache is not None and (request.temperature == 0 or request.seed is not None)
    key = ""
    if cacheable and cache is not None:
        key = content_key(dict(identity), request_fingerprint(request))
        hit = cache.get(CACHE_NAMESPACE, key)
        if hit is not None:
            return GenerateResult.model_validate({**hit, "cached": True})
    result: GenerateResult = await compute(request)
    if cacheable and cache is not None:
        cache.put(CACHE_NAMESPACE, key, result.model_dump(mode="json", exclude={"cached"}))
    return result


async def gather_failures(
    generate: Callable[[GenerateRequest], Any], requests: Sequence[GenerateRequest]
) -> list[GenerateResult | Failure]:
    async def one(request: GenerateRequest) -> GenerateResult | Failure:
        try:
            result: GenerateResult = await generate(request)
            return result
        except Exception as error:  # one bad item must not stop the batch
            name = f" ({request.sample_id})" if request.sample_id else ""
            return Failure(f"{type(error).__name__}{name}: {error}")

    return list(await asyncio.gather(*(one(r) for r in requests)))


class Batcher:
    """Collects concurrent requests into batches and runs them, one batch at a time, in a worker thread."""

    def __init__(
        self,
        run: Callable[[Sequence[GenerateRequest]], list[GenerateResult | BaseException]],
        batch_size: int,
        key: Callable[[GenerateRequest], Hashable],
    ) -> None:
        self._run = run
        self._batch_size = batch_size
        self._key = key
        self._pending: list[_Pending] = []
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, request: GenerateRequest) -> GenerateResult:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[GenerateResult] = loop.create_future()
        self._pending.append(_Pending(request, future))
        if self._worker is None or self._worker.done() or self._worker.get_loop() is not loop:
            self._worker = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let callers started in the same tick join the first batch
        while self._pending:
            key = self._key(self._pending[0].request)
            batch = [p for p in self._pending if self._key(p.request) == key][: self._batch_size]
            taken = {id(p) for p in batch}
            self._pending = [p for p in self._pending if id(p) not in taken]
            try:
                outcomes = await asyncio.to_thread(self._run, [p.request for p in batch])
            except BaseException as error:  # the worker must settle every future it took
                outcomes = [error] * len(batch)
            for pending, outcome in zip(batch, outcomes, strict=True):
                if pending.future.done():
                    continue
                if isinstance(outcome, BaseException):
                    pending.future.set_exception(outcome)
                else:
                    pending.future.set_result(outcome)


def run_isolated(
    generate_batch: Callable[[Sequence[GenerateRequest]], list[GenerateResult]],
    requests: Sequence[GenerateRequest],
) -> list[GenerateResult | BaseException]:
    """Run a batch; when it fails, run each request alone so that only the bad ones fail."""
    try:
        return list(generate_batch(requests))
    except Exception as error:
        if len(requests) == 1:
            return [error]
    outcomes: list[GenerateResult | BaseException] = []
    for request in requests:
        try:
            outcomes.extend(generate_batch([request]))
        except Exception as error:
            outcomes.append(error)
    return outcomes


def _as_logits_processor(hook: StepHook) -> Any:
    from transformers import LogitsProcessor

    class _HookProcessor(LogitsProcessor):
        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            return hook(input_ids, scores)

    return _HookProcessor()


def _find_text_stack(model: Any, name: str) -> tuple[Sequence[Any], Any | None, Any]:
    """Decoder layers, final norm and LM head of a VLM's language model, whichever way it nests them."""
    head = model.get_output_embeddings()
    candidates = []
    if hasattr(model, "get_decoder"):
        candidates.append(model.get_decoder())
    candidates.append(getattr(model, "language_model", None))
    for candidate in candidates:
        # older layouts nest a *ForCausalLM whose ``.model`` holds the layers
        decoder = candidate if hasattr(candidate, "layers") else getattr(candidate, "model", None)
        if decoder is not None and hasattr(decoder, "layers") and head is not None:
            norm = next(
                (getattr(decoder, n) for n in ("norm", "final_layernorm", "ln_f") if hasattr(decoder, n)),
                None,
            )
            return decoder.layers, norm, head
    raise HFModelError(f"cannot find the decoder layers and LM head of hf/{name}")


def stop_token_ids(generation_config: Any, tokenizer: Any) -> set[int]:
    """Token ids that end an answer: the generation config's eos ids, else the tokenizer's eos."""
    eos = getattr(generation_config, "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    return {int(i) for i in ids}


def _resolve_dtype(dtype: str, device: str) -> torch.dtype:
    import torch

    if dtype == "auto":
        if device.startswith("cuda") and torch.cuda.is_available():
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    resolved: torch.dtype = getattr(torch, dtype)
    return resolved


def _load_model(transformers: Any, source: str, spec: str, load_kwargs: dict[str, Any], dtype: Any) -> Any:
    classes = [
        getattr(transformers, name)
        for name in ("AutoModelForImageTextToText", "AutoModelForVision2Seq")
        if hasattr(transformers, name)
    ]
    errors: list[str] = []
    for auto_class in classes:
        try:
            return auto_class.from_pretrained(source, dtype=dtype, **load_kwargs)
        except ValueError as error:  # this auto class does not know the architecture; try the next one
            errors.append(f"{auto_class.__name__}: {error}")
        except Exception as error:
            raise HFModelError(f"cannot load hf/{spec}: {error}") from error
    raise HFModelError(f"cannot load hf/{spec} as an image-text-to-text model: {' | '.join(errors)}")


def _file_digest(path: str, sample_id: str | None) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as error:
        raise HFModelError(
            f"{_who(sample_id)}cannot read image {path!r}: {error.strerror or error}"
        ) from error


def _load_image(path: str, sample_id: str | None) -> Image:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with PILImage.open(path) as opened:
            return opened.convert("RGB")
    except FileNotFoundError as error:
        raise HFModelError(f"{_who(sample_id)}image not found: {path!r}") from error
    except (UnidentifiedImageError, OSError) as error:
        raise HFModelError(f"{_who(sample_id)}cannot decode image {path!r}: {error}") from error


def _who(sample_id: str | None) -> str:
    return f"sample {sample_id}: " if sample_id else ""


__all__ = [
    "CACHE_NAMESPACE",
    "OPTIONS",
    "HFModel",
    "HFModelError",
    "StepHook",
    "StepHookFactory",
    "answer_token_ids",
    "option_probabilities",
    "request_fingerprint",
]
