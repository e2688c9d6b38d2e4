"""Mitigations as model wrappers: each takes a :class:`~halluscope.models.Model` and returns one, so any
backend can be measured with and without a mitigation and the two runs compared.

Named in model specs as a prefix (``eyes-closed:openai/gpt-4o``) or with ``--mitigation``; a factory takes the
inner model and keyword options: ``MITIGATIONS.create("eyes-closed", inner=model, describe_max_tokens=256)``.
"""

from halluscope.models.mitigations import MITIGATIONS

__all__ = ["MITIGATIONS"]
