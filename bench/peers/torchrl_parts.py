"""TorchRL's pieces for the TorchRL peer rows: the Pong env and the actor-critic.

Run in the TorchRL venv (``bench/peers/``).  The env is TorchRL's ``MultiThreadedEnv``
(its EnvPool wrapper) over the same EnvPool Pong as the EnvPool rows: frame skip 4, 4
stacked 104x80 grayscale frames, episodic lives, 30 no-op starts.  The model is
``nets.AtariNet`` (rlpyt's ``AtariFfModel``) split the way TorchRL composes an
actor-critic: a shared trunk module, a ``ProbabilisticActor`` sampling a categorical
action from the policy head's logits, and a ``ValueOperator`` on the value head.

EnvPool 1.2.5 builds even its ``env_type="gym"`` envs with Gymnasium spaces, while
TorchRL 0.14.1's wrapper converts the specs under its ``gym`` backend, which has no
converter for Gymnasium's ``Discrete`` and ``Box``; importing this module registers
TorchRL's own converters for those two classes (``register_gym_spec_conversion``, the
extension point TorchRL's error message names).  Every process that builds the env
imports this module first (the env factory lives here), so collector workers do too.
"""

from __future__ import annotations

import gymnasium
import torch
from nets import AtariNet
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.envs import MultiThreadedEnv
from torchrl.envs.libs.gym import (
    convert_box_spec,
    convert_discrete_spec,
    register_gym_spec_conversion,
)
from torchrl.modules import ActorValueOperator, ProbabilisticActor, ValueOperator

register_gym_spec_conversion(gymnasium.spaces.Discrete)(convert_discrete_spec)
register_gym_spec_conversion(gymnasium.spaces.Box)(convert_box_spec)


def make_pong(num_envs: int, num_threads: int, reward_clip: bool = False,
              seed: int = 0) -> MultiThreadedEnv:
    """``num_envs`` EnvPool Pong envs stepped by ``num_threads`` C++ threads."""
    return MultiThreadedEnv(num_envs, "Pong-v5", create_env_kwargs=dict(
        num_threads=num_threads, img_height=104, img_width=80, episodic_life=True,
        use_fire_reset=False, reward_clip=reward_clip, seed=seed))


class _Trunk(nn.Module):
    """``AtariNet.features`` over any leading batch dims (TorchRL's value estimators
    call the critic on ``[B, T, C, H, W]``)."""

    def __init__(self, net: AtariNet):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[:-3]
        return self.net.features(obs.reshape(-1, *obs.shape[-3:])).reshape(*lead, -1)


def actor_critic(env: MultiThreadedEnv) -> ActorValueOperator:
    """The Atari CNN as TorchRL modules; ``.get_policy_operator()`` samples actions
    (key ``action``, with its log-probability), ``.get_value_operator()`` writes
    ``state_value``."""
    obs_shape = env.observation_spec["observation"].shape[1:]
    net = AtariNet(obs_shape, env.action_spec.space.n)
    trunk = TensorDictModule(_Trunk(net), in_keys=["observation"], out_keys=["hidden"])
    policy = ProbabilisticActor(
        TensorDictModule(net.pi, in_keys=["hidden"], out_keys=["logits"]),
        in_keys=["logits"], spec=env.full_action_spec["action"],
        distribution_class=torch.distributions.Categorical, return_log_prob=True)
    value = ValueOperator(net.value, in_keys=["hidden"])
    return ActorValueOperator(trunk, policy, value)
