"""DQN agent with the Atari conv Q-network."""

from __future__ import annotations

from rlpyt.agents.dqn.atari.mixin import AtariMixin
from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.models.dqn.atari_dqn_model import AtariDqnModel

__all__ = ["AtariDqnAgent"]


class AtariDqnAgent(AtariMixin, DqnAgent):
    """``DqnAgent`` whose default model is ``AtariDqnModel`` (``model_kwargs`` such as
    ``dict(dueling=True)`` go to it).  Keywords as ``DqnAgent``."""

    def default_model_cls(self):
        return AtariDqnModel
