"""The names of the mitigations a model spec may wrap around a model (``eyes-closed:openai/gpt-4o``).

The table lives with the models, by dotted path, so that parsing and creating a spec
(:mod:`halluscope.models.spec`) needs no import of :mod:`halluscope.mitigation`, whose wrappers import the
models: the wrappers are imported only when a spec names one. :mod:`halluscope.mitigation` re-exports it.
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
