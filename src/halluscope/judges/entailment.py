"""Bidirectional entailment: do two short statements say the same thing?

Reefknot scores its open (VQA) answers this way, after Kuhn, Gal and Farquhar's semantic-equivalence test:
the answer is right only when the label entails the answer *and* the answer entails the label, so that
neither a vaguer answer ("the bag is near the ground" for "on") nor a longer one that adds claims passes.

Two judges implement the same interface:

- :class:`NLIEntailment`: a transformers sequence-classification NLI model, by hub name
  (default ``microsoft/deberta-large-mnli``, the model the paper used) or by local path. The class that
  means "entailment" is read from the model's ``label2id`` (fallback: index 2, MNLI's order); the
  ``paper`` flag forces index 2, as the official script does, whatever the model's labels.
- :class:`LLMEntailment`: an LLM over any OpenAI-compatible endpoint, asked one direction at a time.

:class:`FunctionEntailment` wraps a plain function, for tests and for timing runs with the judge stubbed out.
Every judge returns, per pair, ``True``, ``False`` or a :class:`~halluscope.stages.Failure` — an entailment
that could not be decided is never guessed.

They are the judges of benchmarks that score by entailment (Reefknot's VQA task): registered in
:data:`halluscope.judges.ENTAILMENT_JUDGES` and chosen through the same judge slot as every other judge
(``halluscope run -b reefknot --judge nli|llm --judge-model NAME``), so ``spec.json``'s ``judge`` names the
one that ran. An entailment judge cannot judge claims against a scene graph, and says so.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from halluscope.cache import Cache, content_key
from halluscope.jsonio import loads_json
from halluscope.llm.replies import unreadable_reply
from halluscope.options import check_options
from halluscope.stages import Failure, Judge, JudgeItem
from halluscope.types import Verdict as ClaimVerdict

__all__ = [
    "DEFAULT_NLI_MODEL",
    "MNLI_ENTAILMENT_INDEX",
    "Entailment",
    "EntailmentModelError",
    "FunctionEntailment",
    "LLMEntailment",
    "NLIEntailment",
    "combine_directions",
    "make_entailment",
]

DEFAULT_NLI_MODEL = "microsoft/deberta-large-mnli"
#: MNLI label order (contradiction, neutral, entailment): the index the official Reefknot script compares to.
MNLI_ENTAILMENT_INDEX = 2

Verdict = bool | Failure


class EntailmentModelError(RuntimeError):
    """The NLI model cannot be loaded (unknown name, hub unreachable, not a sequence classifier)."""


def combine_directions(forward: Verdict, backward: Verdict) -> Verdict:
    """Both directions must hold. A known "no" in either direction decides, even if the other failed."""
    if forward is False or backward is False:
        return False
    if isinstance(forward, Failure):
        return forward
    if isinstance(backward, Failure):
        return backward
    return True


class Entailment(Judge, ABC):
    """Decides, for (premise, hypothesis) pairs, whether the premise entails the hypothesis.

    A :class:`~halluscope.stages.Judge`, so that it fills a run's judge slot; the benchmarks that take it
    (``judge_kind = "entailment"``) call :meth:`bidirectional_many`, never :meth:`judge_many`.
    """

    name: ClassVar[str]

    def identity(self) -> dict[str, Any]:
        """What determines the verdicts; goes into ``spec.json`` and cache keys."""
        return {"judge": self.name, "entailment": True}

    async def judge_many(self, items: Sequence[JudgeItem]) -> list[list[ClaimVerdict] | Failure]:
        reason = (
            f"the entailment judge {self.name!r} compares two statements; it cannot judge claims against a "
            "scene graph (choose a claim judge: similarity, typed or llm)"
        )
        return [Failure(reason) for _ in items]

    @abstractmethod
    async def entails_many(self, pairs: Sequence[tuple[str, str]], *, paper: bool = False) -> list[Verdict]:
        """One verdict per (premise, hypothesis) pair, in order. ``paper`` asks for the official rule."""

    async def bidirectional_many(
        self, pairs: Sequence[tuple[str, str]], *, paper: bool = False
    ) -> list[Verdict]:
        """For each (a, b): a entails b and b entails a (both directions judged in one batch)."""
        pairs = list(pairs)
        both = await self.entails_many(pairs + [(b, a) for a, b in pairs], paper=paper)
        n = len(pairs)
        return [combine_directions(both[i], both[n + i]) for i in range(n)]

    async def aclose(self) -> None:
        """Release models or clients."""


class FunctionEntailment(Entailment):
    """Entailment decided by a plain function ``(premise, hypothesis) -> bool | None`` (None: undecided)."""

    name: ClassVar[str] = "function"

    def __init__(self, fn: Callable[[str, str], bool | None], label: str = "scripted") -> None:
        self.fn = fn
        self.label = label
        self.calls = 0

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "entailment": True, "function": self.label}

    async def entails_many(self, pairs: Sequence[tuple[str, str]], *, paper: bool = False) -> list[Verdict]:
        out: list[Verdict] = []
        for premise, hypothesis in pairs:
            self.calls += 1
            try:
                value = self.fn(premise, hypothesis)
            except Exception as error:  # one bad pair must not stop the batch
                out.append(Failure(f"entailment function failed: {type(error).__name__}: {error}"))
                continue
            out.append(Failure("entailment function gave no verdict") if value is None else bool(value))
        return out


# -- NLI model -----------------------------------------------------------------------------------------------


def _entailment_index_from_config(config: Any) -> int | None:
    """The class id whose label is "entailment" in a transformers config, if the config names one."""
    label2id = getattr(config, "label2id", None) or {}
    for label, index in label2id.items():
        if str(label).strip().lower().startswith("entail"):
            return int(index)
    id2label = getattr(config, "id2label", None) or {}
    for index, label in id2label.items():
        if str(label).strip().lower().startswith("entail"):
            return int(index)
    return None


class NLIEntailment(Entailment):
    """A sequence-classification NLI model (premise, hypothesis) → argmax class, compared with "entailment".

    The model loads on first use, in a worker thread; predictions are cached by content (model, premise,
    hypothesis → predicted class id), so re-scoring a run never runs the model twice on the same pair and the
    ``paper`` and robust rules share one prediction.
    """

    name: ClassVar[str] = "nli"
    CACHE_NAMESPACE: ClassVar[str] = "nli-class"

    def __init__(
        self,
        model: str | Path = DEFAULT_NLI_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 16,
        max_length: int = 256,
        entailment_index: int | None = None,
        cache: Cache | None = None,
    ) -> None:
        self.model_name = str(model)
        self.device = device
        self.batch_size = max(1, batch_size)
        self.max_length = max_length
        self._explicit_index = entailment_index
        self.cache = cache
        self._model: Any = None
        self._tokenizer: Any = None
        self._index: int | None = None
        self._device = "cpu"
        self._lock = threading.Lock()  # one model, one batch at a time (worker threads)

    @classmethod
    def from_options(
        cls,
        *,
        model: str | Path | None = None,
        device: str | None = None,
        batch_size: int = 16,
        max_length: int = 256,
        entailment_index: int | None = None,
        cache: Cache | None = None,
        **unknown: Any,
    ) -> NLIEntailment:
        """Registry factory (``--judge nli --judge-model NAME --judge-opt device=cuda``)."""
        check_options("judge 'nli'", unknown, ("model", "device", "batch_size", "max_length", "entailment_index"))
        return cls(
            model or DEFAULT_NLI_MODEL,
            device=device,
            batch_size=int(batch_size),
            max_length=int(max_length),
            entailment_index=None if entailment_index is None else int(entailment_index),
            cache=cache,
        )

    def identity(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            "entailment": True,
            "model": self.model_name,
            "entailment_index": self._explicit_index,
        }

    def _cannot_load(self, error: Exception) -> EntailmentModelError:
        return EntailmentModelError(
            f"cannot load the NLI model {self.model_name!r}: {error}. Give a local folder with "
            "--judge-model PATH, or use the LLM judge (--judge llm --judge-model NAME --base-url URL)."
        )

    @property
    def entailment_index(self) -> int:
        """The class id read as "entailment" in robust mode: explicit, else the config's label2id, else 2.

        Reads only the model's config (not its weights), so fully cached re-scoring stays cheap.
        """
        if self._index is None:
            try:
                from transformers import AutoConfig
            except ImportError as error:  # pragma: no cover - depends on the install
                raise EntailmentModelError(
                    "the NLI entailment judge needs torch and transformers: pip install 'halluscope[nlp]'"
                ) from error
            try:
                config = AutoConfig.from_pretrained(self.model_name)
            except (OSError, ValueError) as error:
                raise self._cannot_load(error) from error
            index = self._explicit_index
            if index is None:
                index = _entailment_index_from_config(config)
            if index is None:
                index = MNLI_ENTAILMENT_INDEX
            num_labels = int(getattr(config, "num_labels", 0) or 0)
            if num_labels and not 0 <= index < num_labels:
                raise EntailmentModelError(
                    f"{self.model_name!r} has {num_labels} classes; entailment index {index} is out of range"
                )
            self._index = index
        return self._index

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as error:  # pragma: no cover - depends on the install
            raise EntailmentModelError(
                "the NLI entailment judge needs torch and transformers: pip install 'halluscope[nlp]'"
            ) from error
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_name)
            model = AutoModelForSequenceClassification.from_pretrained(self.model_name)
        except (OSError, ValueError) as error:
            raise self._cannot_load(error) from error
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device)
        model.eval()
        self._tokenizer, self._model, self._device = tokenizer, model, device

    def _predict(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        import torch

        with self._lock:
            self._load()
            return self._predict_loaded(pairs, torch)

    def _predict_loaded(self, pairs: Sequence[tuple[str, str]], torch: Any) -> list[int]:
        classes: list[int] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start : start + self.batch_size]
            encoded = self._tokenizer(
                [p for p, _ in chunk],
                [h for _, h in chunk],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self._device)
            with torch.inference_mode():
                logits = self._model(**encoded).logits
            classes.extend(int(c) for c in logits.argmax(dim=-1).tolist())
        return classes

    def _key(self, premise: str, hypothesis: str) -> str:
        return content_key(self.model_name, premise, hypothesis)

    async def predict_classes(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """The predicted class id of each pair (cached)."""
        keys = [self._key(p, h) for p, h in pairs]
        known: dict[str, Any] = self.cache.get_many(self.CACHE_NAMESPACE, keys) if self.cache else {}
        todo = list(dict.fromkeys(i for i, k in enumerate(keys) if k not in known))
        todo_pairs = {keys[i]: pairs[i] for i in todo}
        if todo_pairs:
            predicted = await asyncio.to_thread(self._predict, list(todo_pairs.values()))
            fresh = dict(zip(todo_pairs, predicted, strict=True))
            if self.cache is not None:
                self.cache.put_many(self.CACHE_NAMESPACE, fresh)
            known.update(fresh)
        return [int(known[k]) for k in keys]

    async def entails_many(self, pairs: Sequence[tuple[str, str]], *, paper: bool = False) -> list[Verdict]:
        if not pairs:
            return []
        index = MNLI_ENTAILMENT_INDEX if paper else self.entailment_index
        classes = await self.predict_classes(pairs)
        return [c == index for c in classes]


# -- LLM -----------------------------------------------------------------------------------------------------

#: Our wording. One direction per request; the reply is a small JSON object so parsing is unambiguous.
ENTAILMENT_SYSTEM = (
    "You compare two short statements about the same picture and decide whether the first one, if true, "
    "guarantees that the second one is true."
)
ENTAILMENT_PROMPT = """First statement: {premise}
Second statement: {hypothesis}

