"""DDPG agent: a deterministic policy with Gaussian exploration noise and one critic."""

from __future__ import annotations

import torch

from rlpyt.agents.base import AgentStep
from rlpyt.agents.qpg.base import QpgAgent
from rlpyt.distributions.gaussian import DistInfo, Gaussian
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple

__all__ = ["AgentInfo", "DdpgAgent"]

AgentInfo = namedarraytuple("AgentInfo", ["mu"])


def _check_std(owner: str, name: str, value, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        valid = "a positive number or None" if allow_none else "a positive number"
        raise ValueError(f"{owner}: {name}={value!r} must be {valid}")


class DdpgAgent(QpgAgent):
    """Deterministic policy ``mu(s)`` plus Gaussian exploration, with a critic ``Q(s, a)``.

    Sampling adds ``N(0, action_std^2)`` noise (in model units, where each action
    dimension spans ``[-1, 1]``; clipped to ``±action_noise_clip`` if set) to ``mu(s)``
    and clips to ``[-1, 1]`` before scaling to the env's bounds.  Evaluation acts
    with ``mu(s)``.  Works on any env with a bounded ``Box`` action space.

    Args:
        ModelCls: policy class (default ``MuMlpModel``).
        QModelCls: critic class (default ``QofMuMlpModel``).
        model_kwargs: policy keywords (default ``hidden_sizes=[256, 256]``).
        q_model_kwargs: critic keywords (default ``hidden_sizes=[256, 256]``).
        initial_model_state_dict: policy state dict, or a whole ``state_dict()``
            (default None).
        initial_q_model_state_dict: critic state dict (default None).
        action_std: exploration noise std in model units (default 0.1).
        action_noise_clip: clip of that noise, or None (default None).
        pretrain_std: exploration std before learning starts; None keeps ``action_std``;
            ``"uniform"``: uniformly random actions over the box, as the TD3 paper's
            first steps (default None).
    """

    has_target_model = True

    def __init__(
        self,
        ModelCls=None,
        QModelCls=None,
        model_kwargs=None,
        q_model_kwargs=None,
        initial_model_state_dict=None,
        initial_q_model_state_dict=None,
        action_std: float = 0.1,
        action_noise_clip: float | None = None,
        pretrain_std: float | str | None = None,
    ):
        name = type(self).__name__
        _check_std(name, "action_std", action_std, allow_none=False)
        _check_std(name, "action_noise_clip", action_noise_clip)
        if pretrain_std != "uniform" and (isinstance(pretrain_std, bool) or not (
                pretrain_std is None
                or isinstance(pretrain_std, (int, float)) and pretrain_std > 0)):
            raise ValueError(f"{name}: pretrain_std={pretrain_std!r} must be a positive "
                             f"number, None or 'uniform'")
        super().__init__(
            ModelCls, QModelCls, model_kwargs, q_model_kwargs,
            initial_model_state_dict, initial_q_model_state_dict,
        )
        self.action_std = action_std
        self.action_noise_clip = action_noise_clip
        self.pretrain_std = pretrain_std

    def default_model_cls(self):
        from rlpyt.models.qpg.mlp import MuMlpModel

        return MuMlpModel

    def default_q_model_cls(self):
        from rlpyt.models.qpg.mlp import QofMuMlpModel

        return QofMuMlpModel

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        dim = int(env_spaces.action.shape[0])
        self.distribution = Gaussian(
            dim=dim, std=self.action_std, noise_clip=self.action_noise_clip, clip=1.0
        )

    # ---- acting ------------------------------------------------------------------
    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        mu = self.model(*self._on_device(observation, prev_action, prev_reward))
        if self._mode == "eval":
            action = mu
        elif self._pretraining and self.pretrain_std == "uniform":
            action = 2 * torch.rand_like(mu) - 1
        else:
            action = self.distribution.sample(DistInfo(mean=mu))
        agent_step = AgentStep(action=self.to_env_action(action), agent_info=AgentInfo(mu=mu))
        return buffer_to(agent_step, "cpu")

    def sample_mode(self, itr):
        super().sample_mode(itr)
        pretrain = self._pretraining and self.pretrain_std not in (None, "uniform")
        self.distribution.set_std(self.pretrain_std if pretrain else self.action_std)

    # ---- training ------------------------------------------------------------------
    def mu(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """The policy's action (model units), with gradients to the policy."""
        return self.model(*self._on_device(observation, prev_action, prev_reward))

    def q_at_mu(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """``Q(s, mu(s))`` for the policy loss: gradients reach the policy only.
        Twin-critic agents return the first critic's value."""
        mu = self.mu(observation, prev_action, prev_reward)
        q = self.q_for_policy(observation, prev_action, prev_reward, mu)
        return q[0] if self.twin_q else q

    @torch.no_grad()
    def target_action(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """The target policy's action (model units)."""
        return self.target_model(*self._on_device(observation, prev_action, prev_reward))

    @torch.no_grad()
    def target_q_at_mu(self, observation, prev_action, prev_reward):
        """Target critic value(s) at the target policy's action."""
        action = self.target_action(observation, prev_action, prev_reward)
        return self.target_q(observation, prev_action, prev_reward, action)
