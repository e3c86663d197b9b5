"""Gaussian policy-gradient agents with the MuJoCo MLP/LSTM models."""

from __future__ import annotations

from rlpyt.agents.base import AlternatingRecurrentAgentMixin
from rlpyt.agents.pg.base import RecurrentPgAgentMixin
from rlpyt.agents.pg.gaussian import GaussianPgAgentBase
from rlpyt.models.pg.mujoco_ff_model import MujocoFfModel
from rlpyt.models.pg.mujoco_lstm_model import MujocoLstmModel

__all__ = ["AlternatingMujocoLstmAgent", "MujocoFfAgent", "MujocoLstmAgent"]


class MujocoMixin:
    def make_env_to_model_kwargs(self, env_spaces):
        return dict(observation_shape=env_spaces.observation.shape,
                    action_size=int(env_spaces.action.shape[0]))


class MujocoFfAgent(MujocoMixin, GaussianPgAgentBase):
    """Gaussian agent with ``MujocoFfModel`` (optional observation normalisation)."""

    def default_model_cls(self):
        return MujocoFfModel


class MujocoLstmAgent(MujocoMixin, RecurrentPgAgentMixin, GaussianPgAgentBase):
    """Gaussian agent with ``MujocoLstmModel``."""

    def default_model_cls(self):
        return MujocoLstmModel


class AlternatingMujocoLstmAgent(AlternatingRecurrentAgentMixin, MujocoLstmAgent):
    """``MujocoLstmAgent`` for the alternating samplers."""
