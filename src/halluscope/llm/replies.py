"""Reading structured data out of an LLM's free-text reply, and saying so when it cannot be read.

Why lenient: servers asked for JSON still wrap it in a Markdown fence or a sentence of preamble, and a
judge that refused those replies would fail answers the model did grade. What cannot be read still raises,
so the caller records a failure for that answer rather than guessing.

Why a reply that cannot be read is a failure, not an ``unjudged`` verdict: a judge whose every reply is out
of form (a small model, a prompt cut by the context) would otherwise leave every claim unjudged, every
metric empty, and the run green. As a failure it counts against ``--max-failure-share``, and the stage
passes ``keep`` to :meth:`~halluscope.llm.client.ChatClient.chat` so that such a reply is not cached and
the next run asks again.
"""

from __future__ import annotations

from typing import Any

from halluscope.jsonio import loads_json

__all__ = ["json_object", "unreadable_reply"]


def unreadable_reply(stage: str, why: str, *, finish_reason: str | None = None, count: str = "") -> str:
    """One line for a :class:`~halluscope.stages.Failure`: ``stage``'s reply could not be read, and why.

    ``why`` names the problem with a piece of the reply; ``count`` (e.g. "2 of 5 replies") says how many
    of an item's replies were unreadable when there were several; a reply that stopped at the token limit
    (``finish_reason`` "length") says to raise ``max_tokens``.
    """
    which = f"{count} could not be read" if count else "reply could not be read"
    cut = "; it stopped at the token limit, so raise max_tokens" if finish_reason == "length" else ""
    return (
        f"{stage}: {which}: {why}{cut}. Not cached: re-run to ask again, or use a judge model that answers "
        "in the asked form"
    )


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