Does the first statement guarantee the second? Treat synonyms and paraphrases as the same meaning and ignore
grammar slips; a second statement that adds a relation or detail the first does not give is NOT guaranteed.
Example: "cup is on table." guarantees "the cup sits on the table." but not "cup is under table." and not
"cup is on table next to a plate."
Reply with JSON only: {{"entails": true}} or {{"entails": false}}."""

_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def parse_entailment_reply(text: str) -> bool | None:
    """``{"entails": true|false}`` (or a reply that starts with yes/no/true/false) → bool; else None."""
    for candidate in _JSON_OBJECT.findall(text):
        try:
            value = loads_json(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("entails"), bool):
            return bool(value["entails"])
    head = text.strip().lower().lstrip("\"'`*# ")
    if re.match(r"^(?:yes|true)\b", head):
        return True
    if re.match(r"^(?:no|false)\b", head):
        return False
    return None


class LLMEntailment(Entailment):
    """Entailment asked of an LLM over an OpenAI-compatible endpoint (``halluscope.llm.client.ChatClient``).

    ``client`` may be any object with the ChatClient ``chat`` coroutine (tests pass a scripted one). Chat
    results are cached by the client when it has a cache (replies that could be read only); an unparseable
    reply or an API error is a :class:`~halluscope.stages.Failure` for that pair, never a guess.
    """

    name: ClassVar[str] = "llm"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: Any = None,
        cache: Cache | None = None,
        concurrency: int = 4,
        max_tokens: int = 32,
    ) -> None:
        if client is None:
            if not model:
                raise ValueError("the LLM entailment judge needs a model (--judge-model NAME)")
            from halluscope.llm.client import ChatClient

            client = ChatClient(model, base_url, api_key, concurrency=concurrency, cache=cache)
        self.client = client
        self.model = model or getattr(client, "model", "unknown")
        self.max_tokens = max_tokens

    @classmethod
    def from_options(
        cls,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        cache: Cache | None = None,
        **options: Any,
    ) -> LLMEntailment:
        """Registry factory, with the options of every LLM stage (:class:`~halluscope.llm.stage.LLMStageOptions`;
        ``timeout_s`` 120 and ``max_tokens`` 32 by default); the model, when not named, is the one the
        endpoint serves."""
        from halluscope.llm.stage import LLMStageOptions, llm_stage_client

        given = {"model": model, "base_url": base_url, "api_key_env": api_key_env, **options}
        parsed = LLMStageOptions.parse("judge 'llm' (entailment)", given, timeout_s=120.0, max_tokens=32)
        client = llm_stage_client("judge 'llm' (entailment)", parsed, cache=cache)
        return cls(client=client, max_tokens=parsed.max_tokens or 32)

    def identity(self) -> dict[str, Any]:
        base = getattr(self.client, "identity", None)
        client_id = base() if callable(base) else {"model": self.model}
        return {"judge": self.name, "entailment": True, **client_id, "max_tokens": self.max_tokens}

    async def _one(self, premise: str, hypothesis: str) -> Verdict:
        messages = [
            {"role": "system", "content": ENTAILMENT_SYSTEM},
            {"role": "user", "content": ENTAILMENT_PROMPT.format(premise=premise, hypothesis=hypothesis)},
        ]
        from halluscope.llm.client import FATAL_ERRORS

        try:
            # A reply that cannot be read is not cached: the next run asks again.
            result = await self.client.chat(
                messages, temperature=0.0, max_tokens=self.max_tokens, json_mode=True,
                keep=lambda reply: parse_entailment_reply(reply.text) is not None,
            )  # fmt: skip
        except FATAL_ERRORS:
            raise  # a wrong key, an unknown model, a prompt too long: every pair would fail alike
        except Exception as error:  # LLMError and transport errors: this pair stays undecided
            return Failure(f"LLM entailment call failed: {type(error).__name__}: {error}")
        value = parse_entailment_reply(result.text)
        if value is None:
            why = f"unparseable reply, neither entailed nor not: {result.text.strip()[:120]!r}"
            finish = getattr(result, "finish_reason", None)
            return Failure(unreadable_reply("the LLM entailment judge", why, finish_reason=finish))
        return value

    async def entails_many(self, pairs: Sequence[tuple[str, str]], *, paper: bool = False) -> list[Verdict]:
        return list(await asyncio.gather(*(self._one(p, h) for p, h in pairs)))

    async def aclose(self) -> None:
        closer = getattr(self.client, "aclose", None)
        if callable(closer):
            await closer()


def make_entailment(kind: str, *, cache: Cache | None = None, **options: Any) -> Entailment:
    """``"nli"`` → :class:`NLIEntailment` (option ``model``), ``"llm"`` → :class:`LLMEntailment`."""
    if kind == "nli":
        return NLIEntailment(cache=cache, **options)
    if kind == "llm":
        return LLMEntailment(cache=cache, **options)
    raise ValueError(f"unknown entailment judge {kind!r}; choose nli or llm")
