"""Visual entailment p(I ⊨ t): how likely the image shows what a statement says — PROVE's second chance
for a response tuple that the image's scene graph does not cover (Eq. 2).

PROVE used OFA fine-tuned for visual entailment. Three pluggable backends here, chosen by name:

- ``none``: no image is looked at; p = 0 for every tuple. tscore is then graph-only and a **lower bound** on
  the tscore any entailment model would give (Eq. 2 takes the max of similarity and p, and p ≥ 0).
- ``vlm``: any vision-language model on an OpenAI-compatible endpoint, shown the image and asked whether it
  shows the statement, answering yes, maybe or no; the answer maps to p as the official code maps it
  (:data:`ANSWER_SCORES`: yes 0.75, maybe 0.5, no 0). An answer that is none of the three is a failure for
  that tuple (never guessed).
- ``itm``: a transformers image–text matching model (BLIP's ITM head, ``BlipForImageTextRetrieval``; default
  ``Salesforce/blip-itm-base-coco``, or a local folder): p = softmax of the match logits, class "match".
  transformers has no OFA visual-entailment class; an ITM head answers the same question (does this text
  describe this image?) with a probability.

Every backend returns, per (image path, statement), a float in [0, 1] or a
:class:`~halluscope.stages.Failure` naming the problem (missing image, unreadable answer, endpoint error).
``max_score`` is the largest p a backend can give: a tuple whose graph similarity already reaches it cannot
gain from entailment, so the scorer does not ask (Eq. 2 is unchanged by this).
"""

from __future__ import annotations

import asyncio
import re
import threading
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from halluscope.cache import Cache, content_key
from halluscope.llm.client import LLMAuthError, LLMError
from halluscope.llm.replies import unreadable_reply
from halluscope.llm.stage import LLMStage
from halluscope.options import check_options
from halluscope.stages import AnswerJudge, Failure

#: The official mapping of a VLM's three-way answer to p(I ⊨ t).
ANSWER_SCORES = {"yes": 0.75, "maybe": 0.5, "no": 0.0}
DEFAULT_ITM_MODEL = "Salesforce/blip-itm-base-coco"

VLM_PROMPT = """\
Look at the image and decide whether this statement about it is true:

"{statement}"

Reply with a single word: yes if the image clearly shows it, no if the image shows it is false, maybe if \
the image does not let you tell."""

Score = float | Failure


class VisualEntailment(AnswerJudge[tuple[str | None, str], float]):
    """Scores (image path, statement) pairs with p(image ⊨ statement): PROVE's judge slot
    (``--judge none|vlm|itm``, kind "visual-entailment"), so it is chosen, configured and recorded in
    ``spec.json`` as every other judge is."""

    name: ClassVar[str]
    answers_of: ClassVar[str] = "PROVE"
    benchmark_option: ClassVar[str] = "prove"
    #: The largest score this backend can return.
    max_score: ClassVar[float] = 1.0

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name}

    @abstractmethod
    async def entail_many(self, pairs: Sequence[tuple[str | None, str]]) -> list[Score]:
        """One score per (image path, statement), in order."""

    async def grade_many(self, items: Sequence[tuple[str | None, str]]) -> list[float | Failure]:
        return await self.entail_many(items)


def _missing_image(path: str | None) -> Failure | None:
    if path is None:
        return Failure("visual entailment needs the image, and this sample names none")
    if not Path(path).is_file():
        return Failure(f"visual entailment: image not found: {path!r}")
    return None


class NoEntailment(VisualEntailment):
    """p = 0 everywhere: graph-only truthfulness, a lower bound on tscore."""

    name: ClassVar[str] = "none"
    max_score: ClassVar[float] = 0.0

    def __init__(self, *, cache: Cache | None = None, **unknown: Any) -> None:
        check_options("entailment 'none'", unknown, [])

    async def entail_many(self, pairs: Sequence[tuple[str | None, str]]) -> list[Score]:
        return [0.0 for _ in pairs]


def parse_three_way(reply: str) -> str | None:
    """yes / maybe / no from a reply's first word (punctuation and case ignored); None otherwise."""
    words = re.findall(r"[a-z]+", reply.lower())
    if not words:
        return None
    return words[0] if words[0] in ANSWER_SCORES else None


class VLMEntailment(LLMStage, VisualEntailment):
    """A VLM on any OpenAI-compatible endpoint asked yes / maybe / no. Options: those of every LLM stage
    (:class:`~halluscope.llm.stage.LLMStageOptions`; here ``timeout_s`` 120 and ``max_tokens`` 5 by
    default), ``max_side`` (image downscaling), ``cache``."""

    name: ClassVar[str] = "vlm"
    max_score: ClassVar[float] = max(ANSWER_SCORES.values())
    component = "entailment 'vlm'"
    option_defaults: ClassVar[Mapping[str, Any]] = {"timeout_s": 120.0, "max_tokens": 5}
    own_options = ("max_side",)
    reply_tokens = 5

    def configure(self, own: dict[str, Any]) -> None:
        self.max_side = int(own.get("max_side", 768))

    def identity(self) -> dict[str, Any]:
        prompt = content_key("prove-vlm-entailment", VLM_PROMPT, ANSWER_SCORES)[:12]
        return {"judge": self.name, **self.client.identity(), "prompt": prompt, "max_side": self.max_side}

    def messages(self, image_path: str, statement: str) -> list[dict[str, Any]]:
        from halluscope.models.images import image_data_url

        url = image_data_url(image_path, max_side=self.max_side)
        return [{
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": url}},
                {"type": "text", "text": VLM_PROMPT.format(statement=statement)},
            ],
        }]

    async def _one(self, image_path: str | None, statement: str) -> Score:
        missing = _missing_image(image_path)
        if missing is not None:
            return missing
        assert image_path is not None
        try:
            messages = self.messages(image_path, statement)
            # A reply that cannot be read is not cached: the next run asks again.
            result = await self.client.chat(
                messages, temperature=0.0, max_tokens=self.max_tokens,
                keep=lambda reply: parse_three_way(reply.text) is not None,
            )  # fmt: skip
        except LLMAuthError:
            raise
        except LLMError as error:
            return Failure(f"visual entailment ({self.client.model}) failed: {error}")
        except ValueError as error:  # an image that cannot be read
            return Failure(f"visual entailment: {error}")
        answer = parse_three_way(result.text)
        if answer is None:
            why = f"{result.text.strip()[:60]!r} is not yes, maybe or no"
            return Failure(unreadable_reply("visual entailment", why, finish_reason=result.finish_reason))
        return ANSWER_SCORES[answer]

    async def entail_many(self, pairs: Sequence[tuple[str | None, str]]) -> list[Score]:
        return list(await asyncio.gather(*(self._one(path, text) for path, text in pairs)))


