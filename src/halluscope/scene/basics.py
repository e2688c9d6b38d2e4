"""The smallest pieces of a scene graph: one directed relation, and the normalised key of an entity name.

Their own module so that what reads a graph (``direction``, ``kinds``, ``names``) and the graph itself
(:mod:`halluscope.scene.graph`, which asks ``direction`` for the reading order of its relations) import
these from below instead of from each other. ``halluscope.scene.graph`` re-exports both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Relation:
    """One directed relation between two entities."""

    subject: str
    predicate: str
    object: str

    def text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"


def normalise_name(name: str) -> str:
    """Lower-case, single-spaced form of an entity name, used as the node key."""
    return " ".join(name.lower().split())
