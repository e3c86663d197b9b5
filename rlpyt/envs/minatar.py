"""MinAtar games (Young & Tian 2019, the ``minatar`` package) as rlpyt envs.

MinAtar plays five Atari analogues (Asterix, Breakout, Freeway, Seaquest, Space
Invaders) on a 10x10 grid of binary object channels: Atari-like decisions at a cost
a CPU trains on.  ``MinAtarEnv`` wraps the package's own ``minatar.Environment`` and
so plays exactly its game, with the paper's settings as defaults:

* **observations** ``bool [C, 10, 10]`` (channels first), the package's ``[10, 10, C]``
  bool state transposed (C: 4 Asterix, 4 Breakout, 7 Freeway, 10 Seaquest, 6 Space
  Invaders).  Bool, not uint8: the replay rules of DQN and R2D1 store ``uint8`` images
  of 3 or more dims as stacks of frames shared between steps (Atari), which these
  channels are not; bool observations are kept whole, at one byte per cell;
* **sticky actions**: with probability ``sticky_action_prob=0.1`` the previous action
  repeats, drawn by the package from the env's random stream (the paper's Section 2);
* **difficulty ramping** on (``difficulty_ramping=True``), as in the paper's runs;
* **actions**: all 6 (``n l u r d f``) by default, as the paper's experiments (its
  ``examples/dqn.py`` and ``AC_lambda.py`` use ``num_actions() == 6``);
  ``minimal_action_set=True`` keeps only the game's own actions (the package's
  ``minimal_action_set()``, as ``MinAtar/<Game>-v1`` of its Gymnasium registration);
* **ends**: ``done`` when the game terminates (Freeway ends itself after 2500 frames,
  a real termination, ``timeout=False``).  ``max_episode_steps`` (default ``None``, the
  paper's: no limit) truncates longer episodes with ``env_info.timeout=True``, the
  semantics of ``GymEnvWrapper``: ``timeout`` is True only when the limit ends an
  episode that the game itself did not end on that step.

``env_info`` is ``EnvInfo(timeout)``.  ``seed(seed)`` seeds the next ``reset()`` (the
package's ``Environment.seed``: one ``RandomState`` drives the game and the sticky
actions), so a seeded ``MinAtarEnv`` and a seeded ``minatar.Environment`` given the
same actions produce the same observations, rewards and terminals.

Env ids ``MinAtar/<Game>`` (``MinAtar/Breakout``, ``MinAtar/SpaceInvaders``, ...) are
understood by ``rlpyt.envs.gym.make`` and so by ``rlpyt train --env``.  The package is
the ``minatar`` extra: ``pip install 'rlpyt[minatar]'``.
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from rlpyt.envs.base import Env, EnvStep
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import namedtuple

__all__ = ["GAMES", "EnvInfo", "MinAtarEnv", "make", "parse_env_id"]

# Env id name -> the package's module name.
GAMES = {
    "Asterix": "asterix",
    "Breakout": "breakout",
    "Freeway": "freeway",
    "Seaquest": "seaquest",
    "SpaceInvaders": "space_invaders",
}
ID_PREFIX = "MinAtar/"

EnvInfo = namedtuple("EnvInfo", ["timeout"], module=__name__)


def _import_minatar():
    try:
        import minatar
    except ImportError as e:
        raise ImportError("MinAtar envs need the minatar package: pip install 'rlpyt[minatar]'") \
            from e
    return minatar


def _game_module(game: str) -> str:
    """``"Breakout"``, ``"breakout"`` or ``"space_invaders"`` -> the package's module name."""
    if game in GAMES:
        return GAMES[game]
    if game in GAMES.values():
        return game
    names = list(GAMES)
    close = difflib.get_close_matches(game, names, n=3, cutoff=0.5)
    hint = f"; did you mean {close}?" if close else ""
    raise ValueError(f"MinAtarEnv: unknown game={game!r}; valid games: {names}{hint}")


