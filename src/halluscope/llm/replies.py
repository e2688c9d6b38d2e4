"""Reading structured data out of an LLM's free-text reply.

Why lenient: servers asked for JSON still wrap it in a Markdown fence or a sentence of preamble, and a
judge that refused those replies would fail answers the model did grade. What cannot be read still raises,
so the caller records a failure for that answer rather than guessing.
"""

from __future__ import annotations

from typing import Any

from halluscope.jsonio import loads_json

__all__ = ["json_object"]


def json_object(reply: str) -> Any:
    """The JSON in ``reply``: the whole text, without a Markdown fence, else its outermost ``{...}``.

    Raises ``ValueError`` (``json.JSONDecodeError``) when neither is JSON.
    """
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[4:] if text.lower().startswith("json") else text
    try:
        return loads_json(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return loads_json(text[start : end + 1])  # raises ValueError when that is not JSON either
        raise
