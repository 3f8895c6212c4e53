"""One exception hierarchy with user-facing messages.

Every error a user can provoke (bad scenario file, bad option, a solver that
fails) is a :class:`HetschedError`. The CLI turns it into one line on stderr and
exit code 2; library users can catch the specific subclass.
"""

from __future__ import annotations

__all__ = ["HetschedError", "ModelError", "ScenarioError", "SolverError", "UnstableError"]


class HetschedError(Exception):
    """Base class: the message is complete and meant for the user."""


class ModelError(HetschedError, ValueError):
    """A system, net or MDP description is invalid (names the field and value)."""


class ScenarioError(ModelError):
    """A scenario file or id is invalid (names the file, field and value)."""


class SolverError(HetschedError, RuntimeError):
    """A numerical solver failed or did not converge."""


class UnstableError(HetschedError):
    """A requested quantity does not exist because the system is unstable."""
