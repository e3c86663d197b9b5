"""Q agents whose default models are the MinAtar network (``rlpyt.models.minatar``)."""

from __future__ import annotations

from rlpyt.agents.dqn.catdqn_agent import CatDqnAgent
from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.dqn.r2d1_agent import R2d1Agent

__all__ = ["MinAtarCatDqnAgent", "MinAtarDqnAgent", "MinAtarR2d1Agent", "check_image_observation"]


def check_image_observation(agent, env_spaces) -> None:
    """The MinAtar models need ``[C, H, W]`` observations."""
    shape = tuple(env_spaces.observation.shape)
    if len(shape) != 3:
        raise ValueError(
            f"{type(agent).__name__} needs image observations [C, H, W] (MinAtar envs), got "
            f"shape {shape}; use the generic agent for vector observations"
        )


class MinAtarDqnAgent(DqnAgent):
    """``DqnAgent`` whose default model is ``MinAtarDqnModel`` (one 16-channel 3x3 conv, a
    128-unit hidden layer; ``model_kwargs`` such as ``dict(dueling=True)`` go to it).
    Keywords as ``DqnAgent``."""

    def default_model_cls(self):
        from rlpyt.models.minatar import MinAtarDqnModel

        return MinAtarDqnModel

    def check_env_spaces(self, env_spaces) -> None:
        super().check_env_spaces(env_spaces)
        check_image_observation(self, env_spaces)


class MinAtarCatDqnAgent(CatDqnAgent):
    """``CatDqnAgent`` whose default model is ``MinAtarCatDqnModel`` (the MinAtar torso,
    then C51's head of ``n_atoms`` per action).  Keywords as ``CatDqnAgent``."""

    def default_model_cls(self):
        from rlpyt.models.minatar import MinAtarCatDqnModel

        return MinAtarCatDqnModel

    def check_env_spaces(self, env_spaces) -> None:
        super().check_env_spaces(env_spaces)
        check_image_observation(self, env_spaces)


class MinAtarR2d1Agent(R2d1Agent):
    """``R2d1Agent`` whose default model is ``MinAtarR2d1Model`` (the MinAtar torso, then
    an LSTM of 128).  Keywords as ``R2d1Agent``."""

    def default_model_cls(self):
        from rlpyt.models.minatar import MinAtarR2d1Model

        return MinAtarR2d1Model

    def check_env_spaces(self, env_spaces) -> None:
        super().check_env_spaces(env_spaces)
        check_image_observation(self, env_spaces)