class ITMEntailment(VisualEntailment):
    """A transformers image–text matching model (BLIP ITM): p = P(match). Options: ``model`` (hub name or
    folder), ``device``, ``batch_size``, ``cache`` (scores cached by image content, statement and model)."""

    name: ClassVar[str] = "itm"

    def __init__(
        self,
        *,
        model: str | None = None,
        device: str = "cpu",
        batch_size: int = 16,
        cache: Cache | None = None,
        **unknown: Any,
    ) -> None:
        check_options("entailment 'itm'", unknown, ["model", "device", "batch_size", "cache"])
        self.model_name = str(model or DEFAULT_ITM_MODEL)
        self.device = device
        self.batch_size = int(batch_size)
        self.cache = cache
        self._model: Any = None
        self._processor: Any = None
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "model": self.model_name}

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            try:
                from transformers import BlipForImageTextRetrieval, BlipProcessor
            except ImportError as error:  # pragma: no cover - depends on the environment
                raise RuntimeError("entailment 'itm' needs transformers: pip install 'halluscope[hf]'") from error
            local = Path(self.model_name).is_dir()
            try:
                self._processor = BlipProcessor.from_pretrained(self.model_name, local_files_only=local)
                model = BlipForImageTextRetrieval.from_pretrained(self.model_name, local_files_only=local)
            except (OSError, ValueError) as error:
                raise RuntimeError(f"entailment 'itm': cannot load {self.model_name!r}: {error}") from error
            self._model = model.to(self.device).eval()  # type: ignore[arg-type]
        return self._model, self._processor

    def _key(self, digest: str, statement: str) -> str:
        return content_key("prove-itm", self.model_name, digest, statement)

    def entail_many_sync(self, pairs: Sequence[tuple[str | None, str]]) -> list[Score]:
        from halluscope.models.images import ImageError, file_digest, load_image

        out: list[Score | None] = [None] * len(pairs)
        todo: list[tuple[int, str, str, str]] = []  # (index, path, statement, cache key)
        for index, (path, statement) in enumerate(pairs):
            missing = _missing_image(path)
            if missing is not None:
                out[index] = missing
                continue
            assert path is not None
            try:
                key = self._key(file_digest(path), statement)
            except ImageError as error:
                out[index] = Failure(f"visual entailment: {error}")
                continue
            hit = self.cache.get("prove-itm", key) if self.cache is not None else None
            if isinstance(hit, dict) and isinstance(hit.get("p"), float):
                out[index] = float(hit["p"])
            else:
                todo.append((index, path, statement, key))
        if todo:
            import torch

            with self._lock:
                model, processor = self._load()
                for start in range(0, len(todo), self.batch_size):
                    batch = todo[start : start + self.batch_size]
                    try:
                        images = [load_image(path) for _, path, _, _ in batch]
                    except ImageError as error:
                        for index, *_ in batch:
                            out[index] = Failure(f"visual entailment: {error}")
                        continue
                    inputs = processor(
                        images=images, text=[s for _, _, s, _ in batch], return_tensors="pt", padding=True
                    ).to(self.device)
                    with torch.no_grad():
                        logits = model(**inputs, use_itm_head=True).itm_score
                    probs = torch.softmax(logits.float(), dim=-1)[:, 1].tolist()
                    for (index, _, _, key), p in zip(batch, probs, strict=True):
                        out[index] = float(p)
                        if self.cache is not None:
                            self.cache.put("prove-itm", key, {"p": float(p)})
        return [r if r is not None else Failure("visual entailment: not scored") for r in out]

    async def entail_many(self, pairs: Sequence[tuple[str | None, str]]) -> list[Score]:
        return await asyncio.to_thread(self.entail_many_sync, pairs)


ENTAILMENTS: dict[str, type[VisualEntailment]] = {
    "none": NoEntailment,
    "vlm": VLMEntailment,
    "itm": ITMEntailment,
}


def make_visual_entailment(kind: str | None, **options: Any) -> VisualEntailment:
    """The backend named ``kind`` (none | vlm | itm), built with its options."""
    name = (kind or "none").strip().lower()
    if name not in ENTAILMENTS:
        raise ValueError(f"unknown visual entailment {kind!r}; choose one of: {', '.join(ENTAILMENTS)}")
    if name == "none":
        options.pop("cache", None)
    return ENTAILMENTS[name](**options)


__all__ = [
    "ANSWER_SCORES",
    "DEFAULT_ITM_MODEL",
    "ENTAILMENTS",
    "ITMEntailment",
    "NoEntailment",
    "VLMEntailment",
    "VisualEntailment",
    "make_visual_entailment",
    "parse_three_way",
]
