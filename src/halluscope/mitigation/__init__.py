"""Mitigations as model wrappers: each takes a :class:`~halluscope.models.Model` and returns one, so any
backend can be measured with and without a mitigation and the two runs compared.

Named in model specs as a prefix (``eyes-closed:openai/gpt-4o``) or with ``--mitigation``; a factory takes the
inner model and keyword options: ``MITIGATIONS.create("eyes-closed", inner=model, describe_max_tokens=256)``.
"""

from halluscope.models.base import Model
from halluscope.registry import Registry

MITIGATIONS: Registry[Model] = Registry(
    "mitigation",
    {
        "eyes-closed": "halluscope.mitigation.eyes_closed:eyes_closed",
        "general-description": "halluscope.mitigation.eyes_closed:general_description",
        "dtc": "halluscope.mitigation.dtc:dtc",
    },
    {
        "eyes-closed": "Tri-HE: describe the question's objects and relations with the image, then answer "
        "from that description with the image withheld (works over any chat backend)",
        "general-description": "Tri-HE's ablation: describe the image in general, then answer without it",
        "dtc": "Reefknot's Detect-then-Calibrate for hf models: when the answer options' entropy is high, "
        "contrast the final layer with an intermediate one (dtc[layer=-2,alpha=0.1]:hf/<model>)",
    },
)

__all__ = ["MITIGATIONS"]
