"""Claim judges: claim + scene graph → supported / hallucinated (object | relation | attribute) / unjudged."""

from halluscope.registry import Registry
from halluscope.stages import Judge

JUDGES: Registry[Judge] = Registry(
    "judge",
    {
        "similarity": "halluscope.judges.similarity:SimilarityJudge",
        "typed": "halluscope.judges.typed:TypedJudge",
        "llm": "halluscope.judges.llm:LLMJudge",
        "hqh-llm": "halluscope.judges.hqh:HQHLLMJudge",
        "hqh-rules": "halluscope.judges.hqh_rules:HQHRulesJudge",
        "vlm": "halluscope.judges.vlm:VLMJudge",
        "mmhal-llm": "halluscope.judges.mmhal:MMHalLLMJudge",
    },
    {
        "similarity": "Tri-HE's embedding-similarity judge (offline; default model all-MiniLM-L6-v2)",
        "typed": "offline: objects checked with WordNet, then the relation; tells object from relation errors",
        "llm": "Tri-HE's LLM judge over any OpenAI-compatible endpoint (per claim or batched)",
        "hqh-llm": "HQH's judge over any OpenAI-compatible endpoint: correct/incorrect + extra contradicting claims",
        "hqh-rules": "offline HQH judge: count, yes/no, OCR, attribute rules; region lookup; else unjudged",
        "vlm": "a VLM on any OpenAI-compatible endpoint sees the photo: Tri-HE claims three ways, HQH answers",
        "mmhal-llm": "MMHal-Bench's 0-6 rating of an answer over any OpenAI-compatible endpoint (or local)",
    },
)

#: Judges of benchmarks that score by bidirectional entailment (Reefknot's VQA task; ``judge_kind``).
ENTAILMENT_JUDGES: Registry[Judge] = Registry(
    "entailment judge",
    {
        "nli": "halluscope.judges.entailment:NLIEntailment.from_options",
        "llm": "halluscope.judges.entailment:LLMEntailment.from_options",
    },
    {
        "nli": "a transformers NLI model (default microsoft/deberta-large-mnli; --judge-model NAME or folder)",
        "llm": "entailment asked of an LLM over any OpenAI-compatible endpoint",
    },
)



def judge_registry(kind: str) -> Registry[Judge]:
    """The judges that fill the judge slot of a benchmark whose ``judge_kind`` is ``kind``.

    One function, so the orchestrator never needs to know which kinds of judges exist.
    """
    registries = {"claims": JUDGES, "entailment": ENTAILMENT_JUDGES}
    if kind not in registries:
        raise ValueError(f"no judges of kind {kind!r}; known kinds: {', '.join(sorted(registries))}")
    return registries[kind]


__all__ = ["ENTAILMENT_JUDGES", "JUDGES", "judge_registry"]
