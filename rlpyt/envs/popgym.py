"""POPGym's partially observable tasks (Morad et al. 2023) as rlpyt envs.

``make(id="popgym-RepeatPreviousEasy-v0")`` builds the Gymnasium env POPGym registers
(``pip install 'rlpyt[popgym]'``) and wraps it as ``rlpyt.envs.gym.make`` wraps any
Gymnasium env.  Many POPGym tasks observe a card or a symbol as a ``Discrete`` index
(``MultiDiscrete`` for several); an index fed to a network as a number says that suit 3
is "more" than suit 1, so those observations become one-hot float vectors
(``Discrete(4)`` -> ``Box(0, 1, (4,))``, a ``MultiDiscrete`` the concatenation of each
part's one-hot).  ``Box`` and other observations are left as POPGym gives them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlpyt.envs.gym import GymEnvWrapper, _unknown_id_message

__all__ = ["POPGYM_PREFIX", "OneHotObservation", "make"]

POPGYM_PREFIX = "popgym-"
"""The id prefix of POPGym's envs (``popgym-RepeatPreviousEasy-v0``)."""


class OneHotObservation(gym.ObservationWrapper):
    """``Discrete`` and ``MultiDiscrete`` observations as one-hot ``float32`` vectors."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        if isinstance(space, gym.spaces.Discrete):
            self._sizes = np.array([space.n])
            self._starts = np.array([space.start])
        elif isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
            self._sizes = np.asarray(space.nvec)
            self._starts = np.asarray(getattr(space, "start", np.zeros_like(space.nvec)))
        else:
            raise TypeError(f"OneHotObservation: {space} is not Discrete or a flat "
                            f"MultiDiscrete")
        self._offsets = np.concatenate([[0], np.cumsum(self._sizes)[:-1]])
        self.observation_space = gym.spaces.Box(0.0, 1.0, (int(self._sizes.sum()),),
                                                np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        index = np.asarray(observation).reshape(-1) - self._starts
        one_hot = np.zeros(self.observation_space.shape, np.float32)
        one_hot[self._offsets + index] = 1.0
        return one_hot


def make(*args: Any, info_example: dict | None = None, **kwargs: Any) -> GymEnvWrapper:
    """A POPGym env by its id (``make("popgym-RepeatFirstEasy-v0")`` or ``make(id=...)``),
    index observations one-hot (see the module doc); ``kwargs`` go to ``gymnasium.make``."""
    try:
        import popgym  # noqa: F401  (registers the popgym-* ids)
    except ImportError as e:
        raise ImportError("popgym-* env ids need POPGym: pip install 'rlpyt[popgym]'") from e
    try:
        env = gym.make(*args, **kwargs)
    except (gym.error.UnregisteredEnv, gym.error.DeprecatedEnv) as e:
        raise ValueError(_unknown_id_message(args[0] if args else kwargs.get("id"), e)) from e
    if isinstance(env.observation_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        env = OneHotObservation(env)
    return GymEnvWrapper(env, info_example=info_example)
