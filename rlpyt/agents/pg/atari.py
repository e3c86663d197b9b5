"""Policy-gradient agents with the Atari conv models (image observations)."""

from __future__ import annotations

from rlpyt.agents.base import AlternatingRecurrentAgentMixin
from rlpyt.agents.pg.base import RecurrentPgAgentMixin
from rlpyt.agents.pg.categorical import CategoricalPgAgentBase
from rlpyt.models.pg.atari_ff_model import AtariFfModel
from rlpyt.models.pg.atari_lstm_model import AtariLstmModel

__all__ = ["AlternatingAtariLstmAgent", "AtariFfAgent", "AtariLstmAgent"]


class AtariMixin:
    """Model sizes from an image observation ``[C, H, W]`` and a discrete action space."""

    def make_env_to_model_kwargs(self, env_spaces):
        return dict(image_shape=env_spaces.observation.shape,
                    output_size=int(env_spaces.action.n))


class AtariFfAgent(AtariMixin, CategoricalPgAgentBase):
    """Categorical agent with ``AtariFfModel`` (conv torso, policy and value heads)."""

    def default_model_cls(self):
        return AtariFfModel


class AtariLstmAgent(AtariMixin, RecurrentPgAgentMixin, CategoricalPgAgentBase):
    """Categorical agent with ``AtariLstmModel`` (conv torso, LSTM with prev action/reward)."""

    def default_model_cls(self):
        return AtariLstmModel


class AlternatingAtariLstmAgent(AlternatingRecurrentAgentMixin, AtariLstmAgent):
    """``AtariLstmAgent`` for the alternating samplers."""
