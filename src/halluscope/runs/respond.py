"""Collecting a model's answers to a benchmark's samples into ``DIR/responses.jsonl``, resumably.

Answers are expensive (API money, GPU hours), so nothing answered is ever asked twice:

- each answer is appended to ``responses.jsonl`` (halluscope responses format, one JSON object per line,
  flushed at once) as soon as it arrives, so a killed run loses at most the answers in flight;
- on start, ids already in the file are skipped; a line torn by a kill mid-write is cut off first, so the file
  never holds a duplicate or a broken line;
- the backend's content cache (model, messages, image hashes, sampling settings) makes the same request in
  another directory free as well.

``DIR/respond.json`` records the model's identity and generation settings; resuming into a directory that
holds another model's answers is refused rather than mixing the two. Samples whose request failed are not
written to ``responses.jsonl`` (they are retried on the next run) and are listed, with the reason, in
``DIR/respond-errors.jsonl``.

A model that is shown images is not asked at all while selected samples lack theirs
(:mod:`halluscope.runs.images`): :class:`RespondError` names how many and which, unless the benchmark's
``missing_images=fail`` lists those samples in ``respond-errors.jsonl`` (``MissingImage``) and the rest go on.

Each line's ``metadata`` holds what the backend measured: ``usage``, ``latency_s``, ``cached``,
``option_probs`` and per-token ``logprobs`` when asked for, and backend extras such as a mitigation's
two-step transcript (``metadata["mitigation"]``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from halluscope.jsonio import iter_jsonl, loads_json, write_json_atomic
from halluscope.llm.errors import endpoint_unusable
from halluscope.models.base import ChatTurn, GenerateRequest, GenerateResult, Model
from halluscope.redact import mask_data
from halluscope.runs.differences import comparable_identity, describe_difference
from halluscope.runs.images import MissingImagesError, check_images
from halluscope.runs.progress import ProgressSink, make_progress
from halluscope.runs.selection import Selection, every_sample
from halluscope.runs.store import RESPOND_ERRORS_FILE, RESPOND_META_FILE, RESPONSES_FILE, run_dir_writer
from halluscope.stages import BenchmarkInterface
from halluscope.types import Claim, Response, Sample

log = logging.getLogger(__name__)

#: How ``respond-errors.jsonl`` marks a sample never asked for want of its image (``missing_images=fail``).
MISSING_IMAGE = "MissingImage"
#: Default answer length; long enough for Tri-HE's open questions, short enough to keep runs cheap.
DEFAULT_MAX_TOKENS = 512


class RespondError(RuntimeError):
    """The output directory cannot be used (another model's answers, unreadable file)."""


class ModelEndpointError(RespondError):
    """The model's endpoint cannot serve any request (unreachable, key refused, model unknown).

    Collecting stops at the first such failure: every other sample would fail the same way. Answers
    received before it are kept in ``responses.jsonl``; ``cause`` is the error that stopped it.
    """

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def read_respond_errors(out_dir: Path) -> dict[str, str]:
    """The model's failures in the last collection into ``out_dir`` (sample id → error), from
    ``respond-errors.jsonl``. Samples never asked for want of their image (``missing_images=fail``) are left
    out: that is a gap in the inputs, not a failure of the model."""
    path = Path(out_dir) / RESPOND_ERRORS_FILE
    errors: dict[str, str] = {}
    if not path.exists():
        return errors
    for line in iter_jsonl(path):
        if line.ok and isinstance(line.value, dict) and isinstance(line.value.get("id"), str):
            error = str(line.value.get("error", ""))
            if not error.startswith(f"{MISSING_IMAGE}:"):
                errors[line.value["id"]] = error
    return errors


# -- the responses file ---------------------------------------------------------------------------------


def repair_torn_tail(path: Path) -> int:
    """Cut a final line left incomplete by a kill mid-write; returns the number of bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return 0
        # Walk back to the last newline (lines are small: read the tail in blocks).
        position = size
        block = 65536
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            position = start
        else:
            keep = 0
        handle.truncate(keep)
    return size - keep


def read_collected(path: Path) -> tuple[dict[str, Response], list[str]]:
    """Responses already in ``path`` (first occurrence of each id) and the problems found reading it.

    A torn last line (a kill mid-write, when :func:`repair_torn_tail` has not run) counts as not written:
    its sample is asked again.
    """
    from halluscope.responses import parse_response_row

    responses: dict[str, Response] = {}
    problems: list[str] = []
    if not path.exists():
        return responses, problems
    for line in iter_jsonl(path):
        where = f"{path.name} line {line.number}"
        if line.torn:
            problems.append(f"{where}: incomplete last line (an interrupted write); its sample is asked again")
            continue
        if not line.ok:
            problems.append(f"{where}: {line.error}")
            continue
        try:
            response = parse_response_row(line.value, where)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if response.id in responses:
            problems.append(f"{where}: duplicate id {response.id!r}; the first answer is kept")
            continue
        responses[response.id] = response
    return responses, problems


# -- requests and responses -----------------------------------------------------------------------------


def build_request(
    benchmark: BenchmarkInterface,
    sample: Sample,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    seed: int | None = None,
    top_logprobs: int | None = None,
) -> GenerateRequest:
    """The request for one sample: its prompt with its image, plus the scene graph for scene-based backends.

    ``answer_options`` come from ``sample.metadata["answer_options"]`` when the benchmark sets them (yes/no,
    A–D), so backends can report the options' probabilities.
    """
    options = sample.metadata.get("answer_options")
    return GenerateRequest(
        messages=[
            ChatTurn(role="user", text=sample.prompt, images=[sample.image_path] if sample.image_path else [])
        ],
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        top_logprobs=top_logprobs,
        answer_options=[str(o) for o in options] if isinstance(options, list) and options else None,
        sample_id=sample.id,
        scene=benchmark.scene(sample),
    )


def to_response(sample_id: str, result: GenerateResult, model_name: str | None) -> Response:
    """A :class:`GenerateResult` as a responses-file row: backend metadata kept, claims lifted out."""
    metadata: dict[str, Any] = dict(result.metadata)
    raw_claims = metadata.pop("claims", None)
    claims = [Claim.of(c) for c in raw_claims] if isinstance(raw_claims, list) else None
    metadata["usage"] = dict(result.usage)
    metadata["latency_s"] = round(result.latency_s, 4)
    metadata["cached"] = result.cached
    if result.option_probs is not None:
        metadata["option_probs"] = result.option_probs
    if result.logprobs is not None:
        metadata["logprobs"] = [step.model_dump() for step in result.logprobs]
    return Response(id=sample_id, response=result.text, claims=claims, model=model_name, metadata=metadata)


def model_label(model: Model) -> str:
    """A short name for the ``model`` field of each response, from the identity chain (outermost first)."""
    parts: list[str] = []
    identity: Any = model.identity()
    while isinstance(identity, dict):
        provider = str(identity.get("provider", "?"))
        name = identity.get("model") or identity.get("name") or identity.get("path")
        inner = identity.get("inner")
        if inner is None:
            parts.append(f"{provider}/{name}" if name else provider)
        else:
            parts.append(provider)
        identity = inner
    return ":".join(parts)


# -- the collector ---------------------------------------------------------------------------------------


def _prepare_dir(out_dir: Path, meta: dict[str, Any]) -> None:
    meta_path = out_dir / RESPOND_META_FILE
    if meta_path.exists():
        try:
            previous = loads_json(meta_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise RespondError(
                f"{meta_path} is unreadable ({error}); move it away to start afresh"
            ) from error

        for key in ("model", "generation"):
            there, now = comparable_identity(previous.get(key)), comparable_identity(meta.get(key))
            if there != now:
                what = describe_difference(key, there, now)
                raise RespondError(
                    f"{out_dir} holds answers collected with {what}; choose another --out so the answers "
                    "are not mixed"
                )
        if previous.get("benchmark_name") != meta.get("benchmark_name"):
            raise RespondError(
                f"{out_dir} holds answers to benchmark {previous.get('benchmark_name')!r}, not "
                f"{meta.get('benchmark_name')!r}; choose another --out"
            )
        meta["created"] = previous.get("created", meta["created"])
    write_json_atomic(meta_path, mask_data(meta))  # a key in a base URL stays off the disk


def _replay_warnings(model: Model, benchmark: BenchmarkInterface, ids: list[str]) -> list[str]:
    """Bind a replay model (also one inside a mitigation's wrapper) to the benchmark, whose reader reads its
    file as `run --responses` would: the same ids, the same answers; its problems and id mismatches."""
    from halluscope.models.replay import ReplayModel

    while not isinstance(model, ReplayModel) and isinstance(inner := getattr(model, "inner", None), Model):
        model = inner
    if isinstance(model, ReplayModel):
        model.bind(benchmark)
        return [*model.problems, *model.check_ids(ids)]
    return []


@dataclass(frozen=True)
class Generation:
    """How the model is asked to answer: recorded in ``respond.json``, and a folder answered under other
    settings is refused (the answers would mix two configurations)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    seed: int | None = None
    top_logprobs: int | None = None


@dataclass
class _Asking:
    """The state of one answering pass: what is left to ask, what came back, what failed."""

    queue: Iterable[Sample]
    size: int
    failures: dict[str, str]
    new: dict[str, Response] = field(default_factory=dict)
    fatal: list[BaseException] = field(default_factory=list)


@run_dir_writer(RespondError)  # one writer per folder: two would each append every answer
async def collect_responses(
    benchmark: BenchmarkInterface,
    model: Model,
    out_dir: Path,
    *,
    concurrency: int = 4,
    show_progress: bool = True,
    generation: Generation | None = None,
    max_tokens: int | None = None,
    model_name: str | None = None,
    progress: ProgressSink | None = None,
    selection: Selection | None = None,
) -> dict[str, Response]:
    """Ask ``model`` the samples of ``selection`` (every sample of ``benchmark`` when None); stream answers to
    ``out_dir``.

    To ask only some, pass the selection the run scores (``runs.selection.first_samples(benchmark, n)``), so
    the questions asked and the samples scored are the same ones. ``max_tokens`` overrides the one of
    ``generation``. Returns the answers (earlier and new), by id. Samples whose request failed are absent from
    the result and listed in ``respond-errors.jsonl``; running again retries only them.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = generation or Generation()
    if max_tokens is not None:
        settings = replace(settings, max_tokens=max_tokens)
    selection = selection if selection is not None else every_sample(benchmark)
    samples = list(selection.samples())
    ids = [s.id for s in samples]
    label = model_name or model_label(model)
    meta: dict[str, Any] = {
        "model": model.identity(),
        "model_name": label,
        "benchmark_name": benchmark.name,
        "benchmark": selection.spec(benchmark),
        "generation": asdict(settings),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    try:
        no_image = check_images(benchmark, model, samples)
    except MissingImagesError as error:
        raise RespondError(str(error)) from error
    warnings = _replay_warnings(model, benchmark, ids)  # raises when a replay file matches no sample at all
    for warning in warnings:
        log.warning("%s", warning)
    _prepare_dir(out_dir, meta)
    existing = _earlier_answers(out_dir / RESPONSES_FILE)
    pending = [s for s in samples if s.id not in existing and s.id not in no_image]
    # Never asked: the model would answer without the image (missing_images=fail). Retried next run.
    asking = _Asking(
        queue=iter(pending), size=len(pending),
        failures={i: f"{MISSING_IMAGE}: {why}" for i, why in no_image.items() if i not in existing},
    )  # fmt: skip
    unasked = len(asking.failures)
    owns_progress = progress is None
    sink = progress if progress is not None else make_progress(show_progress)
    sink.start(f"answering {benchmark.name} with {label}", total=len(samples), done=len(samples) - len(pending))
    try:
        await _ask_all(benchmark, model, settings, label, out_dir / RESPONSES_FILE, asking, sink, concurrency)
    finally:
        if owns_progress:
            sink.close()
    _write_failures(out_dir / RESPOND_ERRORS_FILE, ids, asking.failures)
    collected = {i: r for i, r in existing.items() if i in set(ids)}
    collected.update(asking.new)
    _finish_meta(out_dir, meta, samples=len(samples), collected=collected, asking=asking, unasked=unasked)
    meta["warnings"] = warnings[:50]
    write_json_atomic(out_dir / RESPOND_META_FILE, mask_data(meta))
    if asking.fatal:
        cause = endpoint_unusable(asking.fatal[0]) or asking.fatal[0]
        raise ModelEndpointError(
            f"the model {label} cannot answer: {type(cause).__name__}: {cause} — stopped after "
            f"{len(asking.failures) - unasked} failed request(s); {len(collected)} answer(s) collected before are "
            f"kept in {out_dir / RESPONSES_FILE}. Fix the endpoint, key or model name and re-run the same command "
            "to resume.",
            cause,
        )
    return {i: collected[i] for i in ids if i in collected}


def _earlier_answers(path: Path) -> dict[str, Response]:
    """The answers an earlier pass wrote (a torn last line, left by a kill, removed first)."""
    removed = repair_torn_tail(path)
    if removed:
        log.warning("%s: removed an incomplete last line (%d bytes) left by an interrupted run", path, removed)
    existing, problems = read_collected(path)
    for problem in problems:
        log.warning("%s", problem)
    return existing


async def _ask_all(
    benchmark: BenchmarkInterface,
    model: Model,
    settings: Generation,
    label: str,
    path: Path,
    asking: _Asking,
    sink: ProgressSink,
    concurrency: int,
) -> None:
    """Ask the queued samples with ``concurrency`` workers, each answer appended to ``path`` as it comes."""
    from halluscope.responses import response_to_row

    with path.open("a", encoding="utf-8") as handle:

        async def worker() -> None:
            for sample in asking.queue:
                if asking.fatal:
                    return
                try:
                    request = build_request(
                        benchmark, sample, max_tokens=settings.max_tokens, temperature=settings.temperature,
                        seed=settings.seed, top_logprobs=settings.top_logprobs,
                    )  # fmt: skip
                    response = to_response(sample.id, await model.generate(request), label)
                except Exception as error:  # one failing sample never stops the others...
                    asking.failures[sample.id] = f"{type(error).__name__}: {error}"
                    log.debug("sample %s failed: %s", sample.id, asking.failures[sample.id])
                    if endpoint_unusable(error) is not None:  # ...unless no sample can succeed
                        asking.fatal.append(error)
                else:
                    # One write per line, flushed at once: a kill leaves whole lines, plus at most one torn tail.
                    handle.write(json.dumps(response_to_row(response), ensure_ascii=False) + "\n")
                    handle.flush()
                    asking.new[sample.id] = response
                sink.advance(1, failed=int(sample.id in asking.failures))

        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, asking.size or 1)))))


def _write_failures(path: Path, ids: list[str], failures: dict[str, str]) -> None:
    """``respond-errors.jsonl``: the samples whose request failed this time, in the benchmark's order."""
    if not failures:
        path.unlink(missing_ok=True)
        return
    with path.open("w", encoding="utf-8") as handle:
        for sample_id in ids:
            if sample_id in failures:
                handle.write(json.dumps({"id": sample_id, "error": failures[sample_id]}, ensure_ascii=False) + "\n")


def _finish_meta(
    out_dir: Path, meta: dict[str, Any], *, samples: int, collected: dict[str, Response], asking: _Asking, unasked: int
) -> None:
    meta["counts"] = {
        "samples": samples,
        "answered": len(collected),
        "answered_now": len(asking.new),
        "cached_now": sum(1 for r in asking.new.values() if r.metadata.get("cached")),
        "failed": len(asking.failures),
    }
    if unasked:
        meta["counts"]["missing_images"] = unasked  # among "failed": never asked, for want of the image
    meta["updated"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if asking.fatal:
        meta["stopped"] = f"{type(asking.fatal[0]).__name__}: {asking.fatal[0]}"
