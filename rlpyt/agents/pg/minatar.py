"""Policy-gradient agent whose default model is the MinAtar network."""

from __future__ import annotations

from rlpyt.agents.dqn.minatar import check_image_observation
from rlpyt.agents.pg.categorical import CategoricalPgAgentBase

__all__ = ["MinAtarPgAgent"]


class MinAtarPgAgent(CategoricalPgAgentBase):
    """Categorical agent with ``MinAtarPgModel`` (one 16-channel 3x3 conv, a 128-unit
    hidden layer, softmax policy and value heads) for A2C and PPO on MinAtar.
    Keywords as ``BaseAgent``."""

    def default_model_cls(self):
        from rlpyt.models.minatar import MinAtarPgModel

        return MinAtarPgModel

    def check_env_spaces(self, env_spaces) -> None:
        super().check_env_spaces(env_spaces)
        check_image_observation(self, env_spaces)
