"""``halluscope models``: the registered model backends and mitigations, and what each needs to run."""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from halluscope.cli.common import console


@dataclass(frozen=True)
class BackendInfo:
    summary: str
    needs: str
    example: str
    #: Python modules the backend imports when used (checked without importing them).
    modules: tuple[str, ...] = ()


#: What users need to know per provider; providers registered later without an entry still show up.
BACKENDS: dict[str, BackendInfo] = {
    "openai": BackendInfo(
        "any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp); images as base64 "
        "data URLs, each file's own bytes (max_side=N shrinks them)",
        "an endpoint (--base-url or $HALLUSCOPE_BASE_URL / $OPENAI_BASE_URL; default api.openai.com) and, "
        "where it checks one, a key in $HALLUSCOPE_API_KEY / $OPENAI_API_KEY or api_key_env=VAR",
        "openai/gpt-4o   openai/qwen2-vl?base_url=http://localhost:8000/v1&max_side=512",
        ("httpx", "PIL"),
    ),
    "hf": BackendInfo(
        "transformers image-text-to-text models (LLaVA-1.5, LLaVA-NeXT, Qwen2-VL, ...) run locally",
        "torch and transformers; a hub repo id (needs internet once) or a local model folder; "
        "CUDA if present",
        "hf/llava-hf/llava-1.5-7b-hf",
        ("torch", "transformers"),
    ),
    "replay": BackendInfo(
        "answers read from a file: halluscope JSONL, Tri-HE json with an answer key, Reefknot JSONL, "
        "HQH json, PROVE response json",
        "the answers file; ?format=, ?key= (answer field), ?claims_key=, ?id_key= "
        "when auto-detection is unsure",
        "replay/runs/llava/responses.jsonl   replay/tri-he-llava.json?key=llava-1.5-7b",
    ),
    "blind": BackendInfo(
        "baseline: a text-only LLM answers without the image (language priors only)",
        "an inner text model spec; its options pass through",
        "blind/openai/qwen2.5?base_url=http://127.0.0.1:8080/v1",
    ),
    "scene-oracle": BackendInfo(
        "baseline: a text-only LLM answers from the image's scene graph written out as text",
        "a benchmark with scene graphs (tri-he) and an inner text model spec",
        "scene-oracle/openai/qwen2.5?base_url=http://127.0.0.1:8080/v1",
    ),
}


def _option_names(factory: Any) -> str:
    from halluscope.models.spec import accepted_options

    accepted = accepted_options(factory)
    if accepted is None:
        return "(passed to the inner model)"
    return ", ".join(sorted(accepted - {"spec", "cache", "inner"})) or "-"


def _status(info: BackendInfo | None) -> str:
    if info is None:
        return "?"
    missing = [m for m in info.modules if importlib.util.find_spec(m) is None]
    return "ready" if not missing else "missing: " + ", ".join(missing)


def models(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list each backend's options.")] = (
        False
    ),
) -> None:
    """List model backends (provider/name) and mitigations, with what each needs."""
    from rich.markup import escape

    from halluscope.mitigation import MITIGATIONS
    from halluscope.models import MODELS

    out = console()
    out.print("[bold]Model backends[/bold]  (--model [mitigation:]provider/name[?key=value&...])\n")
    for name in MODELS.names():
        info = BACKENDS.get(name)
        try:
            factory: Any = MODELS.factory(name)
            status = _status(info)
        except (ImportError, AttributeError) as error:
            factory, status = None, f"unavailable ({type(error).__name__}: {error})"
        colour = "green" if status == "ready" else "yellow"
        out.print(f"[bold]{name}[/bold]  [{colour}]{escape(status)}[/{colour}]")
        summary = info.summary if info else MODELS.descriptions.get(name, "")
        if summary:
            out.print(f"  {escape(summary)}")
        if info:
            out.print(f"  [dim]needs:[/dim] {escape(info.needs)}")
            for example in info.example.split("   "):
                out.print(f"  [dim]e.g.:[/dim]  {escape(example)}")
        if verbose and factory is not None:
            out.print(f"  [dim]options:[/dim] {_option_names(factory)}")
        out.print()
    out.print("[bold]Mitigations[/bold]  (--mitigation NAME, or NAME[key=value,...]:provider/name)\n")
    for name in MITIGATIONS.names():
        out.print(f"[bold]{name}[/bold]")
        out.print(f"  {escape(MITIGATIONS.descriptions.get(name, ''))}")
        if verbose:
            with contextlib.suppress(ImportError, AttributeError):
                out.print(f"  [dim]options:[/dim] {_option_names(MITIGATIONS.factory(name))}")
        out.print()


def register(app: typer.Typer) -> None:
    app.command("models")(models)
