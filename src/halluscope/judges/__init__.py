"""Judges, by the kind of judge slot they fill: claims (claim + scene graph → supported / hallucinated
(object | relation | attribute) / unjudged), entailment between statements, whole answers against their
reference (HallusionBench, HQH, MMHal-Bench, each graded its own way), and a statement against the image.

A benchmark names its kind (``judge_kind``), so ``--judge`` offers exactly the judges that can score it,
and a judge of another kind is refused before any answer is collected, naming where it belongs (which
benchmarks each kind serves is known a layer up, from the benchmarks' own ``judge_kind``:
``halluscope.benchmarks.judge_slots``). Importing this package imports no judge: ``--help`` lists the names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from halluscope.registry import Registry

if TYPE_CHECKING:
    from halluscope.stages import AnyJudge

JUDGES: Registry[AnyJudge] = Registry(
    "judge",
    {
        "similarity": "halluscope.judges.similarity:SimilarityJudge",
        "typed": "halluscope.judges.typed:TypedJudge",
        "llm": "halluscope.judges.llm:LLMJudge",
        "vlm": "halluscope.judges.vlm:VLMJudge",
    },
    {
        "similarity": "Tri-HE's embedding-similarity judge (offline; default model all-MiniLM-L6-v2)",
        "typed": "offline: objects checked with WordNet, then the relation; tells object from relation errors",
        "llm": "Tri-HE's LLM judge over any OpenAI-compatible endpoint (per claim or batched)",
        "vlm": "a VLM on any OpenAI-compatible endpoint sees the photo: Tri-HE claims three ways",
    },
)

#: Judges of HQH's answers against the image information (``judge_kind`` "hqh").
HQH_JUDGES: Registry[AnyJudge] = Registry(
    "HQH judge",
    {
        "hqh-rules": "halluscope.judges.hqh_rules:HQHRulesJudge",
        "hqh-llm": "halluscope.judges.hqh:HQHLLMJudge",
        "vlm": "halluscope.judges.vlm:VLMJudge",
    },
    {
        "hqh-rules": "offline HQH judge: count, yes/no, OCR, attribute rules; region lookup; else unjudged",
        "hqh-llm": "HQH's judge over any OpenAI-compatible endpoint: correct/incorrect + extra contradicting claims",
        "vlm": "a VLM on any OpenAI-compatible endpoint sees the photo and judges the answer",
    },
)

#: Raters of MMHal-Bench's answers (``judge_kind`` "mmhal").
MMHAL_JUDGES: Registry[AnyJudge] = Registry(
    "MMHal-Bench judge",
    {"mmhal-llm": "halluscope.judges.mmhal:MMHalLLMJudge"},
    {"mmhal-llm": "MMHal-Bench's 0-6 rating of an answer over any OpenAI-compatible endpoint (or local)"},
)

#: Scorers of GAVIE's answers (``judge_kind`` "gavie").
GAVIE_JUDGES: Registry[AnyJudge] = Registry(
    "GAVIE judge",
    {"gavie-llm": "halluscope.judges.gavie:GavieLLMJudge"},
    {"gavie-llm": "GAVIE's 0-10 relevancy and accuracy over any OpenAI-compatible endpoint (or local)"},
)

#: Judges of benchmarks that score by bidirectional entailment (Reefknot's VQA task; ``judge_kind``).
ENTAILMENT_JUDGES: Registry[AnyJudge] = Registry(
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

#: Graders of whole answers to yes/no questions against the reference (HallusionBench; ``judge_kind`` "answers").
ANSWER_JUDGES: Registry[AnyJudge] = Registry(
    "answer judge",
    {
        "parser": "halluscope.judges.hallusionbench:ParserGrader",
        "vlmevalkit": "halluscope.judges.hallusionbench:VLMEvalKitGrader",
        "llm": "halluscope.judges.hallusionbench:LLMGrader",
    },
    {
        "parser": "offline: halluscope's yes/no reader against the label; no readable yes/no is 'unclear'",
        "vlmevalkit": "offline: VLMEvalKit's exact-matching reading and rating (reproduces its score sheet)",
        "llm": "an LLM grades the answer against the reference (the paper's way), any OpenAI-compatible endpoint",
    },
)

#: p(image shows statement) for PROVE's tuples the scene graph does not cover (``judge_kind`` "visual-entailment").
VISUAL_ENTAILMENT_JUDGES: Registry[AnyJudge] = Registry(
    "visual entailment judge",
    {
        "none": "halluscope.judges.visual_entailment:NoEntailment",
        "vlm": "halluscope.judges.visual_entailment:VLMEntailment",
        "itm": "halluscope.judges.visual_entailment:ITMEntailment",
    },
    {
        "none": "no image is looked at (p = 0): graph-only tscore, a lower bound",
        "vlm": "a VLM on any OpenAI-compatible endpoint answers yes / maybe / no about the image",
        "itm": "a transformers image-text matching model (default Salesforce/blip-itm-base-coco)",
    },
)


def judge_registry(kind: str) -> Registry[AnyJudge]:
    """The judges that fill the judge slot of a benchmark whose ``judge_kind`` is ``kind``.

    One function, so the orchestrator never needs to know which kinds of judges exist.
    """
    if kind not in JUDGE_KINDS:
        raise ValueError(f"no judges of kind {kind!r}; known kinds: {', '.join(sorted(JUDGE_KINDS))}")
    return JUDGE_KINDS[kind]


#: Every kind of judge slot, with its registry: what ``halluscope list`` shows.
JUDGE_KINDS: dict[str, Registry[AnyJudge]] = {
    "claims": JUDGES,
    "entailment": ENTAILMENT_JUDGES,
    "answers": ANSWER_JUDGES,
    "visual-entailment": VISUAL_ENTAILMENT_JUDGES,
    "hqh": HQH_JUDGES,
    "mmhal": MMHAL_JUDGES,
    "gavie": GAVIE_JUDGES,
}

__all__ = [
    "ANSWER_JUDGES",
    "ENTAILMENT_JUDGES",
    "GAVIE_JUDGES",
    "HQH_JUDGES",
    "JUDGES",
    "JUDGE_KINDS",
    "MMHAL_JUDGES",
    "VISUAL_ENTAILMENT_JUDGES",
    "judge_registry",
]
