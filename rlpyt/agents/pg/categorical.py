"""Policy-gradient agents for discrete (``IntBox``) action spaces."""

from __future__ import annotations

from rlpyt.agents.base import AlternatingRecurrentAgentMixin
from rlpyt.agents.pg.base import BasePgAgent, RecurrentPgAgentMixin
from rlpyt.distributions.categorical import Categorical, DistInfo
from rlpyt.spaces.int_box import IntBox

__all__ = [
    "AlternatingRecurrentCategoricalPgAgent",
    "CategoricalPgAgent",
    "CategoricalPgAgentBase",
    "RecurrentCategoricalPgAgent",
]


def check_discrete_actions(agent, env_spaces, continuous_alternative: str) -> None:
    action = getattr(env_spaces.action, "space", env_spaces.action)  # unwrap GymSpaceWrapper
    if not isinstance(action, IntBox) or len(action.shape) != 0:
        raise TypeError(
            f"{type(agent).__name__} needs a single discrete action space (IntBox with shape ()), "
            f"got {action!r}; for continuous (FloatBox) actions use {continuous_alternative}"
        )


class CategoricalPgAgentBase(BasePgAgent):
    """Softmax policy over ``env_spaces.action.n`` actions.

    Keywords as ``BaseAgent``.  With ``ModelCls=None`` the model is
    ``CategoricalPgMlpModel`` (separate 64-64 tanh MLPs for policy and value).
    """

    def default_model_cls(self):
        from rlpyt.models.pg.mlp import CategoricalPgMlpModel

        return CategoricalPgMlpModel

    def check_env_spaces(self, env_spaces):
        check_discrete_actions(self, env_spaces, "GaussianPgAgent")

    def make_env_to_model_kwargs(self, env_spaces):
        return dict(observation_shape=env_spaces.observation.shape,
                    action_size=int(env_spaces.action.n))

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        self.distribution = Categorical(dim=int(env_spaces.action.n))

    def make_dist_info(self, pi):
        return DistInfo(prob=pi)


class CategoricalPgAgent(CategoricalPgAgentBase):
    """Feed-forward categorical policy-gradient agent (works on any Discrete-action env)."""


class RecurrentCategoricalPgAgent(RecurrentPgAgentMixin, CategoricalPgAgentBase):
    """Recurrent categorical agent; default model ``CategoricalPgLstmModel``."""

    def default_model_cls(self):
        from rlpyt.models.pg.mlp import CategoricalPgLstmModel

        return CategoricalPgLstmModel


class AlternatingRecurrentCategoricalPgAgent(
    AlternatingRecurrentAgentMixin, RecurrentCategoricalPgAgent
):
    """Recurrent categorical agent for the alternating samplers (two env groups)."""
