"""Name → implementation registries, resolved lazily.

Implementations are named by dotted path and imported only when chosen, so ``import halluscope`` and
``halluscope --help`` never load torch, spaCy or an HTTP SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownComponentError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps short names to ``"module:factory"`` paths; the factory takes keyword options."""

    def __init__(
        self, kind: str, entries: dict[str, str], descriptions: dict[str, str] | None = None
    ) -> None:
        self.kind = kind
        self._entries = dict(entries)
        self.descriptions = dict(descriptions or {})

    def register(self, name: str, target: str, description: str = "") -> None:
        self._entries[name] = target
        if description:
            self.descriptions[name] = description

    def names(self) -> list[str]:
        return sorted(self._entries)

    def registered(self) -> list[str]:
        """The names in the order they were registered (the catalogue's own order, for messages)."""
        return list(self._entries)

    def factory(self, name: str) -> Callable[..., T]:
        if name not in self._entries:
            raise UnknownComponentError(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}"
            )
        module_name, _, attr = self._entries[name].partition(":")
        module = importlib.import_module(module_name)
        target: object = module
        for part in attr.split("."):  # "Class.from_options" names a classmethod
            target = getattr(target, part)
        factory: Callable[..., T] = target  # type: ignore[assignment]
        return factory

    def create(self, name: str, **options: Any) -> T:
        return self.factory(name)(**options)
