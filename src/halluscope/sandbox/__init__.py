"""The sandbox for untrusted, LLM-written verification programs (PROVE).

Programs never run in the halluscope process: :class:`Sandbox` hands them, with a scene graph as data, to
a worker process that forks one restricted process per program (resource limits, a seccomp allow-list,
RestrictedPython) and returns each outcome as JSON. See ``runner.py`` and ``_child.py`` for the layers.
"""

from halluscope.sandbox.runner import OUTCOMES, Limits, ProgramResult, Sandbox, SandboxUnavailableError

__all__ = ["OUTCOMES", "Limits", "ProgramResult", "Sandbox", "SandboxUnavailableError"]
