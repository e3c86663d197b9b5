"""Distributional (C51) Q-learning agent: return distributions over a fixed support."""

from __future__ import annotations

import torch

from rlpyt.agents.base import AgentStep
from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.distributions.epsilon_greedy import CategoricalEpsilonGreedy
from rlpyt.models.dqn.mlp import check_n_atoms
from rlpyt.utils.collections import namedarraytuple

__all__ = ["AgentInfo", "CatDqnAgent"]

AgentInfo = namedarraytuple("AgentInfo", ["p"])

DEFAULT_V_MIN, DEFAULT_V_MAX = -10.0, 10.0  # CategoricalDQN's defaults.


class CatDqnAgent(DqnAgent):
    """``DqnAgent`` whose model gives ``p [..., n_actions, n_atoms]``, the probability of
    each atom of the support ``z = linspace(V_min, V_max, n_atoms)`` per action.

    Acting is epsilon-greedy on the expected values ``sum_j p[..., a, j] z[j]``
    (``CategoricalEpsilonGreedy``); ``step`` returns ``AgentStep(action, AgentInfo(p))``.
    ``CategoricalDQN`` sets the support at ``initialize`` with
    ``give_V_min_max(V_min, V_max)``; until then it is ``[-10, 10]``.

    Args:
        n_atoms: atoms of the support (default 51).
        other keywords: as ``DqnAgent``; with ``ModelCls=None`` the model is
            ``CatDqnMlpModel``.
    """

    def __init__(self, n_atoms: int = 51, **kwargs):
        check_n_atoms(n_atoms)
        super().__init__(**kwargs)
        self.n_atoms = n_atoms
        self.V_min, self.V_max = DEFAULT_V_MIN, DEFAULT_V_MAX

    def default_model_cls(self):
        from rlpyt.models.dqn.mlp import CatDqnMlpModel

        return CatDqnMlpModel

    def make_env_to_model_kwargs(self, env_spaces) -> dict:
        return dict(super().make_env_to_model_kwargs(env_spaces), n_atoms=self.n_atoms)

    def make_distribution(self, n_actions: int):
        return CategoricalEpsilonGreedy(dim=n_actions, z=self.support(), epsilon=self.eps_init)

    def support(self) -> torch.Tensor:
        """The atoms ``z`` ``[n_atoms]`` (CPU)."""
        return torch.linspace(self.V_min, self.V_max, self.n_atoms)

    def give_V_min_max(self, V_min: float, V_max: float) -> None:
        """Set the support's range (called by ``CategoricalDQN``)."""
        if not V_min < V_max:
            raise ValueError(f"V_min={V_min!r} must be smaller than V_max={V_max!r}")
        self.V_min, self.V_max = float(V_min), float(V_max)
        if self.distribution is not None:
            self.distribution.set_z(self.support())

    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        p = self.model(*self.to_agent_device(observation, prev_action, prev_reward))
        action = self.distribution.sample(p)
        return self.to_cpu(AgentStep(action=action, agent_info=AgentInfo(p=p)))

    def state_dict(self) -> dict:
        return dict(super().state_dict(), support=(self.V_min, self.V_max))

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        super().load_state_dict(state_dict, strict=strict)
        if "support" in state_dict:
            self.give_V_min_max(*state_dict["support"])
