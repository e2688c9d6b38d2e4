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
)

__all__ = ["MODELS", "ChatTurn", "GenerateRequest", "GenerateResult", "Model", "TokenStep"]
