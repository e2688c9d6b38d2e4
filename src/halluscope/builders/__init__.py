"""Benchmark construction from scene graphs: questions whose answers the graph decides.

- :mod:`halluscope.builders.reefknot`: Reefknot-style yes/no twins, multiple choice and VQA about relations.
- :mod:`halluscope.builders.relations`: what relation words mean (category, synonyms, implications, the
  obvious facts not worth asking).
"""

from halluscope.builders.reefknot import (
    BuildOptions,
    BuiltReefknot,
    build_reefknot,
    build_reefknot_async,
    verify_build,
)
from halluscope.builders.relations import RelationClassifier, relation_holds

__all__ = [
    "BuildOptions",
    "BuiltReefknot",
    "RelationClassifier",
    "build_reefknot",
    "build_reefknot_async",
    "relation_holds",
    "verify_build",
]
