"""Model specs: one string names a backend, its options and any mitigation wrapped around it.

Grammar (documented for users in docs/models.md)::

    SPEC     := (WRAPPER ":")* PROVIDER "/" NAME ["?" OPTION ("&" OPTION)*]
    WRAPPER  := MITIGATION ["[" OPTION ("," OPTION)* "]"]
    OPTION   := key "=" value

Examples::

    openai/gpt-4o
    openai/qwen2.5-vl?base_url=http://localhost:8000/v1&max_side=512
    hf/llava-hf/llava-1.5-7b-hf?dtype=float16
    replay/answers/llava.json?key=llava-1.5-7b
    blind/openai/qwen?base_url=http://127.0.0.1:8080/v1
    eyes-closed:openai/gpt-4o
    general-description[describe_max_tokens=256]:openai/gpt-4o

The provider is the text before the first ``/``; the name is everything after it up to ``?`` (so it may
itself hold ``/``: a hub repo, a file path, or an inner spec for the baselines). Wrappers are recognised
only as a prefix without ``/`` before ``:``, so names with colons (Ollama's ``qwen2.5vl:7b``, Windows paths)
parse as names. Values are read as booleans (``true``/``false``), integers, floats, or else text, after
percent-decoding (write ``%26`` for a literal ``&``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote

from pydantic import BaseModel, Field

from halluscope.cache import Cache
from halluscope.models.base import Model
from halluscope.redact import MASK, is_secret_name, mask_text


class ModelSpecError(ValueError):
    """A model spec that cannot be parsed or built; the message names the offending part."""


OptionValue = bool | int | float | str


class WrapperSpec(BaseModel):
    """A mitigation wrapped around a model, with its own options."""

    name: str
    options: dict[str, OptionValue] = Field(default_factory=dict)

    def __str__(self) -> str:
        if not self.options:
            return self.name
        inner = ",".join(f"{k}={_format_value(v)}" for k, v in sorted(self.options.items()))
        return f"{self.name}[{inner}]"


class ModelSpec(BaseModel):
    """A parsed model spec: wrappers (outermost first), the provider, its name and its options."""

    provider: str
    name: str
    options: dict[str, OptionValue] = Field(default_factory=dict)
    wrappers: list[WrapperSpec] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.render()

    def render(self, *, redact: bool = True) -> str:
        """The canonical spec string (options sorted); secrets are hidden unless asked.

        Hidden: options named as secrets by whole words (``api_key``, ``access_token``; ``max_tokens`` is
        shown) and the key inside a URL value (``base_url=http://user:***@host/v1``). The rendered spec is a
        label (``respond``'s ``model`` field), never part of an identity, so what it shows can change.
        """
        prefix = "".join(f"{w}:" for w in self.wrappers)
        text = f"{prefix}{self.provider}/{self.name}"
        if self.options:
            parts = []
            for key, value in sorted(self.options.items()):
                shown = _format_value(value)
                if redact:
                    shown = MASK if is_secret_name(key) else mask_text(shown)
                parts.append(f"{key}={quote(shown, safe='/:.,-_~*')}")
            text += "?" + "&".join(parts)
        return text

    def with_wrapper(self, name: str, **options: OptionValue) -> ModelSpec:
        """This spec with one more mitigation wrapped around it (outermost)."""
        return self.model_copy(update={"wrappers": [WrapperSpec(name=name, options=options), *self.wrappers]})


_WRAPPER = re.compile(r"^([A-Za-z][\w-]*)(?:\[([^\]]*)\])?:(.*)$", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z][\w.-]*$")


def _shown(key: str, value: Any) -> str:
    """An option's value as a message quotes it: a secret masked."""
    return repr(MASK) if is_secret_name(key) else mask_text(repr(value))


def _format_value(value: OptionValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_value(text: str) -> OptionValue:
    """``true``/``false`` → bool, integers → int, decimals → float, anything else stays text."""
    lowered = text.lower()
    if lowered in {"true", "yes", "on"}:
        return True
    if lowered in {"false", "no", "off"}:
        return False
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text):
        return float(text)
    return text


def _parse_options(text: str, separator: str, where: str) -> dict[str, OptionValue]:
    options: dict[str, OptionValue] = {}
    for part in text.split(separator):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key = unquote(key.strip())
        if not eq or not key:
            raise ModelSpecError(f"option {mask_text(part)!r} in {where} must be written key=value")
        if not re.fullmatch(r"[A-Za-z_][\w]*", key):
            raise ModelSpecError(f"option name {key!r} in {where} must be letters, digits and underscores")
        if key in options:
            raise ModelSpecError(f"option {key!r} is given twice in {where}")
        options[key] = parse_value(unquote(value.strip()))
    return options


def parse_model_spec(text: str, *, known_wrappers: set[str] | None = None) -> ModelSpec:
    """Parse a ``--model`` string; raises :class:`ModelSpecError` saying what is wrong and how to write it."""
    from halluscope.models.mitigations import MITIGATIONS

    wrappers_known = known_wrappers if known_wrappers is not None else set(MITIGATIONS.names())
    original = mask_text(text)  # as messages quote it: a key written in the spec stays out of them
    rest = text.strip()
    if not rest:
        raise ModelSpecError("empty model spec; write provider/name, e.g. openai/gpt-4o")
    wrappers: list[WrapperSpec] = []
    while True:
        match = _WRAPPER.match(rest)
        if match is None:
            break
        name, option_text, remainder = match.group(1), match.group(2), match.group(3)
        if name not in wrappers_known:
            if "/" not in remainder:  # "gpt-4o:latest": a name without provider, reported below
                break
            raise ModelSpecError(
                f"unknown mitigation {name!r} in model spec {original!r}; "
                f"choose one of: {', '.join(sorted(wrappers_known)) or '(none registered)'}"
            )
        options = _parse_options(option_text or "", ",", f"mitigation {name!r}")
        wrappers.append(WrapperSpec(name=name, options=options))
        rest = remainder.strip()
    base, question, option_text = rest.partition("?")
    provider, slash, name = base.partition("/")
    if not slash or not provider or not name:
        raise ModelSpecError(
            f"model spec {original!r} needs a provider and a name, written provider/name "
            "(e.g. openai/gpt-4o, hf/llava-hf/llava-1.5-7b-hf, replay/answers.jsonl)"
        )
    if not _NAME.match(provider):
        raise ModelSpecError(f"provider {provider!r} in model spec {original!r} is not a valid name")
    options = _parse_options(option_text, "&", f"model spec {original!r}") if question else {}
    return ModelSpec(provider=provider, name=name, options=options, wrappers=wrappers)


def accepted_options(factory: Callable[..., Any]) -> set[str] | None:
    """Keyword options a factory takes; None when it takes any (``**options``)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    names: set[str] = set()
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.add(parameter.name)
    return names


def _check_options(factory: Callable[..., Any], options: Mapping[str, Any], what: str) -> None:
    accepted = accepted_options(factory)
    if accepted is None:
        return
    unknown = sorted(set(options) - accepted)
    if unknown:
        choices = ", ".join(sorted(accepted - {"spec", "cache", "inner", "model"})) or "(none)"
        raise ModelSpecError(f"{what} does not take option(s) {', '.join(unknown)}; it takes: {choices}")


def merge_options(spec: ModelSpec, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Spec options plus command-line overrides (None values are ignored); a clash is an error, since
    silently preferring either would run a different model than one of them says."""
    merged: dict[str, Any] = dict(spec.options)
    for key, value in overrides.items():
        if value is None:
            continue
        if key in merged and merged[key] != value:
            there, here = (_shown(key, v) for v in (merged[key], value))
            raise ModelSpecError(
                f"option {key!r} is set both in the model spec ({there}) and on the command line ({here}); "
                "give it once"
            )
        merged[key] = value
    return merged


def create_model(spec: str | ModelSpec, *, cache: Cache | None = None, **overrides: Any) -> Model:
    """Create the model a spec names, with its mitigations wrapped around it (innermost first).

    ``overrides`` are options from the command line (``base_url``, ``concurrency``, ...); those the backend
    does not take are dropped when they came from generic flags (None) and rejected otherwise.
    """
    from halluscope.models import MODELS
    from halluscope.models.mitigations import MITIGATIONS
    from halluscope.registry import UnknownComponentError

    parsed = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec)
    try:
        factory = MODELS.factory(parsed.provider)
    except UnknownComponentError as error:
        raise ModelSpecError(str(error)) from error
    except ImportError as error:
        raise ModelSpecError(f"model provider {parsed.provider!r} cannot be loaded: {error}") from error
    options = merge_options(parsed, overrides)
    _check_options(factory, options, f"model provider {parsed.provider!r}")
    model: Model = factory(spec=parsed.name, cache=cache, **options)
    for wrapper in reversed(parsed.wrappers):
        try:
            wrap = MITIGATIONS.factory(wrapper.name)
        except UnknownComponentError as error:
            raise ModelSpecError(str(error)) from error
        _check_options(wrap, wrapper.options, f"mitigation {wrapper.name!r}")
        model = wrap(model, **wrapper.options)
    return model


def spec_with_mitigations(spec: str, mitigations: list[str]) -> ModelSpec:
    """A spec with ``--mitigation`` names applied (each as the new outermost wrapper, in the order given)."""
    parsed = parse_model_spec(spec)
    for item in mitigations:
        wrapped = parse_model_spec(f"{item}:x/y")  # reuse the wrapper grammar, options included
        for wrapper in reversed(wrapped.wrappers):
            parsed = parsed.with_wrapper(wrapper.name, **wrapper.options)
    return parsed
