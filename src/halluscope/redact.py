"""Masking secrets in what halluscope writes or prints: spec.json, respond.json, error lines, the terminal.

Users put keys where halluscope cannot refuse them: in a base URL (``http://user:sk-...@host/v1``), in a
URL's query (``?api_key=sk-...``), in a model spec's options. The request still needs them, so they are
kept where the request is made and masked only where text leaves the program: a file of the run folder, a
message, a log line. One rule decides what is secret everywhere, so ``max_tokens`` is shown the same way in
``spec.json``, in a model label and in an error message.

Secret names are told by whole words (split at ``_``, ``-``, ``.`` and lower-to-upper case changes), so
``api_key``, ``apiKey``, ``access_token`` and ``password`` are secret while ``max_tokens`` and
``keyword`` are not; a name ending in ``env`` (``api_key_env``) names an environment variable, not a secret.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

__all__ = ["MASK", "is_secret_name", "mask_data", "mask_text", "mask_url"]

#: What a masked secret is replaced with.
MASK = "***"

#: Words of a name that mark its value as a secret.
_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "auth", "credential"}
)

_WORD_SPLIT = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")

#: A URL with a scheme, up to whitespace, a quote, a bracket or a comma (replicas are comma-separated).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>(){}\[\],]+")

#: ``name=value`` after the start of the text, whitespace, ``?``, ``&``, ``;``, ``,`` or ``[`` (a query or
#: an option list); the value runs to the next separator. A path such as ``/runs/token=1`` is left alone.
_ASSIGNMENT = re.compile(r"(?:(?<=^)|(?<=[\s?&;,\[]))([A-Za-z_][\w\-]*)=([^&\s,;\]'\"]*)")


def is_secret_name(name: str) -> bool:
    """Whether an option, query parameter or field named ``name`` holds a secret (whole-word rule)."""
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    if not words or words[-1] == "env":
        return False
    return not _SECRET_WORDS.isdisjoint(words)


def _mask_netloc(parts: SplitResult) -> str:
    netloc = parts.netloc
    if "@" not in netloc:
        return netloc
    userinfo, _, host = netloc.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    # user:password@ keeps the user (it tells accounts apart); a lone user@ may itself be the token
    return f"{user}:{MASK}@{host}" if colon else f"{MASK}@{host}"


def mask_url(url: str) -> str:
    """``url`` with its user-info and secret-named query values masked; anything else unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL after all (a bad IPv6 literal, ...): mask what looks like name=value
        return _mask_assignments(url)
    netloc = _mask_netloc(parts)
    query = _mask_assignments(parts.query, anywhere=True) if parts.query else parts.query
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _mask_assignments(text: str, *, anywhere: bool = False) -> str:
    def hide(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        return f"{name}={MASK}" if value and is_secret_name(name) else match.group(0)

    if anywhere:  # a query string: every '&'-separated part is an assignment
        return "&".join(_ASSIGNMENT.sub(hide, part) for part in text.split("&"))
    return _ASSIGNMENT.sub(hide, text)


def mask_text(text: str) -> str:
    """Free text (a message, a model spec, a comma list of URLs) with every secret in it masked."""
    if "=" not in text and "@" not in text:
        return text
    masked = _URL.sub(lambda match: mask_url(match.group(0)), text)
    return _mask_assignments(masked)


def mask_data(value: Any) -> Any:
    """A JSON-like value with the secrets inside its texts (URLs, ``name=value`` options) masked.

    Field names are not judged: a record's fields are chosen by halluscope (``responses_key`` names a field
    of the answers file, not a secret), while a URL or a spec string is what a user typed.
    """
    if isinstance(value, dict):
        return {key: mask_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_data(item) for item in value]
    if isinstance(value, str):
        return mask_text(value)
    return value
