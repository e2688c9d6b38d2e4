"""How a stored run differs from the one asked for, in one short line: what ``--out`` reuse and resuming
collected answers check. Below both the runner and the answer collector, so neither imports the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Benchmark spec fields that count what is on disk (images found, samples selected) rather than say what was
#: asked for: a photo added since the last run, or a run made before they were recorded, is not another run.
COUNTED_FIELDS = ("images_found", "images_needed", "images_outside", "text_only_samples", "selected_samples")


def upgraded_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A ``spec.json`` written before HallusionBench's grader and PROVE's visual entailment moved into the
    judge slot, as the present version writes it, so those runs still resume.

    They were benchmark options then (``benchmark.judge``, ``benchmark.entailment``) and the run's ``judge``
    was null. The offline judges map exactly; an LLM judge's identity now also holds its client's settings,
    so such a run is compared as it is and, if it differs, refused with the difference named.
    """
    bench = spec.get("benchmark")
    if not isinstance(bench, dict) or spec.get("judge") is not None:
        return spec
    old_judge: dict[str, Any] | None = None
    moved = {"hallusionbench": "judge", "prove": "entailment"}.get(str(bench.get("benchmark")), "")
    old = bench.get(moved)
    if not isinstance(old, dict):
        return spec
    if moved == "judge" and old.get("judge") in ("parser", "vlmevalkit"):
        old_judge = {"judge": old["judge"]}
    elif moved == "entailment" and old.get("kind") == "none":
        old_judge = {"judge": "none"}
    elif moved == "entailment" and old.get("kind") == "itm":
        from halluscope.judges.visual_entailment import DEFAULT_ITM_MODEL

        old_judge = {"judge": "itm", "model": old.get("model") or DEFAULT_ITM_MODEL}
    if old_judge is None:
        return spec
    rest = {k: v for k, v in bench.items() if k != moved}
    return {**spec, "benchmark": rest, "judge": old_judge}


def without_counts(key: str, value: Any) -> Any:
    if key == "benchmark" and isinstance(value, dict):
        # "limit": null is how runs made before the run took over the limit said "no limit"; now it is absent.
        return {
            k: v for k, v in value.items() if k not in COUNTED_FIELDS and not (k == "limit" and v is None)
        }
    return value


def _short(value: Any, limit: int = 60) -> str:
    """A value as a few words: a model identity by its name, anything else cut to ``limit`` characters."""
    if isinstance(value, dict) and ("provider" in value or "model" in value):
        parts: list[str] = []
        identity: Any = value
        while isinstance(identity, dict):
            name = identity.get("model") or identity.get("name") or identity.get("path")
            provider = identity.get("provider")
            parts.append("/".join(str(p) for p in (provider, name) if p) or "?")
            identity = identity.get("inner")
        text = ":".join(parts)
    elif value is None:
        text = "none"
    else:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tail(text: str, limit: int = 60) -> str:
    """A path cut from the left, where the parts that tell two paths apart usually are."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def same_responses(there: Any, now: Any) -> bool:
    if there is None or now is None:
        return there == now
    return bool(Path(str(there)).resolve() == Path(str(now)).resolve())


def describe_difference(key: str, there: Any, now: Any) -> str:
    """One short line saying how ``key`` of a stored run differs from this one (which keys, for a config)."""
    if key == "model":
        if there is None or now is None:
            return (
                f"answers from {'a responses file' if there is None else 'model ' + _short(there)} there, "
                f"from {'a responses file' if now is None else 'model ' + _short(now)} now"
            )
        if _short(there) != _short(now):
            return f"another model ({_short(there)} there, {_short(now)} now)"
        return f"the same model with other settings ({_config_changes(there, now)})"
    if key == "responses":
        old_path, new_path = (str(p) if p is not None else "none" for p in (there, now))
        if Path(old_path).name != Path(new_path).name:  # the names tell them apart
            old_path, new_path = Path(old_path).name, Path(new_path).name
        return f"other responses ({_tail(old_path)} there, {_tail(new_path)} now)"
    if isinstance(there, dict) and isinstance(now, dict):
        return f"another {key} config ({_config_changes(there, now)})"
    return f"another {key} ({_short(there)} there, {_short(now)} now)"


def _config_changes(there: dict[str, Any], now: dict[str, Any]) -> str:
    """The keys (dotted) whose values differ, with both values, at most three of them."""
    old, new = _flatten(there), _flatten(now)
    keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
    shown = "; ".join(f"{k}: {_short(old.get(k), 30)} there, {_short(new.get(k), 30)} now" for k in keys[:3])
    return shown + (f"; and {len(keys) - 3} more" if len(keys) > 3 else "")



def comparable_identity(identity: Any) -> Any:
    """A model identity without what may legitimately change between resumed runs (the endpoint's address)."""
    if isinstance(identity, dict):
        return {
            k: comparable_identity(v) for k, v in identity.items() if k not in {"base_url", "concurrency"}
        }
    if isinstance(identity, list):
        return [comparable_identity(v) for v in identity]
    return identity
