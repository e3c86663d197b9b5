"""Distributional (C51) DQN agent with the Atari conv network."""

from __future__ import annotations

from rlpyt.agents.dqn.atari.mixin import AtariMixin
from rlpyt.agents.dqn.catdqn_agent import CatDqnAgent
from rlpyt.models.dqn.atari_catdqn_model import AtariCatDqnModel

__all__ = ["AtariCatDqnAgent"]


class AtariCatDqnAgent(AtariMixin, CatDqnAgent):
    """``CatDqnAgent`` whose default model is ``AtariCatDqnModel``.  Keywords as
    ``CatDqnAgent`` (``n_atoms=51``, then those of ``DqnAgent``)."""

    def default_model_cls(self):
        return AtariCatDqnModel

    def make_env_to_model_kwargs(self, env_spaces) -> dict:
        return dict(super().make_env_to_model_kwargs(env_spaces), n_atoms=self.n_atoms)
