"""The env interface samplers step: numpy in, numpy out, one env per object."""

from __future__ import annotations

import warnings
from typing import Any

from rlpyt.utils.collections import namedtuple

EnvStep = namedtuple(
    "EnvStep", ["observation", "reward", "done", "env_info"], module=__name__
)
EnvStep.__doc__ = """What ``Env.step`` returns.

``observation`` is the observation after the step (not yet reset when ``done``),
``reward`` a scalar, ``done`` a bool, ``env_info`` a namedtuple with a fixed
schema (its fields never change during the env's life, so that samplers can
preallocate buffers for it)."""

EnvSpaces = namedtuple("EnvSpaces", ["observation", "action"], module=__name__)
EnvSpaces.__doc__ = "The observation and action spaces of an env (``Env.spaces``)."


class Env:
    """Base class of rlpyt environments.

    Subclasses implement ``step`` and ``reset``, set ``self._observation_space`` and
    ``self._action_space`` (rlpyt spaces), and implement ``seed`` for reproducible
    episodes.  Observations and actions are numpy values of those spaces.
    """

    _observation_space: Any = None
    _action_space: Any = None

    def step(self, action: Any) -> EnvStep:
        """Advance one step with ``action``; returns ``EnvStep(observation, reward, done,
        env_info)``.  After ``done`` the caller must call ``reset()`` before stepping."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def reset(self) -> Any:
        """Start a new episode and return its first observation."""
        raise NotImplementedError(f"{type(self).__name__} does not implement reset()")

    def seed(self, seed: int | None) -> None:
        """Seed the env's randomness; the next ``reset()`` starts from that seed.

        The base class cannot seed anything: it warns that episodes of this env are
        not reproducible.
        """
        warnings.warn(
            f"{type(self).__name__} does not implement seed(); its episodes are not "
            "reproducible",
            stacklevel=2,
        )

    @property
    def action_space(self) -> Any:
        return self._action_space

    @property
    def observation_space(self) -> Any:
        return self._observation_space

    @property
    def spaces(self) -> EnvSpaces:
        return EnvSpaces(observation=self.observation_space, action=self.action_space)

    @property
    def horizon(self) -> int | None:
        """The most steps an episode can last (``None``: no limit known)."""
        return None

    def close(self) -> None:
        """Release resources (windows, emulators, files); the base class holds none."""
