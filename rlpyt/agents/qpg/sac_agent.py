"""SAC agent: a tanh-squashed Gaussian policy, twin critics and the entropy temperature."""

from __future__ import annotations

import math

import torch

from rlpyt.agents.base import AgentStep
from rlpyt.agents.qpg.base import QpgAgent
from rlpyt.distributions.gaussian import DistInfo, DistInfoStd, Gaussian
from rlpyt.models.qpg.temperature import EntropyTemperature
from rlpyt.models.utils import unwrap_parallel
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple

__all__ = ["AgentInfo", "SacAgent"]

AgentInfo = namedarraytuple("AgentInfo", ["dist_info"])

# The policy's log std is clamped to [-20, 2], as in the SAC reference implementation.
MIN_LOG_STD, MAX_LOG_STD = -20.0, 2.0


class SacAgent(QpgAgent):
    """Stochastic policy ``a = tanh(u)``, ``u ~ N(mean(s), std(s)^2)``, with twin critics.

    Works on any env with a bounded ``Box`` action space (actions are scaled from
    ``[-1, 1]`` to the env's bounds).  Sampling draws from the policy; evaluation acts
    with ``tanh(mean(s))``.  Before learning starts, sampling uses ``pretrain_std``
    around the (untrained) mean, or uniform random actions.

    The agent also owns the entropy temperature (``temperature``, an
    ``EntropyTemperature`` module holding ``log_alpha``), so ``state_dict`` covers the
    policy, both critics, their targets and alpha, and ``data_parallel`` wraps all
    trained parts.

    Args:
        ModelCls: policy class (default ``PiMlpModel``).
        QModelCls: critic class (default: ``TwinQofMuMlpModel``, both critics in one module; a
            single-critic class such as ``QofMuMlpModel`` is instantiated twice).
        model_kwargs: policy keywords (default ``hidden_sizes=[256, 256]``).
        q_model_kwargs: critic keywords (default ``hidden_sizes=[256, 256]``).
        v_model_kwargs: accepted so classic configs run; this SAC has no state-value
            network (the targets use the twin target critics), so it is unused.
        initial_model_state_dict: policy state dict, or a whole ``state_dict()``
            (default None).
        initial_q_model_state_dict: critic state dict (default None).
        pretrain_std: std of the pre-squash exploration before learning starts (0.75
            makes ``tanh`` of a near-zero mean roughly uniform), or ``"uniform"`` for
            uniform random actions over the box (default 0.75).
    """

    twin_q = True

    def __init__(
        self,
        ModelCls=None,
        QModelCls=None,
        model_kwargs=None,
        q_model_kwargs=None,
        v_model_kwargs=None,
        initial_model_state_dict=None,
        initial_q_model_state_dict=None,
        pretrain_std: float | str = 0.75,
    ):
        is_number = isinstance(pretrain_std, (int, float)) and not isinstance(pretrain_std, bool)
        if not (pretrain_std == "uniform" or (is_number and pretrain_std > 0)):
            raise ValueError(
                f"SacAgent: pretrain_std={pretrain_std!r} must be a positive number or 'uniform'"
            )
        super().__init__(
            ModelCls, QModelCls, model_kwargs, q_model_kwargs,
            initial_model_state_dict, initial_q_model_state_dict,
        )
        self.v_model_kwargs = v_model_kwargs
        self.pretrain_std = pretrain_std
        self.temperature = None

    def default_model_cls(self):
        from rlpyt.models.qpg.mlp import PiMlpModel

        return PiMlpModel

    def default_q_model_cls(self):
        from rlpyt.models.qpg.mlp import TwinQofMuMlpModel

        return TwinQofMuMlpModel

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        self.temperature = EntropyTemperature()
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        dim = int(env_spaces.action.shape[0])
        self.distribution = Gaussian(
            dim=dim, squash=1.0, min_std=math.exp(MIN_LOG_STD), max_std=math.exp(MAX_LOG_STD)
        )
        if self.pretrain_std != "uniform":
            self.pretrain_distribution = Gaussian(dim=dim, std=self.pretrain_std, squash=1.0)

    def trained_modules(self) -> dict[str, torch.nn.Module]:
        return dict(model=self.model, q_model=self.q_model, temperature=self.temperature)

    # ---- acting ------------------------------------------------------------------
    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        mean, log_std = self.model(*self._on_device(observation, prev_action, prev_reward))
        dist_info = DistInfoStd(mean=mean, log_std=log_std)
        if self._mode == "eval":
            action = torch.tanh(mean)
        elif self._pretraining and self.pretrain_std == "uniform":
            action = 2 * torch.rand_like(mean) - 1
        elif self._pretraining:
            action = self.pretrain_distribution.sample(DistInfo(mean=mean))
        else:
            action = self.distribution.sample(dist_info)
        agent_step = AgentStep(
            action=self.to_env_action(action), agent_info=AgentInfo(dist_info=dist_info)
        )
        return buffer_to(agent_step, "cpu")

    # ---- training ------------------------------------------------------------------
    def pi(self, observation, prev_action, prev_reward):
        """A reparameterised policy sample: ``(action, log_pi, dist_info)``, with the action
        in model units and ``log_pi`` its log density (tanh correction included)."""
        mean, log_std = self.model(*self._on_device(observation, prev_action, prev_reward))
        dist_info = DistInfoStd(mean=mean, log_std=log_std)
        action, log_pi = self.distribution.sample_loglikelihood(dist_info)
        return action, log_pi, dist_info

    @property
    def alpha(self) -> torch.Tensor:
        """The current entropy temperature (a detached 0-dim tensor)."""
        return unwrap_parallel(self.temperature).alpha

    def set_alpha(self, alpha: float) -> None:
        unwrap_parallel(self.temperature).set_alpha(alpha)

    def alpha_loss(self, log_pi: torch.Tensor, target_entropy: float) -> torch.Tensor:
        """Per-sample temperature loss (gradients reach ``log_alpha`` only)."""
        return self.temperature(log_pi, target_entropy)