class MinAtarEnv(Env):
    """One MinAtar game (see the module doc for observations, actions and ends).

    Args:
        game: ``"Asterix"``, ``"Breakout"``, ``"Freeway"``, ``"Seaquest"`` or
            ``"SpaceInvaders"`` (the package's ``"space_invaders"`` spelling works too).
        sticky_action_prob: probability that the previous action repeats instead of the
            chosen one (default 0.1, the paper's).
        difficulty_ramping: let the games speed up over an episode (default True, the
            paper's).
        minimal_action_set: act with the game's own actions only instead of all 6
            (default False: the paper's experiments use all 6).
        max_episode_steps: truncate episodes after this many steps with
            ``env_info.timeout=True`` (default ``None``: no limit, as the paper).
    """

    def __init__(
        self,
        game: str = "Breakout",
        sticky_action_prob: float = 0.1,
        difficulty_ramping: bool = True,
        minimal_action_set: bool = False,
        max_episode_steps: int | None = None,
    ) -> None:
        if not 0.0 <= float(sticky_action_prob) <= 1.0:
            raise ValueError(
                f"MinAtarEnv: sticky_action_prob={sticky_action_prob!r} must lie in [0, 1]"
            )
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int)
            or max_episode_steps < 1
        ):
            raise ValueError(
                f"MinAtarEnv: max_episode_steps={max_episode_steps!r} must be a positive int "
                "or None"
            )
        minatar = _import_minatar()
        self.game = _game_module(game)
        self._env = minatar.Environment(
            self.game, sticky_action_prob=float(sticky_action_prob),
            difficulty_ramping=bool(difficulty_ramping),
        )
        n_actions = self._env.num_actions()
        if minimal_action_set:
            self._action_set = np.asarray(self._env.minimal_action_set(), dtype=np.int64)
        else:
            self._action_set = np.arange(n_actions, dtype=np.int64)
        height, width, channels = self._env.state_shape()
        self._action_space = IntBox(low=0, high=len(self._action_set))
        self._observation_space = IntBox(low=0, high=2, shape=(channels, height, width),
                                         dtype="bool")
        self._horizon = max_episode_steps
        self._step_limit = float("inf") if max_episode_steps is None else max_episode_steps
        self._steps = 0
        self._pending_seed: int | None = None

    @property
    def action_set(self) -> np.ndarray:
        """The package action index of each of this env's actions."""
        return self._action_set

    def _observation(self) -> np.ndarray:
        # The bool [H, W, C] state as [C, H, W] (a fresh array: samplers keep it).
        return np.ascontiguousarray(self._env.state().transpose(2, 0, 1), dtype=bool)

    def step(self, action: Any) -> EnvStep:
        index = int(action)
        if not 0 <= index < len(self._action_set):
            raise ValueError(f"{self!r}.step: action={action!r} is not in [0, "
                             f"{len(self._action_set)})")
        reward, terminal = self._env.act(int(self._action_set[index]))
        self._steps += 1
        terminal = bool(terminal)
        truncated = self._steps >= self._step_limit
        env_info = EnvInfo(timeout=truncated and not terminal)
        return EnvStep(self._observation(), np.float32(reward), terminal or truncated, env_info)

    def reset(self) -> np.ndarray:
        if self._pending_seed is not None:
            self._env.seed(self._pending_seed)
            self._pending_seed = None
        self._env.reset()
        self._steps = 0
        return self._observation()

    def seed(self, seed: int | None) -> None:
        """Seed the next ``reset()``: the game and the sticky actions (one ``RandomState``,
        as ``minatar.Environment.seed``); ``None`` keeps the current stream."""
        self._pending_seed = None if seed is None else int(seed)

    @property
    def horizon(self) -> int | None:
        return self._horizon

    def __repr__(self) -> str:
        name = next(k for k, v in GAMES.items() if v == self.game)
        return f"MinAtarEnv({name})"


def parse_env_id(env_id: str) -> str:
    """``"MinAtar/Breakout"`` -> ``"Breakout"``; a clear error for an unknown game."""
    if not env_id.startswith(ID_PREFIX):
        raise ValueError(f"parse_env_id: {env_id!r} is not a MinAtar id ({ID_PREFIX}<Game>)")
    game = env_id[len(ID_PREFIX):]
    if game not in GAMES:
        valid = [ID_PREFIX + g for g in GAMES]
        close = difflib.get_close_matches(env_id, valid, n=3, cutoff=0.5)
        hint = f"; did you mean {close}?" if close else ""
        raise ValueError(f"make: unknown MinAtar env id {env_id!r}; valid ids: {valid}{hint}")
    return game


def make(id: str, **kwargs: Any) -> MinAtarEnv:
    """``MinAtarEnv`` from an env id ``"MinAtar/<Game>"``; ``kwargs`` as ``MinAtarEnv``."""
    return MinAtarEnv(parse_env_id(id), **kwargs)
