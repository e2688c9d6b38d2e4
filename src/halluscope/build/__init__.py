"""Benchmark construction from scene graphs: questions whose answers the graph decides.

- :mod:`halluscope.build.reefknot`: Reefknot-style yes/no twins, multiple choice and VQA about relations.
- :mod:`halluscope.build.relations`: what relation words mean (category, synonyms, implications, the
  obvious facts not worth asking).
"""

from halluscope.build.reefknot import (
    BuildOptions,
    BuiltReefknot,
    build_reefknot,
    build_reefknot_async,
    verify_build,
)
from halluscope.build.relations import RelationClassifier, relation_holds

__all__ = [
    "BuildOptions",
    "BuiltReefknot",
    "RelationClassifier",
    "build_reefknot",
    "build_reefknot_async",
    "relation_holds",
    "verify_build",
]
