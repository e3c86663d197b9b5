"""TD3 agent: DDPG's deterministic policy with twin critics and target-policy smoothing."""

from __future__ import annotations

import torch

from rlpyt.agents.qpg.base import TwinQ
from rlpyt.agents.qpg.ddpg_agent import DdpgAgent, _check_std
from rlpyt.distributions.gaussian import DistInfo, Gaussian

__all__ = ["Td3Agent"]


class Td3Agent(DdpgAgent):
    """``DdpgAgent`` with twin critics and a noisy target policy (Fujimoto et al. 2018).

    The target action is ``clip(mu_target(s') + clip(eps, ±target_noise_clip), -1, 1)``
    with ``eps ~ N(0, target_noise_std^2)`` (model units).  Before learning starts,
    exploration uses ``pretrain_std`` (0.5: with ``mu`` near 0 at initialisation, the
    clipped actions cover the whole box).

    Args:
        pretrain_std: exploration std before learning starts, or ``"uniform"`` (uniformly
            random actions) (default 0.5).
        target_noise_std: std of the target-policy smoothing noise (default 0.2).
        target_noise_clip: clip of that noise (default 0.5).
        initial_q2_model_state_dict: accepted for compatibility with classic launch
            scripts: the state dict of a second ``QofMuMlpModel`` critic, loaded into the
            second critic when ``QModelCls`` is a single-critic class (default None).
        ModelCls, QModelCls, model_kwargs, q_model_kwargs, initial_model_state_dict,
        initial_q_model_state_dict, action_std=0.1, action_noise_clip=None: as
            ``DdpgAgent``, except that ``QModelCls`` defaults to
            ``TwinQofMuMlpModel`` (a single-critic class such as ``QofMuMlpModel`` is
            instantiated twice).
    """

    twin_q = True

    def __init__(
        self,
        pretrain_std: float | str | None = 0.5,
        target_noise_std: float = 0.2,
        target_noise_clip: float = 0.5,
        initial_q2_model_state_dict=None,
        **kwargs,
    ):
        _check_std("Td3Agent", "target_noise_std", target_noise_std, allow_none=False)
        _check_std("Td3Agent", "target_noise_clip", target_noise_clip, allow_none=False)
        super().__init__(pretrain_std=pretrain_std, **kwargs)
        self.target_noise_std = target_noise_std
        self.target_noise_clip = target_noise_clip
        self.initial_q2_model_state_dict = initial_q2_model_state_dict

    def default_q_model_cls(self):
        from rlpyt.models.qpg.mlp import TwinQofMuMlpModel

        return TwinQofMuMlpModel

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        self.target_distribution = Gaussian(
            dim=int(env_spaces.action.shape[0]),
            std=self.target_noise_std,
            noise_clip=self.target_noise_clip,
            clip=1.0,
        )

    def load_initial_state_dicts(self) -> None:
        super().load_initial_state_dicts()
        if self.initial_q2_model_state_dict is None:
            return
        if not isinstance(self.q_model, TwinQ):  # a twin module's q2 is not a critic
            raise ValueError(
                "Td3Agent: initial_q2_model_state_dict needs a single-critic QModelCls "
                "(e.g. QofMuMlpModel, built twice); TwinQofMuMlpModel holds both "
                "critics, so pass both in initial_q_model_state_dict"
            )
        self.q_model.q2.load_state_dict(self.initial_q2_model_state_dict)
        self.target_q_model.load_state_dict(self.q_model.state_dict())

    @torch.no_grad()
    def target_action(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """The smoothed target action: target policy plus clipped noise, clipped to
        ``[-1, 1]``."""
        mu = super().target_action(observation, prev_action, prev_reward)
        return self.target_distribution.sample(DistInfo(mean=mu))
