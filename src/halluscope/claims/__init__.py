"""Claim extractors: free-form answer → (subject, relation, object) claims."""

from halluscope.registry import Registry
from halluscope.stages import Extractor

EXTRACTORS: Registry[Extractor] = Registry(
    "extractor",
    {
        "rules": "halluscope.claims.rules:RulesExtractor",
        "llm": "halluscope.claims.llm:LLMExtractor",
    },
    {
        "rules": "offline: spaCy + SceneGraphParser (no model calls)",
        "llm": "Tri-HE-style LLM extraction over any OpenAI-compatible endpoint",
    },
)

__all__ = ["EXTRACTORS"]
