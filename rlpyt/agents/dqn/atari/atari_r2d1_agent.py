"""R2D1 agents with the Atari recurrent conv Q-network."""

from __future__ import annotations

from rlpyt.agents.dqn.atari.mixin import AtariMixin
from rlpyt.agents.dqn.r2d1_agent import R2d1Agent, R2d1AlternatingAgent
from rlpyt.models.dqn.atari_r2d1_model import AtariR2d1Model

__all__ = ["AtariR2d1Agent", "AtariR2d1AlternatingAgent"]


class AtariR2d1Agent(AtariMixin, R2d1Agent):
    """``R2d1Agent`` whose default model is ``AtariR2d1Model`` (``model_kwargs`` such as
    ``dict(lstm_size=256, dueling=True)`` go to it).  Keywords as ``R2d1Agent``."""

    def default_model_cls(self):
        return AtariR2d1Model


class AtariR2d1AlternatingAgent(AtariMixin, R2d1AlternatingAgent):
    """``AtariR2d1Agent`` for the alternating samplers.  Keywords as ``R2d1Agent``."""

    def default_model_cls(self):
        return AtariR2d1Model
