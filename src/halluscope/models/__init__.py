"""Model backends behind one async ``generate`` interface, named ``provider/model``."""

from halluscope.models.base import ChatTurn, GenerateRequest, GenerateResult, Model, TokenStep
from halluscope.registry import Registry

#: Providers by name; the factory takes the part after "provider/" and keyword options.
MODELS: Registry[Model] = Registry(
    "model provider",
    {
        "openai": "halluscope.models.openai:OpenAIModel.from_spec",
        "hf": "halluscope.models.hf:HFModel.from_spec",
        "replay": "halluscope.models.replay:ReplayModel.from_spec",
        "blind": "halluscope.models.baselines:BlindModel.from_spec",
        "scene-oracle": "halluscope.models.baselines:SceneOracleModel.from_spec",
        "sim": "halluscope.models.sim:SimModel.from_spec",
    },
    {
        "openai": "any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp): openai/<model>",
        "hf": "transformers image-text-to-text models (LLaVA-1.5, LLaVA-NeXT, Qwen2-VL): hf/<repo-or-path>",
        "replay": "answers from a file (halluscope JSONL or a benchmark's official layout): replay/<file>",
        "blind": "baseline: a text-only LLM answers without the image (language prior): blind/<llm>",
        "scene-oracle": "baseline: a text-only LLM answers from the scene graph as text: scene-oracle/<llm>",
        "sim": "calibration simulators answering from the scene graph: sim/oracle, sim/hallucinate?object=0.2",
    },
)

__all__ = ["MODELS", "ChatTurn", "GenerateRequest", "GenerateResult", "Model", "TokenStep"]
