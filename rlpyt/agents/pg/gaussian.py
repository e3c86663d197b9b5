"""Policy-gradient agents for continuous (``FloatBox``) action spaces."""

from __future__ import annotations

from rlpyt.agents.base import AlternatingRecurrentAgentMixin
from rlpyt.agents.pg.base import BasePgAgent, RecurrentPgAgentMixin
from rlpyt.distributions.gaussian import DistInfoStd, Gaussian
from rlpyt.spaces.float_box import FloatBox

__all__ = [
    "AlternatingRecurrentGaussianPgAgent",
    "GaussianPgAgent",
    "GaussianPgAgentBase",
    "RecurrentGaussianPgAgent",
]


def check_continuous_actions(agent, env_spaces) -> None:
    action = getattr(env_spaces.action, "space", env_spaces.action)  # unwrap GymSpaceWrapper
    if not isinstance(action, FloatBox) or len(action.shape) != 1:
        raise TypeError(
            f"{type(agent).__name__} needs a continuous action space (FloatBox with shape "
            f"(dim,)), got {action!r}; for discrete (IntBox) actions use CategoricalPgAgent"
        )


class GaussianPgAgentBase(BasePgAgent):
    """Diagonal Gaussian policy with a learned log std.

    Keywords as ``BaseAgent``.  With ``ModelCls=None`` the model is
    ``GaussianPgMlpModel`` (64-64 tanh MLPs for mean and value, state-independent
    log std).  Sampled actions are not clipped; envs clip to their bounds.

    Args:
        eval_deterministic: in evaluation, act with the policy's mean instead of a
            sample (SB3's ``deterministic=True``; the RL Baselines3 Zoo's benchmark
            evaluates so).  Training always samples (default False).
    """

    def __init__(self, *args, eval_deterministic: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.eval_deterministic = bool(eval_deterministic)

    def default_model_cls(self):
        from rlpyt.models.pg.mlp import GaussianPgMlpModel

        return GaussianPgMlpModel

    def check_env_spaces(self, env_spaces):
        check_continuous_actions(self, env_spaces)

    def make_env_to_model_kwargs(self, env_spaces):
        return dict(observation_shape=env_spaces.observation.shape,
                    action_size=int(env_spaces.action.shape[0]))

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        self.distribution = Gaussian(dim=int(env_spaces.action.shape[0]))

    def make_dist_info(self, mu, log_std):
        return DistInfoStd(mean=mu, log_std=log_std)

    def select_action(self, dist_info):
        if self.eval_deterministic and self._mode == "eval":
            return self.distribution.mode(dist_info)
        return self.distribution.sample(dist_info)


class GaussianPgAgent(GaussianPgAgentBase):
    """Feed-forward Gaussian policy-gradient agent (works on any Box-action env)."""


class RecurrentGaussianPgAgent(RecurrentPgAgentMixin, GaussianPgAgentBase):
    """Recurrent Gaussian agent; default model ``GaussianPgLstmModel``."""

    def default_model_cls(self):
        from rlpyt.models.pg.mlp import GaussianPgLstmModel

        return GaussianPgLstmModel


class AlternatingRecurrentGaussianPgAgent(AlternatingRecurrentAgentMixin, RecurrentGaussianPgAgent):
    """Recurrent Gaussian agent for the alternating samplers (two env groups)."""
